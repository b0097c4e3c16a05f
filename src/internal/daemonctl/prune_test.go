package daemonctl

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// On a root where systemd is not init nothing can run under a unit, so
// Prune removes every file of cellguard's the manifest no longer asks for
// and nothing else: not a kept daemon's unit, not a file without the
// marker, not a temp file a writer may still be renaming. The systemd
// side (running units kept, processes left in a stopped unit's cgroup,
// the supervisor) is proved on a real systemd in
// src/tests/integration (TestPruneConverges, TestSupervisorDropInDecision).
func TestPruneWithoutSystemd(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	unit := func(name string) []byte {
		d, _ := unitfile.DaemonOf(name)
		return renderedUnit(t, d)
	}
	drop := supervisorDropIn(t)
	files := map[string][]byte{
		"etc/systemd/system/cellguard-garden.service":                          unit("cellguard-garden.service"), // configured: kept
		"etc/systemd/system/cellguard-old.service":                             unit("cellguard-old.service"),    // removed
		"etc/systemd/system/cellguard-foreign.service":                         []byte("[Service]\nExecStart=/bin/true\n"),
		"etc/systemd/system/runit.service.d/50-cellguard-delegate.conf":        drop,
		"etc/systemd/system/other.service.d/50-cellguard-delegate.conf":        []byte("[Service]\nDelegate=yes\n"),
		"etc/systemd/system/.cellguard-garden.service.tmp-123":                 []byte("half"),
		"etc/systemd/system/.cellguard-new.service.tmp-456":                    []byte("in flight"),
		"etc/systemd/system/runit.service.d/.50-cellguard-delegate.conf.tmp-9": []byte("half"),
		"etc/systemd/system/.unrelated.service.tmp-1":                          []byte("not ours"),
	}
	for p, b := range files {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mtime := now.Add(-time.Hour)
		if filepath.Base(p) == ".cellguard-new.service.tmp-456" {
			mtime = now
		}
		if err := os.Chtimes(hp, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	m := &Manager{Logger: lagertest.NewTestLogger("prune"), Root: root}
	if m.HasSystemd() {
		t.Fatal("fixture root has systemd")
	}
	res, err := m.Prune(context.Background(), PruneOptions{Keep: []string{"garden"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, it := range res.Items {
		if it.Action != Removed || it.Why == "" {
			t.Errorf("item %+v", it)
		}
		removed = append(removed, it.Path)
	}
	sort.Strings(removed)
	want := []string{
		"/etc/systemd/system/.cellguard-garden.service.tmp-123",
		"/etc/systemd/system/cellguard-old.service",
		"/etc/systemd/system/runit.service.d/.50-cellguard-delegate.conf.tmp-9",
		"/etc/systemd/system/runit.service.d/50-cellguard-delegate.conf",
	}
	if !reflect.DeepEqual(removed, want) {
		t.Fatalf("removed\n%q\nwant\n%q", removed, want)
	}
	for p := range files {
		_, err := os.Stat(filepath.Join(root, p))
		gone := false
		for _, w := range want {
			gone = gone || w == "/"+p
		}
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, stat %v", p, gone, err)
		}
	}
	// A second run has nothing left to do.
	res, err = m.Prune(context.Background(), PruneOptions{Keep: []string{"garden"}, Now: now})
	if err != nil || len(res.Items) != 0 {
		t.Fatalf("second run: %+v %v", res.Items, err)
	}
	// Protection on keeps the drop-in.
	hp := filepath.Join(root, "etc/systemd/system/runit.service.d/50-cellguard-delegate.conf")
	if err := os.WriteFile(hp, drop, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Prune(context.Background(), PruneOptions{Keep: []string{"garden"}, KeepSupervisor: true, Now: now}); err != nil || len(res.Items) != 0 {
		t.Fatalf("protect on: %+v %v", res.Items, err)
	}
}

// The drop-ins of cellguard.delegate_units (main's `unit delegate`) share
// the supervisor's file name; each is kept by its own property, so
// supervisor.protect: false never takes concourse.service's delegation,
// and a unit dropped from delegate_units loses its drop-in although the
// supervisor keeps its own.
func TestPruneTellsDelegatedUnitsFromTheSupervisor(t *testing.T) {
	sup, err := unitfile.RenderSupervisorDropIn("runit.service", unitfile.DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	del, err := unitfile.RenderDelegateDropIn("concourse.service", unitfile.DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	if unitfile.IsDelegateUnitsDropIn(sup) || !unitfile.IsDelegateUnitsDropIn(del) {
		t.Fatalf("IsDelegateUnitsDropIn: supervisor %v, delegated %v", unitfile.IsDelegateUnitsDropIn(sup), unitfile.IsDelegateUnitsDropIn(del))
	}
	const supPath = "/etc/systemd/system/runit.service.d/50-cellguard-delegate.conf"
	const delPath = "/etc/systemd/system/concourse.service.d/50-cellguard-delegate.conf"
	testCases := []struct {
		name string
		opts PruneOptions
		want map[string]string // path: kind removed
	}{
		{"protect off, concourse delegated", PruneOptions{KeepDelegated: []string{"concourse.service"}},
			map[string]string{supPath: KindSupervisorDropIn}},
		{"protect on, concourse no longer delegated", PruneOptions{KeepSupervisor: true},
			map[string]string{delPath: KindDelegateDropIn}},
		{"both kept", PruneOptions{KeepSupervisor: true, KeepDelegated: []string{"concourse.service"}}, map[string]string{}},
		{"uninstall", PruneOptions{Uninstall: true},
			map[string]string{supPath: KindSupervisorDropIn, delPath: KindDelegateDropIn}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, b := range map[string][]byte{supPath: sup, delPath: del} {
				hp := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(hp, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := &Manager{Logger: lagertest.NewTestLogger("prune"), Root: root}
			res, err := m.Prune(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, it := range res.Items {
				if it.Action != Removed {
					t.Errorf("item %+v", it)
				}
				got[it.Path] = it.Kind
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("removed %v, want %v", got, tc.want)
			}
			for _, p := range []string{supPath, delPath} {
				_, err := os.Stat(filepath.Join(root, p))
				if _, gone := tc.want[p]; gone != os.IsNotExist(err) {
					t.Errorf("%s: removed %v, stat %v", p, gone, err)
				}
			}
		})
	}
}

func TestRemoveStamps(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, legacyStampDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"cellguard-garden.service", "cellguard-worker.service"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("boot sum\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := &Manager{Logger: lagertest.NewTestLogger("stamps"), Root: root}
	items, err := m.RemoveStamps()
	if err != nil || len(items) != 2 {
		t.Fatalf("RemoveStamps = %+v, %v", items, err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", filepath.Dir(legacyStampDir), err)
	}
	if items, err := m.RemoveStamps(); err != nil || len(items) != 0 {
		t.Errorf("second run: %+v %v", items, err)
	}
}
