package fakehost_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// escapesFound runs the validator's container checks on root and returns
// cgroup-integrity's escapes in Escape.String form, and every failed
// finding of the other scan-based checks.
func escapesFound(t *testing.T, root string) (escapes, others []string) {
	t.Helper()
	for _, c := range checks.All(facts.New(facts.Spec{Root: root}), checks.Policy{}) {
		id := c.Meta().ID
		if id != "cgroup-integrity" && id != "runtime-ghosts" && id != "stuck-runc-init" {
			continue
		}
		fs, err := c.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, f := range fs {
			if f.Status != validator.Fail {
				continue
			}
			if id != "cgroup-integrity" {
				others = append(others, id+": "+f.Detail)
				continue
			}
			e := f.Evidence.(checks.Escape)
			escapes = append(escapes, strings.Join([]string{strconv.Itoa(e.PID), e.Want.Hierarchy.Name, e.Want.Rel, e.Actual}, " "))
		}
	}
	slices.Sort(escapes)
	return escapes, others
}

func TestGenerateIsWhatTheValidatorReads(t *testing.T) {
	testCases := []struct {
		name    string
		spec    fakehost.Spec
		escaped int // processes
	}{
		{"clean", fakehost.Spec{Containers: 6, ProcsPerContainer: 5, HostProcs: 40, RuntimeRoot: "/run/runc"}, 0},
		{"quarter escaped", fakehost.Spec{Containers: 6, ProcsPerContainer: 5, HostProcs: 40, EscapedShare: 0.25, Seed: 7, RuntimeRoot: "/run/runc"}, 8},
		{"all escaped", fakehost.Spec{Containers: 3, ProcsPerContainer: 2, HostProcs: 3, EscapedShare: 1, RuntimeRoot: "/run/containerd/runc"}, 6},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := fakehost.Generate(filepath.Join(t.TempDir(), "cell"), tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.EscapedPIDs) != tc.escaped {
				t.Fatalf("escaped pids = %v, want %d of them", w.EscapedPIDs, tc.escaped)
			}
			// Six hierarchies move per escaped process (systemd's).
			if len(w.Escapes) != 6*tc.escaped {
				t.Fatalf("got %d escapes for %d pids, want 6 each", len(w.Escapes), tc.escaped)
			}
			ents, err := os.ReadDir(filepath.Join(w.Root, "proc"))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ents) - 1; got != tc.spec.Processes() { // minus proc/stat
				t.Fatalf("%d pid dirs, want %d", got, tc.spec.Processes())
			}
			var want []string
			for _, e := range w.Escapes {
				want = append(want, e.String())
			}
			got, others := escapesFound(t, w.Root)
			if !slices.Equal(got, want) {
				t.Fatalf("validator found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if len(others) > 0 {
				t.Fatalf("the cell should trip nothing else:\n%s", strings.Join(others, "\n"))
			}
			if err := w.Heal(); err != nil {
				t.Fatal(err)
			}
			if got, others := escapesFound(t, w.Root); len(got)+len(others) > 0 {
				t.Fatalf("healed cell still fails:\n%s\n%s", strings.Join(got, "\n"), strings.Join(others, "\n"))
			}
		})
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	s := fakehost.Spec{Containers: 10, ProcsPerContainer: 10, HostProcs: 10, EscapedShare: 0.1, Seed: 42, RuntimeRoot: "/run/runc"}
	a, err := fakehost.Generate(filepath.Join(t.TempDir(), "a"), s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fakehost.Generate(filepath.Join(t.TempDir(), "b"), s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.EscapedPIDs, b.EscapedPIDs) {
		t.Fatalf("same seed, different escapes: %v vs %v", a.EscapedPIDs, b.EscapedPIDs)
	}
	s.Seed = 43
	c, err := fakehost.Generate(filepath.Join(t.TempDir(), "c"), s)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.EscapedPIDs, c.EscapedPIDs) {
		t.Fatalf("another seed picked the same escapes %v", a.EscapedPIDs)
	}
}

func TestGenerateRefusesBadSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []fakehost.Spec{
		{Containers: 1, ProcsPerContainer: 0, HostProcs: 1, RuntimeRoot: "/run/runc"},
		{Containers: 1, ProcsPerContainer: 1, HostProcs: 1, EscapedShare: 1.5, RuntimeRoot: "/run/runc"},
		{Containers: 1, ProcsPerContainer: 1, HostProcs: 1, RuntimeRoot: "run/runc"},
	} {
		if _, err := fakehost.Generate(filepath.Join(dir, "x"), s); err == nil {
			t.Errorf("spec %+v: no error", s)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "full"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fakehost.Generate(dir, fakehost.Cell(1)); err == nil {
		t.Error("generated into a non-empty directory")
	}
}

// The limits each state records (cellstate.go) are in force in the
// container's cgroups, as runc's fs setters leave them: a clean cell trips
// no limits-intact finding, and the benchmark measures a healthy cell.
func TestGenerateHasTheRecordedLimitsInForce(t *testing.T) {
	spec := fakehost.Spec{Containers: 4, ProcsPerContainer: 3, HostProcs: 10, RuntimeRoot: "/run/runc"}
	w, err := fakehost.Generate(filepath.Join(t.TempDir(), "cell"), spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks.All(facts.New(facts.Spec{Root: w.Root}), checks.Policy{}) {
		if c.Meta().ID != "limits-intact" {
			continue
		}
		fs, err := c.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, f := range fs {
			details = append(details, string(f.Status)+": "+f.Detail)
		}
		want := "pass: 12 container processes with recorded limits checked (4 containers running)"
		if len(fs) != 1 || details[0] != want {
			t.Fatalf("limits-intact on a clean cell:\n%s\nwant only\n%s", strings.Join(details, "\n"), want)
		}
		return
	}
	t.Fatal("no limits-intact check")
}
