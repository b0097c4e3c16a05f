package checks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// A judge whose facts were not read could not judge: an error naming the
// fact, never a pass or a skip.
func TestJudgeWithoutItsFactsCouldNotJudge(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	host := facts.New(facts.Spec{Root: h.Root})
	for _, c := range All(host, Policy{}) {
		b, ok := c.(bound)
		if !ok {
			continue // the snapshot's checks read it through the Source
		}
		fs, err := b.Judge(host)
		if !errors.Is(err, facts.ErrNotRead) || len(fs) != 0 {
			t.Errorf("%s judged facts it did not wait for: %v %+v", c.Meta().ID, err, fs)
		}
	}
}

// A fact that could not be read makes the check's result an error that
// names it, through the validator as validate runs it. A hybrid host: there
// the running version decides whether systemd boots (on v2 it does not).
func TestUnreadableFactIsCouldNotJudge(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.Mkdir("/run/systemd/system")
	host := facts.New(facts.Spec{Root: h.Root, Running: fakeSystemd{err: errors.New("dbus: connection refused")}, Installed: fakeSystemd{v: 252}})
	var cs []validator.Check
	for _, c := range All(host, Policy{}) {
		if c.Meta().ID == "systemd-cgroup-mode" {
			cs = append(cs, c)
		}
	}
	rep := validator.Run(context.Background(), cs, validator.Options{Phase: validator.PreStart})
	r := rep.Results[0]
	if r.Status != validator.Error || !strings.Contains(r.Error, "read running systemd version: dbus: connection refused") || !rep.Blocked {
		t.Fatalf("want an error naming the running version's read, blocking pre-start: %+v", r)
	}
}

// Every check declares the facts it judges; the run reads their union.
func TestNeedsNameEveryKindOnce(t *testing.T) {
	got := Needs(All(nil, Policy{}))
	want := []facts.Kind{facts.Snapshot, facts.Runtimes, facts.Systemd, facts.Units, facts.Sysctls, facts.Netns, facts.Limits, facts.Topology}
	if len(got) != len(want) {
		t.Fatalf("needs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("needs %v, want %v", got, want)
		}
	}
}
