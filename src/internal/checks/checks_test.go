package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

var allModes = []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid, cgroup.Unified}

// fixtureNow is 1h after the fixture's boot.
var fixtureNow = fakehost.BootTime.Add(time.Hour)

func deps(h *fakehost.Host) testDeps {
	return testDeps{Root: h.Root, Now: func() time.Time { return fixtureNow }, Sleep: func(time.Duration) {}}
}

// run runs the check id of all(d) and fails the test if it errors.
func run(t *testing.T, d testDeps, id string) []validator.Finding {
	t.Helper()
	for _, c := range all(d) {
		if c.Meta().ID == id {
			fs, err := c.Run(context.Background())
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			subjectOnce(t, id, fs)
			return fs
		}
	}
	t.Fatalf("no check %q", id)
	return nil
}

// subjectOnce fails when a finding's detail repeats its subject: reports
// print "subject: detail", and "fs.pipe-user-pages-soft:
// fs.pipe-user-pages-soft: live 16384" says the key twice.
func subjectOnce(t *testing.T, id string, fs []validator.Finding) {
	t.Helper()
	for _, f := range fs {
		if f.Subject != "" && strings.HasPrefix(f.Detail, f.Subject+":") {
			t.Errorf("%s: finding %q repeats its subject in the detail %q", id, f.Subject, f.Detail)
		}
	}
}

func failures(fs []validator.Finding) []validator.Finding {
	var out []validator.Finding
	for _, f := range fs {
		if f.Status == validator.Fail || f.Status == validator.Warn {
			out = append(out, f)
		}
	}
	return out
}

func garden(id string) fakehost.Container {
	return fakehost.Container{RuntimeRoot: "/run/runc", ID: id, Cgroup: "/garden/" + id}
}

func TestRegistryIsValid(t *testing.T) {
	if err := validator.Validate(all(testDeps{})); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupIntegrityCleanHostPasses(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 3, 500)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "c2", Cgroup: "/garden/c2"}, 200, 2, 600)
			h.Add(fakehost.Proc{PID: 50, Comm: "gdn", Cgroup: "/system.slice/garden.service"})
			fs := run(t, deps(h), "cgroup-integrity")
			if bad := failures(fs); len(bad) != 0 {
				t.Fatalf("clean host: %+v", bad)
			}
			last := fs[len(fs)-1]
			if last.Data["containers"] != "2" || last.Data["processes"] != "5" || last.Data["cgroup_mode"] != mode.String() {
				t.Fatalf("summary %+v", last)
			}
		})
	}
}

// seed-000: systemd moves a container process's cpu and blkio (v1) back to
// the daemon's unit when another unit with CPUAccounting/IOWeight starts.
func TestCgroupIntegritySeed000EscapeV1(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid} {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 3, 500)
			h.Move(101, "cpu,cpuacct", "/system.slice/garden.service")
			h.Move(101, "blkio", "/system.slice/garden.service")
			bad := failures(run(t, deps(h), "cgroup-integrity"))
			if len(bad) != 2 {
				t.Fatalf("want 2 findings (cpu, blkio), got %+v", bad)
			}
			got := map[string]validator.Finding{}
			for _, f := range bad {
				got[f.Data["hierarchy"]] = f
			}
			for _, hier := range []string{"cpu,cpuacct", "blkio"} {
				f, ok := got[hier]
				if !ok {
					t.Fatalf("no finding for %s: %+v", hier, bad)
				}
				if f.Status != validator.Fail || f.Subject != "c1" || f.Data["pid"] != "101" ||
					f.Data["expected"] != "/garden/c1" || f.Data["actual"] != "/system.slice/garden.service" {
					t.Errorf("finding %+v", f)
				}
			}
		})
	}
}

func TestCgroupIntegrityEscapeV2(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "concourse", ID: "w1",
		Cgroup: "/system.slice/concourse.service/garden/w1"}, 300, 2, 700)
	h.Move(300, "", "/system.slice/concourse.service")
	bad := failures(run(t, deps(h), "cgroup-integrity"))
	if len(bad) != 1 || bad[0].Data["hierarchy"] != "unified" || bad[0].Data["pid"] != "300" ||
		bad[0].Data["actual"] != "/system.slice/concourse.service" || bad[0].Subject != "concourse/w1" {
		t.Fatalf("got %+v", bad)
	}
}

// A process moved out of every hierarchy is no longer in any of the
// container's cgroup.procs: only its pid namespace ties it to the container.
func TestCgroupIntegrityFindsFullEscapeByPidNamespace(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 3, 500)
			p := h.Get(102)
			p.Cgroup = "/"
			h.Update(p)
			bad := failures(run(t, deps(h), "cgroup-integrity"))
			if len(bad) != len(h.Hierarchies()) {
				t.Fatalf("want one finding per hierarchy (%d), got %d: %+v", len(h.Hierarchies()), len(bad), bad)
			}
			for _, f := range bad {
				if f.Data["pid"] != "102" || f.Data["actual"] != "/" {
					t.Errorf("finding %+v", f)
				}
			}
		})
	}
}

// Without a pid namespace of its own, the container's processes are those
// in its cgroups.
func TestCgroupIntegritySharedPidNamespaceUsesCgroups(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	c := garden("bpm-x")
	c.SharedPidNS = true
	c.RuntimeRoot = "/var/vcap/sys/run/bpm-runc"
	h.RunContainer(c, 400, 2, 800)
	h.Move(401, "cpu,cpuacct", "/")
	d := deps(h)
	d.RuntimeRoots = []string{c.RuntimeRoot} // the CLI adds bpm's root to the runtimes' own
	bad := failures(run(t, d, "cgroup-integrity"))
	if len(bad) != 1 || bad[0].Data["pid"] != "401" || bad[0].Data["runtime"] != "bpm" {
		t.Fatalf("got %+v", bad)
	}
	// Host processes (same pid namespace) elsewhere are not the container's.
	for _, f := range bad {
		if f.Data["pid"] == "1" {
			t.Fatal("a host process was taken for a container process")
		}
	}
}

// Garden's peas join their sandbox's pid namespace but have cgroups of
// their own: their processes are not the sandbox's escapees. An escape from
// the pea is still the pea's.
func TestCgroupIntegrityPeaSharingPidNamespace(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("sandbox"), 100, 3, 500)
			pea := garden("pea")
			pea.JoinPidNS = fakehost.NSOf(100)
			h.RunContainer(pea, 200, 2, 600)
			if bad := failures(run(t, deps(h), "cgroup-integrity")); len(bad) != 0 {
				t.Fatalf("pea processes taken for escapees: %+v", bad)
			}
			hier := h.Hierarchies()[0]
			h.Move(201, hier, "/system.slice/garden.service")
			bad := failures(run(t, deps(h), "cgroup-integrity"))
			if len(bad) != 1 || bad[0].Subject != "pea" || bad[0].Data["pid"] != "201" {
				t.Fatalf("want the pea's escape only: %+v", bad)
			}
		})
	}
}

// A process started by `runc exec` has a host-side parent (the shim); when
// it escapes every hierarchy, its namespace still names its container.
func TestCgroupIntegrityExecProcessEscapedEverywhere(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.Add(fakehost.Proc{PID: 90, Comm: "containerd-shim", Cgroup: "/system.slice/containerd.service"})
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.Add(fakehost.Proc{PID: 150, PPID: 90, Comm: "sh", NS: fakehost.NSOf(100), Cgroup: "/system.slice/containerd.service", Start: 700})
			bad := failures(run(t, deps(h), "cgroup-integrity"))
			if len(bad) != len(h.Hierarchies()) || bad[0].Subject != "c1" || bad[0].Data["pid"] != "150" {
				t.Fatalf("got %+v", bad)
			}
		})
	}
}

func TestCgroupIntegrityNestedCgroupIsInside(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "", "/garden/c1/init.scope")
	if bad := failures(run(t, deps(h), "cgroup-integrity")); len(bad) != 0 {
		t.Fatalf("a sub-cgroup of the container is inside it: %+v", bad)
	}
}

func TestCgroupIntegrityProcessVanishingMidScan(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 3, 500)
	h.Move(102, "memory", "/elsewhere")
	// 102 exits after cgroup.procs was listed: /proc/102 is gone.
	h.RemoveProcDir(102)
	// 999 exits between the /proc listing and the reads: an empty dir.
	if err := os.MkdirAll(filepath.Join(h.Root, "proc/999"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := run(t, deps(h), "cgroup-integrity")
	if bad := failures(fs); len(bad) != 0 {
		t.Fatalf("a vanished process is not a finding: %+v", bad)
	}
}

// A dead container's init pid now belongs to a host process: that process is
// not the container's and must not be reported as escaped.
func TestCgroupIntegrityIgnoresReusedInitPid(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 1, 500)
			h.Kill(100)
			h.Add(fakehost.Proc{PID: 100, Comm: "bash", Start: 9000, Cgroup: "/user.slice/user-0.slice"})
			if bad := failures(run(t, deps(h), "cgroup-integrity")); len(bad) != 0 {
				t.Fatalf("reused pid reported: %+v", bad)
			}
		})
	}
}

// A container process exits between the reads of two cgroup.procs files and
// its pid goes at once to a host process (a wrapped pid counter): memory
// still lists 102, the other hierarchies do not, and /proc/102 is the host
// process, outside the container everywhere. It never was the container's.
// Found by TestValidateUnderChurn.
func TestCgroupIntegrityPidReusedBetweenListings(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid} {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 3, 500)
			h.Kill(102)
			h.Add(fakehost.Proc{PID: 102, Comm: "sh", Start: 9000, Cgroup: "/user.slice"})
			h.Write("sys/fs/cgroup/memory/garden/c1/cgroup.procs", "100\n101\n102\n")
			fs := run(t, deps(h), "cgroup-integrity")
			if bad := failures(fs); len(bad) != 0 {
				t.Fatalf("a reused pid reported as escaped: %+v", bad)
			}
			if last := fs[len(fs)-1]; last.Data["processes"] != "2" {
				t.Fatalf("summary %+v", last)
			}
			// Still inside where it is listed: a real partial escape.
			h.Add(fakehost.Proc{PID: 102, Comm: "sh", Start: 9000, Cgroup: "/garden/c1",
				In: map[string]string{"cpu,cpuacct": "/system.slice/garden.service"}})
			if bad := failures(run(t, deps(h), "cgroup-integrity")); len(bad) != 1 || bad[0].Data["pid"] != "102" {
				t.Fatalf("partial escape: %+v", bad)
			}
		})
	}
}

// The suspect's pid goes to a host process started in the same clock tick
// (equal start time) while the check waits to confirm: the re-read must see
// that the process is no longer the container's (outside all its cgroups, in
// the host's pid namespace). Found by TestValidateUnderChurn.
func TestCgroupIntegrityPidReusedWithinATickWhileConfirming(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.Add(fakehost.Proc{PID: 150, PPID: 100, Comm: "sh", NS: fakehost.NSOf(100), Cgroup: "/", Start: 700})
			d := deps(h)
			d.Sleep = func(time.Duration) {
				h.Kill(150)
				h.Add(fakehost.Proc{PID: 150, PPID: 1, Comm: "sh", Cgroup: "/", Start: 700})
			}
			if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 0 {
				t.Fatalf("a host process that reused the pid reported: %+v", bad)
			}
			// Without the reuse the same suspect is confirmed.
			h.Kill(150)
			h.Add(fakehost.Proc{PID: 150, PPID: 100, Comm: "sh", NS: fakehost.NSOf(100), Cgroup: "/", Start: 700})
			if bad := failures(run(t, deps(h), "cgroup-integrity")); len(bad) != len(h.Hierarchies()) {
				t.Fatalf("escape not confirmed: %+v", bad)
			}
		})
	}
}

// A `runc exec` process enters the container's pid namespace before runc
// writes it into the container's cgroups, and on a busy cell that takes
// longer than the confirmation wait: a young child of the host's runc that
// is not the container's init is in flight, not escaped. A created container's init
// (also runc init, waiting for `runc start`) that was moved is still an
// escape. Found by TestValidateUnderChurn.
func TestCgroupIntegrityRuncExecJoiningIsNotAnEscape(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			d := deps(h)
			d.RuntimeBinaries = map[string]string{"runc": h.Binary(hostRunc)}
			h.Add(fakehost.Proc{PID: 90, Comm: "runc", Args: []string{"runc", "exec", "c1", "sh"}, Exe: hostRunc, Cgroup: "/system.slice/garden.service"})
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.Add(fakehost.Proc{PID: 150, PPID: 90, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"},
				NS: fakehost.NSOf(100), Cgroup: "/system.slice/garden.service", Start: ticksAgo(time.Second)})
			h.Move(150, h.Hierarchies()[0], "/garden/c1") // half-way through joining
			if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 0 {
				t.Fatalf("a joining runc exec reported: %+v", bad)
			}
			init := h.Get(100)
			init.Comm, init.Args, init.PPID = "runc:[2:INIT]", []string{"runc", "init"}, 90
			h.Update(init)
			h.Move(100, h.Hierarchies()[0], "/system.slice/garden.service")
			if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 1 || bad[0].Data["pid"] != "100" {
				t.Fatalf("a created container's moved init: %+v", bad)
			}
		})
	}
}

// runc exec joins one hierarchy after another; a process caught half-way
// must not count as escaped once it has finished.
func TestCgroupIntegrityTransientMoveIsNotReported(t *testing.T) {
	h := fakehost.New(t, cgroup.Legacy)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "pids", "/")
	d := deps(h)
	slept := false
	d.Sleep = func(time.Duration) {
		slept = true
		h.Move(101, "pids", "/garden/c1")
	}
	if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 0 {
		t.Fatalf("transient move reported: %+v", bad)
	}
	if !slept {
		t.Fatal("suspects were not re-checked")
	}
}

// systemd moves a unit's processes one controller after another. A scan
// that read a process between its cpu and its blkio move must report (and,
// with --fix, heal) both: the confirming re-read takes every hierarchy as
// it is then, or the next scan heals the same process a second time
// (the local cell in CI, 2026-12-01: cellguard_healed_processes_total 8 for 4 processes).
func TestCgroupIntegrityConfirmTakesAMoveStillUnderWay(t *testing.T) {
	h := fakehost.New(t, cgroup.Legacy)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "cpu,cpuacct", "/system.slice/runit.service")
	d := deps(h)
	d.Sleep = func(time.Duration) { h.Move(101, "blkio", "/system.slice/runit.service") }
	bad := failures(run(t, d, "cgroup-integrity"))
	got := map[string]bool{}
	for _, f := range bad {
		got[f.Data["pid"]+" "+f.Data["hierarchy"]] = true
	}
	if len(bad) != 2 || !got["101 cpu,cpuacct"] || !got["101 blkio"] {
		t.Fatalf("want pid 101 outside in cpu,cpuacct and blkio, got %+v", bad)
	}
}

// On a cell busy forking a join can outlast the first wait: a suspect is
// re-read after longer waits and dropped once inside; one that stays outside
// is confirmed after every wait, about 1.5s in all.
func TestCgroupIntegritySlowJoinIsNotReported(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "pids", "/")
	d := deps(h)
	var waits []time.Duration
	heal := true
	d.Sleep = func(w time.Duration) {
		if waits = append(waits, w); heal && len(waits) == 3 {
			h.Move(101, "pids", "/garden/c1")
		}
	}
	if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 0 {
		t.Fatalf("slow join reported: %+v", bad)
	}
	if len(waits) != 3 {
		t.Fatalf("waited %v, want three waits until the join finished", waits)
	}
	h.Move(101, "pids", "/")
	waits, heal = nil, false
	if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 1 || bad[0].Data["pid"] != "101" {
		t.Fatalf("a lasting escape: %+v", bad)
	}
	var total time.Duration
	for _, w := range waits {
		total += w
	}
	if total != 1500*time.Millisecond {
		t.Fatalf("waited %v (%s) before confirming", waits, total)
	}
}

func TestCgroupIntegrityContainerWithoutMountedCgroups(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("run/runc/x/state.json", `{"id":"x","init_process_pid":7,"init_process_start":1,
		"cgroup_paths":{"memory":"/sys/fs/cgroup/memory/garden/x"}}`)
	h.Write("run/runc/y/state.json", `{"id":"y","init_process_pid":8,"init_process_start":1}`)
	fs := run(t, deps(h), "cgroup-integrity")
	if len(fs) != 4 || fs[0].Status != validator.Warn || fs[0].Subject != "x" || fs[0].Data["unmapped"] != "memory" ||
		fs[1].Status != validator.Skip || fs[1].Subject != "y" || fs[2].Data["kind"] != KindRuntime {
		t.Fatalf("got %+v", fs)
	}
}

func TestRuntimeGhosts(t *testing.T) {
	testCases := []struct {
		name  string
		setup func(h *fakehost.Host, d *testDeps)
		kinds []string // expected finding kinds
	}{
		{name: "clean", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.RunContainer(garden("c2"), 200, 2, 500)
		}},
		{name: "init gone", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 1, 500)
			h.Kill(100)
		}, kinds: []string{"init-gone"}},
		{name: "pid reused", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 1, 500)
			h.Kill(100)
			h.Add(fakehost.Proc{PID: 100, Comm: "bash", Start: 9000, Cgroup: "/user.slice"})
		}, kinds: []string{"pid-reused"}},
		{name: "old runc string start time still matches", setup: func(h *fakehost.Host, d *testDeps) {
			h.Add(fakehost.Proc{PID: 100, Comm: "init", Start: 500, NS: 77, Cgroup: "/garden/old"})
			h.State(fakehost.Container{RuntimeRoot: "/run/runc", ID: "old", Cgroup: "/garden/old", Init: 100, InitStart: 500, StartAsString: true})
		}},
		{name: "zombie init", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 1, 500)
			p := h.Get(100)
			p.State = 'Z'
			h.Update(p)
		}, kinds: []string{"init-zombie"}},
		{name: "orphan beside a live container", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.Add(fakehost.Proc{PID: 150, Comm: "leaked", Cgroup: "/garden/destroyed-x"})
		}, kinds: []string{"orphan"}},
		{name: "orphan under an extra root with no containers", setup: func(h *fakehost.Host, d *testDeps) {
			h.Add(fakehost.Proc{PID: 150, Comm: "leaked", Cgroup: "/garden/destroyed-x"})
			d.ExtraCgroupRoots = []string{"garden"}
		}, kinds: []string{"orphan"}},
		{name: "escaped container process is not an orphan", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 2, 500)
			p := h.Get(101)
			p.Cgroup = "/garden"
			h.Update(p)
		}},
		{name: "process escaped in the searched hierarchy only is not an orphan", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 2, 500)
			ref := "memory"
			if h.Mode == cgroup.Unified {
				ref = ""
			}
			h.Move(101, ref, "/garden")
		}},
		{name: "systemd slices are not searched", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "k8s.io", ID: "k",
				Cgroup: "/system.slice/cri-containerd-k.scope"}, 100, 1, 500)
			h.Add(fakehost.Proc{PID: 60, Comm: "sshd", Cgroup: "/system.slice/ssh.service"})
		}},
		// Real Garden under churn (src/tests/garden): runc init in the new
		// container's cgroup before its state exists, and a destroy that
		// killed the init and deletes the state during the confirm wait.
		{name: "runc init of a container being created is not an orphan", setup: func(h *fakehost.Host, d *testDeps) {
			d.RuntimeBinaries = map[string]string{"runc": h.Binary(hostRunc)}
			h.Add(fakehost.Proc{PID: 90, Comm: "runc", Args: []string{"runc", "create", "c2"}, Exe: hostRunc, Cgroup: "/system.slice/garden.service"})
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.Add(fakehost.Proc{PID: 150, PPID: 90, Comm: "runc:[2:INIT]", Cgroup: "/garden/c2", Start: ticksAgo(time.Second)})
			h.Add(fakehost.Proc{PID: 151, PPID: 90, Comm: "exe", Args: []string{"/proc/self/exe", "init"}, Cgroup: "/garden/c3", Start: ticksAgo(time.Second)})
		}},
		{name: "an exe that is not runc init is an orphan", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 2, 500)
			h.Add(fakehost.Proc{PID: 151, Comm: "exe", Args: []string{"/usr/bin/exe", "serve"}, Cgroup: "/garden/destroyed-x"})
		}, kinds: []string{"orphan"}},
		{name: "init gone while its destroy deletes the state is not a ghost", setup: func(h *fakehost.Host, d *testDeps) {
			h.RunContainer(garden("c1"), 100, 1, 500)
			h.Kill(100)
			d.Sleep = func(time.Duration) {
				if err := os.RemoveAll(filepath.Join(h.Root, "run/runc/c1")); err != nil {
					panic(err)
				}
			}
		}},
		{name: "unreadable state", setup: func(h *fakehost.Host, d *testDeps) {
			h.Write("run/runc/bad/state.json", `{"id":`)
		}, kinds: []string{"bad-state"}},
	}
	for _, mode := range allModes {
		for _, tc := range testCases {
			t.Run(mode.String()+"/"+tc.name, func(t *testing.T) {
				h := fakehost.New(t, mode)
				d := deps(h)
				tc.setup(h, &d)
				bad := failures(run(t, d, "runtime-ghosts"))
				var kinds []string
				for _, f := range bad {
					kinds = append(kinds, f.Data["kind"])
				}
				if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
					t.Fatalf("kinds %v, want %v: %+v", kinds, tc.kinds, bad)
				}
			})
		}
	}
}

func TestStuckRuncInit(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	// 1h after boot: started at tick 1000 (10s after boot) is ~59m old.
	h.Add(fakehost.Proc{PID: 70, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: 1000, Cgroup: "/garden/stuck"})
	h.State(fakehost.Container{RuntimeRoot: "/run/runc", ID: "stuck", Cgroup: "/garden/stuck", Init: 70, InitStart: 1000, Created: true})
	// Started 1 minute ago: a healthy create->start gap.
	young := uint64(fixtureNow.Sub(fakehost.BootTime)/(10*time.Millisecond)) - 6000
	h.Add(fakehost.Proc{PID: 71, PPID: 73, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: young})
	// runc init before nsexec renamed it.
	h.Add(fakehost.Proc{PID: 72, PPID: 73, Comm: "runc", Args: []string{"/var/vcap/packages/runc/bin/runc", "init"}, Start: 2000})
	// Not init: runc create (the host's runc, the parent of 71 and 72),
	// with a one-page pipe, a full pipe and exec.fifo.
	h.Add(fakehost.Proc{PID: 73, Comm: "runc", Args: []string{"runc", "--root", "/run/runc", "create", "x"}, Start: 2000,
		Exe: h.Binary(hostRunc), FDs: map[int]string{3: "pipe:[111]", 4: "pipe:[222]", 5: "/run/runc/x/exec.fifo", 6: "socket:[9]"}})
	h.Add(fakehost.Proc{PID: 74, Comm: "sleep", Args: []string{"sleep", "init"}, Start: 1000, FDs: map[int]string{3: "pipe:[333]"}})

	var asked []string
	s := &StuckRuncInit{host: snapshot.Lazy(snapshot.Spec{Root: h.Root}), Now: func() time.Time { return fixtureNow },
		Runc: RuncFiles{Configured: map[string]string{"runc": hostRunc}},
		PipeCapacity: func(_ procfs.FS, pid, fd int) (int, error) {
			asked = append(asked, fmt.Sprintf("%d/%d", pid, fd))
			if pid == 73 && fd == 3 {
				return os.Getpagesize(), nil
			}
			return 16 * os.Getpagesize(), nil
		}}
	fs, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range failures(fs) {
		got = append(got, f.Data["kind"]+":"+f.Data["pid"])
		if f.Data["pid"] == "70" && f.Subject != "stuck" {
			t.Errorf("stuck init not tied to its container: %+v", f)
		}
	}
	if strings.Join(got, " ") != "stuck-init:70 stuck-init:72 small-pipe:73" {
		t.Fatalf("findings %v: %+v", got, fs)
	}
	// Only anonymous pipes of runc processes are probed; never exec.fifo.
	if strings.Join(asked, " ") != "73/3 73/4" {
		t.Fatalf("probed %v", asked)
	}
}

func TestStuckRuncInitMaxAgeFromDeps(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Add(fakehost.Proc{PID: 70, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: 1000, Cgroup: "/garden/c"})
	h.State(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c", Cgroup: "/garden/c", Init: 70, InitStart: 1000, Created: true})
	d := deps(h)
	d.RuncInitMaxAge = 2 * time.Hour
	if bad := failures(run(t, d, "stuck-runc-init")); len(bad) != 0 {
		t.Fatalf("59m is under a 2h limit: %+v", bad)
	}
}

// The verdict: an escape blocks drain; ghosts only warn.
func TestVerdictThroughFramework(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.RunContainer(garden("c2"), 200, 1, 500)
	h.Kill(200)
	d := deps(h)
	rep := validator.Run(context.Background(), all(d), validator.Options{Phase: validator.Drain})
	if rep.Blocked {
		t.Fatalf("a ghost alone must not block: %+v", rep)
	}
	h.Move(101, "cpu,cpuacct", "/system.slice/garden.service")
	rep = validator.Run(context.Background(), all(d), validator.Options{Phase: validator.Drain})
	if !rep.Blocked {
		t.Fatalf("an escape blocks drain: %+v", rep)
	}
	rep = validator.Run(context.Background(), all(d), validator.Options{Phase: validator.Drain, Ignore: []string{"cgroup-integrity"}})
	if rep.Blocked {
		t.Fatal("an ignored check does not block")
	}
}

// rereads is a fake snapshot.Rereader: what each pid looks like when read
// again, and how often it was.
type rereads struct {
	t     *testing.T
	now   func(pid int) (procfs.Stat, string, uint64, error)
	calls map[int]int
}

func (r *rereads) Reread(pid int) (snapshot.Now, error) {
	r.calls[pid]++
	st, cg, ns, err := r.now(pid)
	if err != nil {
		return snapshot.Now{}, err
	}
	n, err := snapshot.NewNow(st, cg, ns)
	if err != nil {
		r.t.Fatal(err)
	}
	return n, nil
}

// Confirming a suspect is an explicit step on the Rereader: a fake decides
// what the process looks like after each wait, without touching the tree,
// and the check judges only that (the scan's tree still shows the escape).
func TestCgroupIntegrityConfirmsThroughTheRereader(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "", "/system.slice/garden.service")
	p := h.Get(101)
	stat := procfs.Stat{PID: 101, Comm: "app", State: 'S', PPID: 100, StartTime: p.Start}
	ns := fakehost.NSOf(100)
	for _, tc := range []struct {
		name  string
		now   func(rounds int) (procfs.Stat, string, uint64, error)
		want  int // escapes confirmed
		calls int // rereads of pid 101
	}{
		{"stays outside", func(int) (procfs.Stat, string, uint64, error) {
			return stat, "0::/system.slice/garden.service\n", ns, nil
		}, 1, len(recheckDelays)},
		{"back inside after the second wait", func(n int) (procfs.Stat, string, uint64, error) {
			if n >= 2 {
				return stat, "0::/garden/c1\n", ns, nil
			}
			return stat, "0::/system.slice/garden.service\n", ns, nil
		}, 0, 2},
		{"pid reused by another process", func(int) (procfs.Stat, string, uint64, error) {
			other := stat
			other.StartTime++
			return other, "0::/system.slice/garden.service\n", ns, nil
		}, 0, 1},
		{"gone", func(int) (procfs.Stat, string, uint64, error) {
			return procfs.Stat{}, "", 0, procfs.ErrGone
		}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := &rereads{t: t, calls: map[int]int{}}
			rr.now = func(pid int) (procfs.Stat, string, uint64, error) {
				if pid != 101 {
					t.Fatalf("reread pid %d, not a suspect", pid)
				}
				return tc.now(rr.calls[pid])
			}
			d := deps(h)
			d.Reread = rr
			if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != tc.want {
				t.Fatalf("want %d escapes, got %+v", tc.want, bad)
			}
			if rr.calls[101] != tc.calls {
				t.Fatalf("pid 101 reread %d times, want %d", rr.calls[101], tc.calls)
			}
		})
	}
}

// cgroup-integrity judges the snapshot it is given and reads the host only
// through the Rereader: the process's /proc directory gone after the read
// changes nothing until the re-read says so.
func TestCgroupIntegrityJudgesTheSnapshot(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "", "/system.slice/garden.service")
	src := snapshot.Lazy(snapshot.Spec{Root: h.Root})
	if _, err := src.Get(); err != nil {
		t.Fatal(err)
	}
	h.RemoveProcDir(101)
	p := h.Get(101)
	rr := &rereads{t: t, calls: map[int]int{}, now: func(int) (procfs.Stat, string, uint64, error) {
		return procfs.Stat{PID: 101, Comm: "app", StartTime: p.Start}, "0::/system.slice/garden.service\n", fakehost.NSOf(100), nil
	}}
	d := deps(h)
	d.Snapshot, d.Reread = src, rr
	bad := failures(run(t, d, "cgroup-integrity"))
	if len(bad) != 1 || bad[0].Data["pid"] != "101" {
		t.Fatalf("want pid 101's escape from the snapshot, got %+v", bad)
	}
}

// gardenThrottledPrivileged is the shape real Garden (guardian c2d9348,
// runc 1.5.1, CPU throttling on) left on a noble VM: a privileged
// container's init where runc put it, /system.slice/<h>, and its state.json
// rewritten by the throttler's Release to /garden/good/<h>, which nothing
// ever made (/work/notes/garden37-run3.txt).
func gardenThrottledPrivileged(h *fakehost.Host, id string, pid int) {
	h.Cgroup("/garden/good")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: id,
		Cgroup: "/system.slice/" + id, Recorded: "/garden/good/" + id}, pid, 1, 900)
}

// A process cannot have escaped from a cgroup that does not exist: the
// runtime's record is false, which is a warning naming the process, where
// it is and what the record says, never an escape to move back.
func TestCgroupIntegrityFalseRecordIsNoEscape(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	gardenThrottledPrivileged(h, "p2", 1445)
	fs := run(t, deps(h), "cgroup-integrity")
	if es := Escapes(fs); len(es) != 0 {
		t.Fatalf("a false record judged as escapes: %+v", es)
	}
	bad := failures(fs)
	if len(bad) != 1 {
		t.Fatalf("want one warning, got %+v", bad)
	}
	f := bad[0]
	if f.Status != validator.Warn || f.Subject != "garden/p2" || f.Data["pid"] != "1445" || f.Data["comm"] != "garden-init" ||
		f.Data["actual"] != "/system.slice/p2" || f.Data["recorded"] != "/garden/good/p2" || f.Data["hierarchy"] != "unified" {
		t.Fatalf("finding %+v", f)
	}
	for _, s := range []string{"1445", "/system.slice/p2", "/garden/good/p2", "does not exist"} {
		if !strings.Contains(f.Detail, s) {
			t.Errorf("detail %q does not say %q", f.Detail, s)
		}
	}
	if _, err := os.Stat(filepath.Join(h.Root, "sys/fs/cgroup/garden/good/p2")); !os.IsNotExist(err) {
		t.Fatalf("the recorded cgroup was made: %v", err)
	}
}

// Beside a false record, a real escape of Garden's (the recorded cgroup
// exists, the process is elsewhere) is still a failure.
func TestCgroupIntegrityRealEscapeBesideFalseRecord(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	gardenThrottledPrivileged(h, "p2", 1445)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "u2",
		Cgroup: "/garden/good/u2/init"}, 1255, 2, 800)
	h.Move(1256, "", "/system.slice/p2")
	fs := run(t, deps(h), "cgroup-integrity")
	es := Escapes(fs)
	if len(es) != 1 || es[0].PID != 1256 || es[0].Want.Rel != "/garden/good/u2/init" || es[0].Actual != "/system.slice/p2" {
		t.Fatalf("escapes %+v", es)
	}
	var fails, warns int
	for _, f := range failures(fs) {
		switch f.Status {
		case validator.Fail:
			fails++
		case validator.Warn:
			warns++
		}
	}
	if fails != 1 || warns != 1 {
		t.Fatalf("want the escape's failure and the false record's warning, got %+v", failures(fs))
	}
}

// cgroup-topology says nothing of a false record (cgroup-integrity does):
// no "could not read" of the cgroup that does not exist, and the cgroup the
// init is in is judged instead.
func TestCgroupTopologyFalseRecordIsQuiet(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	gardenThrottledPrivileged(h, "p2", 1445)
	h.Write("sys/fs/cgroup/system.slice/p2/cgroup.type", "domain\n")
	fs := run(t, deps(h), "cgroup-topology")
	if bad := failures(fs); len(bad) != 0 {
		t.Fatalf("false record: %+v", bad)
	}
	if last := fs[len(fs)-1]; last.Data["containers"] != "1" || last.Data["trees"] != "1" {
		t.Fatalf("summary %+v", last)
	}
}

// Where only some recorded cgroups are gone (v1: one removed after its
// process left it), the runtime did make them: the process outside is
// still an escape, and a failure, in every hierarchy it left.
func TestCgroupIntegrityRemovedCgroupIsStillAnEscapeV1(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "cpu,cpuacct", "/system.slice/garden.service")
	h.Move(101, "blkio", "/system.slice/garden.service")
	if err := os.RemoveAll(filepath.Join(h.Root, "sys/fs/cgroup/blkio/garden/c1")); err != nil {
		t.Fatal(err)
	}
	fs := run(t, deps(h), "cgroup-integrity")
	got := map[string]bool{}
	for _, e := range Escapes(fs) {
		got[e.Want.Hierarchy.Name] = e.PID == 101
	}
	if len(got) != 2 || !got["cpu,cpuacct"] || !got["blkio"] {
		t.Fatalf("escapes %+v", Escapes(fs))
	}
	for _, f := range failures(fs) {
		if f.Status != validator.Fail {
			t.Errorf("not a failure: %+v", f)
		}
	}
}
