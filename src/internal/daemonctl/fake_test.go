package daemonctl

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// fakeSystemd stands in for systemd in the planner tests: it "loads" a
// cellguard unit from the file under root at each Reload, as systemd reads
// it (refusing KillMode=none when told to), and reports the runtime state
// the test sets. It decides nothing of daemonctl's.
type fakeSystemd struct {
	root         string
	refuseNone   bool                         // read KillMode=none back as control-group (a systemd without it)
	refuseKill   bool                         // read every KillMode back as control-group (a systemd that takes neither)
	version      string                       // Version's answer; "" is bookworm's 252
	boolDelegate bool                         // read Delegate= as a boolean, as systemd before 236 does
	active       map[string]string            // unit: ActiveState; missing means inactive
	procs        map[string][]systemd.Process // unit: processes left in its cgroup
	loaded       map[string]*systemd.Unit     // what the last Reload read
	texts        map[string]string            // the files it read then
	reloads      int
	versionReads int
	resetFailed  []string
}

func newFakeSystemd(root string) *fakeSystemd {
	return &fakeSystemd{root: root, active: map[string]string{}, procs: map[string][]systemd.Process{},
		loaded: map[string]*systemd.Unit{}}
}

func (f *fakeSystemd) Version(context.Context) (string, error) {
	f.versionReads++
	if f.version != "" {
		return f.version, nil
	}
	return "252.39-1~deb12u2", nil
}

func (f *fakeSystemd) Unit(_ context.Context, name string) (*systemd.Unit, error) {
	u := systemd.Unit{Name: name, LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	if l, ok := f.loaded[name]; ok {
		u = *l
		// systemd compares the file's mtime with what it loaded.
		b, err := os.ReadFile(filepath.Join(f.root, u.FragmentPath))
		u.NeedDaemonReload = err != nil || f.texts[name] != string(b)
	}
	if s, ok := f.active[name]; ok {
		u.ActiveState, u.SubState = s, "running"
		if s == "failed" {
			u.SubState = "failed"
		} else {
			u.MainPID = 4242
		}
	}
	return &u, nil
}

func (f *fakeSystemd) UnitProcesses(_ context.Context, unit string) ([]systemd.Process, error) {
	return f.procs[unit], nil
}

func (f *fakeSystemd) UnitByPID(context.Context, int) (string, error) { return "runit.service", nil }

func (f *fakeSystemd) Reload(context.Context) error {
	f.reloads++
	f.texts = map[string]string{}
	f.loaded = map[string]*systemd.Unit{}
	for _, dir := range []string{PersistentUnitDir, RuntimeUnitDir} {
		paths, _ := filepath.Glob(filepath.Join(f.root, dir, unitfile.Prefix+"*.service"))
		for _, hp := range paths {
			b, err := os.ReadFile(hp)
			if err != nil {
				continue
			}
			name := filepath.Base(hp)
			f.texts[name] = string(b)
			u := &systemd.Unit{Name: name, LoadState: "loaded", ActiveState: "inactive", SubState: "dead",
				FragmentPath: filepath.Join(dir, name)}
			// Drop-ins in <unit>.d/ are read after the file, in name
			// order, and their settings win (systemd.unit(5)).
			dropIns, _ := filepath.Glob(filepath.Join(f.root, dir, name+".d", "*.conf"))
			for _, dp := range dropIns {
				if db, err := os.ReadFile(dp); err == nil {
					b = append(append(b, '\n'), db...)
					u.DropInPaths = append(u.DropInPaths, strings.TrimPrefix(dp, f.root))
				}
			}
			u.KillMode, _, _ = unitfile.Setting(b, "Service", "KillMode")
			if u.KillMode == unitfile.KillModeNone && f.refuseNone || f.refuseKill {
				u.KillMode = "control-group"
			}
			if d, ok, _ := unitfile.Setting(b, "Service", "Delegate"); ok && (f.boolDelegate || d == "no") {
				u.Delegate = d == unitfile.DelegateV2 // a list is no boolean: Delegate=no
			} else if ok {
				u.Delegate = true
				u.DelegateControllers = unitfile.Controllers(d)
				sort.Strings(u.DelegateControllers)
			}
			f.loaded[name] = u
		}
	}
	return nil
}

func (f *fakeSystemd) Start(context.Context, string) (systemd.JobResult, error) { return "done", nil }
func (f *fakeSystemd) Stop(context.Context, string) (systemd.JobResult, error)  { return "done", nil }
func (f *fakeSystemd) ResetFailed(_ context.Context, unit string) error {
	f.resetFailed = append(f.resetFailed, unit)
	return nil
}
func (f *fakeSystemd) RealizeCgroups(context.Context, string) error { return nil }
func (f *fakeSystemd) Close()                                       {}

// renderedUnit is the unit Install writes for daemon (a /bin/true start).
func renderedUnit(t *testing.T, daemon string) []byte {
	t.Helper()
	b, err := unitfile.Render(unitfile.Spec{Name: daemon, Start: []string{"/bin/true"}, Type: unitfile.TypeExec,
		Delegate: unitfile.DelegateV1, KillMode: unitfile.KillModeNone})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// supervisorDropIn is the drop-in protect-supervisor writes for runit.service.
func supervisorDropIn(t *testing.T) []byte {
	t.Helper()
	b, err := unitfile.RenderSupervisorDropIn("runit.service", unitfile.DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
