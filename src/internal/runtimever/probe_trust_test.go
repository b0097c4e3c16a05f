package runtimever

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestProbeRunsOnlyTrustedBinaries: cellguard runs each runtime binary it
// finds as root (`runc --version`), so one that someone other than root
// could change, or replace through its directory, would run their code as
// root. Such a binary is refused before any exec, naming the path at
// fault; the fake binary leaves a mark when run, and no mark is left.
func TestProbeRunsOnlyTrustedBinaries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, bin string)
		fault string // "" means probed; "bin" or "dir" is the path refused
		root  bool
	}{
		{name: "root's 0755 binary in root's 0755 dir"},
		{name: "world-writable binary", fault: "bin", plant: func(t *testing.T, bin string) { must(t, os.Chmod(bin, 0o757)) }},
		{name: "group-writable binary", fault: "bin", plant: func(t *testing.T, bin string) { must(t, os.Chmod(bin, 0o775)) }},
		{name: "group-writable directory", fault: "dir", plant: func(t *testing.T, bin string) { must(t, os.Chmod(filepath.Dir(bin), 0o775)) }},
		{name: "binary owned by another user", fault: "bin", root: true, plant: func(t *testing.T, bin string) { must(t, os.Chown(bin, 65534, 65534)) }},
		{name: "directory owned by another user", fault: "dir", root: true, plant: func(t *testing.T, bin string) { must(t, os.Chown(filepath.Dir(bin), 65534, 65534)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				testkit.RequireRoot(t, "chown a binary to another user")
			}
			root := t.TempDir()
			mark := filepath.Join(root, "ran")
			fakeBinary(t, root, "/usr/sbin/runc", "runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\nspec: 1.0.2-dev\n", "")
			bin := filepath.Join(root, "usr/sbin/runc")
			firstRun(t, bin, "touch "+mark)
			if tc.plant != nil {
				tc.plant(t, bin)
			}
			found, _ := Locator{Root: root, Path: []string{"/usr/sbin"}}.Locate(Runc)
			if len(found) != 1 {
				t.Fatalf("located %v", found)
			}
			for _, p := range []Prober{{}, {Cache: &ProbeCache{}}} {
				info, err := p.Probe(context.Background(), found[0])
				_, ran := os.Stat(mark)
				if tc.fault == "" {
					if err != nil || info.Version.Raw != "1.1.12" || ran != nil {
						t.Fatalf("probe of a trusted binary: %+v %v (ran: %v)", info, err, ran)
					}
					continue
				}
				fault := map[string]string{"bin": bin, "dir": filepath.Dir(bin)}[tc.fault]
				if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), fault+" ") {
					t.Fatalf("probe = %v\nwant a refusal naming %s", err, fault)
				}
				if ran == nil {
					t.Fatal("the untrusted binary was run")
				}
				t.Logf("refused: %v", err)
			}
		})
	}
}

// TestProbeExecsTheBinaryItChecked: trust holds for the binary actually
// run. Probe execs runc twice (--version, then features); the path is a
// symlink that is swapped after the check, here by the checked binary's
// own first run, so no timing is involved, and the second exec must still
// run the binary that was checked, never what the path names by then.
func TestProbeExecsTheBinaryItChecked(t *testing.T) {
	root := t.TempDir()
	mark := filepath.Join(root, "swapped-in-ran")
	features := `{"annotations":{"org.opencontainers.runc.version":"1.1.12"}}`
	fakeBinary(t, root, "/real/runc", "runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\n", features)
	checked := filepath.Join(root, "real/runc")
	swappedIn := filepath.Join(root, "real/other")
	testkit.WriteExec(t, swappedIn, "#!/bin/sh\ntouch "+mark+"\necho 'runc version 6.6.6'\n")
	link := filepath.Join(root, "usr/sbin/runc")
	must(t, os.MkdirAll(filepath.Dir(link), 0o755))
	firstRun(t, checked, "ln -sfn "+swappedIn+" "+link)
	for _, p := range []Prober{{}, {Cache: &ProbeCache{}}} {
		_ = os.Remove(link)
		_ = os.Remove(mark)
		must(t, os.Symlink(checked, link))
		info, err := p.Probe(context.Background(), Binary{Component: Runc, Path: "/usr/sbin/runc", HostPath: link})
		if _, ran := os.Stat(mark); ran == nil {
			t.Fatalf("an exec after the check ran what the path named by then (%s), not the binary checked (%s)", swappedIn, checked)
		}
		if err != nil || info.Version.Raw != "1.1.12" || !info.Features {
			t.Fatalf("probe: %+v %v, want 1.1.12 with runc features, both from the checked binary", info, err)
		}
	}
}

// TestProbeRefusesALinkAnotherUserOwns: a symlink in a sticky directory
// can be replaced by its owner whenever they like, so one owned by anyone
// but root is refused before any exec, naming the link.
func TestProbeRefusesALinkAnotherUserOwns(t *testing.T) {
	root := t.TempDir()
	mark := filepath.Join(root, "ran")
	fakeBinary(t, root, "/real/runc", "runc version 1.1.12\n", "")
	bin := filepath.Join(root, "real/runc")
	firstRun(t, bin, "touch "+mark)
	link := testkit.ForeignLink(t, bin)
	_, err := Prober{}.Probe(context.Background(), Binary{Component: Runc, Path: link, HostPath: link})
	if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), "symlink "+link+" ") || !strings.Contains(err.Error(), "uid 64999") {
		t.Fatalf("probe through a link uid 64999 owns = %v\nwant a refusal naming the link and its owner", err)
	}
	if _, ran := os.Stat(mark); ran == nil {
		t.Fatal("the binary behind another user's link was run")
	}
}

// firstRun makes the fake binary at bin run line first, each time it runs.
func firstRun(t *testing.T, bin, line string) {
	t.Helper()
	script, err := os.ReadFile(bin)
	must(t, err)
	testkit.WriteExec(t, bin, strings.Replace(string(script), "#!/bin/sh\n", "#!/bin/sh\n"+line+"\n", 1))
}
