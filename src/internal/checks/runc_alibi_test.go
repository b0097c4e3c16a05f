package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Issue 38, hole 2: a comm or an argv is no alibi. What a process says it
// is (runc:[2:INIT], "exe init", a parent named runc) excuses nothing; only
// what it cannot forge does (the state's init by pid and start time, or a
// parent whose executable is the host's runc binary), and only within a
// grace.

const hostRunc = "/var/vcap/packages/runc/bin/runc"

// ticksAgo is the start time (stat field 22) of a process started d before
// fixtureNow.
func ticksAgo(d time.Duration) uint64 {
	return uint64((fixtureNow.Sub(fakehost.BootTime) - d) / (10 * time.Millisecond))
}

// alibiHost is a host with the host's runc binary configured, the
// container c1 (pids 100, 101), a `runc exec` run by the real runc (pid 90)
// and a process named runc that runs another binary (pid 91).
func alibiHost(t *testing.T, h *fakehost.Host) testDeps {
	t.Helper()
	d := deps(h)
	d.RuntimeBinaries = map[string]string{"runc": h.Binary(hostRunc)}
	h.Add(fakehost.Proc{PID: 90, Comm: "runc", Args: []string{"runc", "exec", "c1", "sh"}, Exe: hostRunc,
		Cgroup: "/system.slice/garden.service", Start: ticksAgo(time.Minute)})
	h.Add(fakehost.Proc{PID: 91, Comm: "runc", Args: []string{"runc", "exec", "c1", "sh"}, Exe: h.Binary("/tmp/x/runc"),
		Cgroup: "/user.slice", Start: ticksAgo(time.Minute)})
	h.RunContainer(garden("c1"), 100, 2, 500)
	return d
}

func pidsOf(fs []validator.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Data["pid"])
	}
	return strings.Join(out, " ")
}

func TestCgroupIntegrityNoAlibiByName(t *testing.T) {
	testCases := []struct {
		name   string
		escape fakehost.Proc // in c1's pid namespace, outside its cgroups
		report bool
	}{
		{"runc:[2:INIT] child of the container's init", fakehost.Proc{PPID: 100, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(time.Second)}, true},
		{"runc:[2:INIT] child of a process named runc that is not the host's runc", fakehost.Proc{PPID: 91, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(time.Second)}, true},
		{"child of the host's runc past the grace", fakehost.Proc{PPID: 90, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(10 * time.Minute)}, true},
		{"child of the host's runc joining, within the grace", fakehost.Proc{PPID: 90, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(time.Second)}, false},
		{"child of the host's runc with any name, within the grace", fakehost.Proc{PPID: 90, Comm: "exe", Args: []string{"/proc/self/exe", "init"}, Start: ticksAgo(time.Second)}, false},
	}
	for _, mode := range allModes {
		for _, tc := range testCases {
			t.Run(mode.String()+"/"+tc.name, func(t *testing.T) {
				h := fakehost.New(t, mode)
				d := alibiHost(t, h)
				p := tc.escape
				p.PID, p.NS, p.Cgroup = 150, fakehost.NSOf(100), "/system.slice/garden.service"
				h.Add(p)
				bad := failures(run(t, d, "cgroup-integrity"))
				want := ""
				if tc.report {
					want = strings.TrimSpace(strings.Repeat("150 ", len(h.Hierarchies())))
				}
				if got := pidsOf(bad); got != want {
					t.Fatalf("escapes of pids %q, want %q: %+v", got, want, bad)
				}
			})
		}
	}
}

func TestRuntimeGhostsNoAlibiByName(t *testing.T) {
	testCases := []struct {
		name   string
		orphan fakehost.Proc // in /garden/c2, which no state claims
		report bool
	}{
		{"runc:[2:INIT] child of pid 1", fakehost.Proc{PPID: 1, Comm: "runc:[2:INIT]", Start: ticksAgo(time.Second)}, true},
		{"runc-named child of pid 1", fakehost.Proc{PPID: 1, Comm: "runcd", Start: ticksAgo(time.Second)}, true},
		{"exe init child of pid 1", fakehost.Proc{PPID: 1, Comm: "exe", Args: []string{"/proc/self/exe", "init"}, Start: ticksAgo(time.Second)}, true},
		{"runc:[2:INIT] child of a process named runc that is not the host's runc", fakehost.Proc{PPID: 91, Comm: "runc:[2:INIT]", Start: ticksAgo(time.Second)}, true},
		{"child of the host's runc past the grace", fakehost.Proc{PPID: 90, Comm: "runc:[2:INIT]", Start: ticksAgo(10 * time.Minute)}, true},
		{"child of the host's runc creating, within the grace", fakehost.Proc{PPID: 90, Comm: "runc:[2:INIT]", Start: ticksAgo(time.Second)}, false},
	}
	for _, mode := range allModes {
		for _, tc := range testCases {
			t.Run(mode.String()+"/"+tc.name, func(t *testing.T) {
				h := fakehost.New(t, mode)
				d := alibiHost(t, h)
				p := tc.orphan
				p.PID, p.Cgroup = 150, "/garden/c2"
				h.Add(p)
				bad := failures(run(t, d, "runtime-ghosts"))
				want := ""
				if tc.report {
					want = "150"
				}
				if got := pidsOf(bad); got != want {
					t.Fatalf("orphans %q, want %q: %+v", got, want, bad)
				}
			})
		}
	}
}

// A process that calls itself runc init and that nothing vouches for gets
// no five minutes of silence: it is a finding once the grace is over.
func TestStuckRuncInitNoAlibiByName(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	d := alibiHost(t, h)
	// Forged: two minutes old, a child of pid 1, no state names it.
	h.Add(fakehost.Proc{PID: 150, PPID: 1, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(2 * time.Minute), Cgroup: "/garden/x"})
	// Vouched: a created container's init (the state's pid and start
	// time), and a child of the host's runc, both two minutes old.
	created := ticksAgo(2 * time.Minute)
	h.Add(fakehost.Proc{PID: 160, PPID: 1, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: created, Cgroup: "/garden/c3"})
	h.State(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c3", Cgroup: "/garden/c3", Init: 160, InitStart: created, Created: true})
	h.Add(fakehost.Proc{PID: 170, PPID: 90, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(2 * time.Minute), Cgroup: "/garden/c1"})
	bad := failures(run(t, d, "stuck-runc-init"))
	if got := pidsOf(bad); got != "150" {
		t.Fatalf("findings for pids %q, want 150 alone: %+v", got, bad)
	}
}

// A pea's init while runc creates it (TestFleet/noble/garden_v2): in the
// sandbox's pid namespace, in a cgroup without the sandbox's limits, and no
// state records it yet. limits-intact excuses it exactly as cgroup-integrity
// excuses a joining process, by its parent's executable and its age.
// memoryLimits readies h for memory limits below /garden (on v2 the
// controller enabled down to it) and returns where cgroup cg's limit file
// is, relative to the root.
func memoryLimits(h *fakehost.Host, mode cgroup.Mode) func(cg string) string {
	if mode != cgroup.Unified {
		return func(cg string) string { return "sys/fs/cgroup/memory" + cg + "/memory.limit_in_bytes" }
	}
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "memory pids\n")
	h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", "memory pids\n")
	return func(cg string) string { return "sys/fs/cgroup" + cg + "/memory.max" }
}

func TestLimitsIntactNoAlibiByName(t *testing.T) {
	testCases := []struct {
		name   string
		joiner fakehost.Proc // in c1's pid namespace, in a cgroup without its limit
		report bool
	}{
		{"runc:[2:INIT] child of the container's init", fakehost.Proc{PPID: 100, Comm: "runc:[2:INIT]", Start: ticksAgo(time.Second)}, true},
		{"runc:[2:INIT] child of a process named runc that is not the host's runc", fakehost.Proc{PPID: 91, Comm: "runc:[2:INIT]", Start: ticksAgo(time.Second)}, true},
		{"child of the host's runc past the grace", fakehost.Proc{PPID: 90, Comm: "runc:[2:INIT]", Start: ticksAgo(10 * time.Minute)}, true},
		{"child of the host's runc creating a pea, within the grace", fakehost.Proc{PPID: 90, Comm: "runc:[2:INIT]", Start: ticksAgo(time.Second)}, false},
	}
	for _, mode := range allModes {
		for _, tc := range testCases {
			t.Run(mode.String()+"/"+tc.name, func(t *testing.T) {
				h := fakehost.New(t, mode)
				d := deps(h)
				d.RuntimeBinaries = map[string]string{"runc": h.Binary(hostRunc)}
				h.Add(fakehost.Proc{PID: 90, Comm: "runc", Exe: hostRunc, Cgroup: "/system.slice/garden.service", Start: ticksAgo(time.Minute)})
				h.Add(fakehost.Proc{PID: 91, Comm: "runc", Exe: h.Binary("/tmp/x/runc"), Cgroup: "/user.slice", Start: ticksAgo(time.Minute)})
				memoryLimit := memoryLimits(h, mode)
				c := garden("c1")
				c.Resources = map[string]any{"memory": 1 << 30}
				h.RunContainer(c, 100, 2, 500)
				h.Write(memoryLimit(c.Cgroup), "1073741824\n")
				// The pea's own cgroup, which no state names yet, outside the
				// cgroup that holds c1's limit (a privileged sandbox's pea is
				// beside it below system.slice; an unprivileged one's pids
				// limit is on its init's cgroup alone).
				pea := "/garden/pea1"
				h.Write(memoryLimit(pea), "max\n")
				p := tc.joiner
				p.PID, p.NS, p.Cgroup = 150, fakehost.NSOf(100), pea
				h.Add(p)
				var got []string
				for _, f := range run(t, d, "limits-intact") {
					if f.Status != validator.Pass {
						got = append(got, f.Data["pid"])
					}
				}
				want := ""
				if tc.report {
					want = "150"
				}
				if strings.Join(got, " ") != want {
					t.Fatalf("limits-intact findings of pids %q, want %q", got, want)
				}
			})
		}
	}
}
