package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/limits"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// v2proc is a process of container id at cgroup cg on a v2 host whose
// levels are given top-down, recording r.
func v2proc(id string, r limits.Resources, cg string, levels ...limits.Level) limits.Process {
	return limits.Process{PID: 100, Container: id, StatePath: "/run/runc/" + id + "/state.json", Expected: cg,
		Recorded: r, Wants: limits.Expected(true, r), Paths: []limits.Path{{Key: "", Cgroup: cg, Levels: levels}}}
}

func lv(cg string, enables string, files ...string) limits.Level {
	l := limits.Level{Cgroup: cg, Files: map[string]string{}, ParentEnables: strings.Fields(enables)}
	if l.ParentEnables == nil {
		l.ParentEnables = []string{}
	}
	for i := 0; i+1 < len(files); i += 2 {
		l.Files[files[i]] = files[i+1]
	}
	return l
}

func TestJudgeLimits(t *testing.T) {
	pids := int64(100)
	runcs := limits.Resources{Memory: 128 << 20, CpuWeight: 59, BlkioWeight: 300, PidsLimit: &pids, CpuQuota: 50000, CpuPeriod: 100000}
	all := "cpuset cpu io memory pids"
	intact := []string{"memory.max", "134217728", "pids.max", "100", "cpu.weight", "59", "cpu.max", "50000 100000", "io.weight", "default 2930"}
	testCases := []struct {
		name string
		f    limits.Facts
		want []string // "limit=found" of each failing finding, in order
	}{
		{"every limit in force at the leaf", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", runcs, "/c7", lv("/c7", all, intact...))}}, nil},
		{"daemon-reload's -cpu -io below the root: both weights and the quota absent", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", runcs, "/c7", lv("/c7", "memory pids", "memory.max", "134217728", "pids.max", "100"))}},
			[]string{"cpu weight=absent", "cpu quota=absent", "io weight=absent"}},
		{"below a slice: the slice's parent still enables cpu, the slice does not", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c8", limits.Resources{CpuWeight: 59}, "/system.slice/c8", lv("/system.slice", all, "cpu.weight", "100"), lv("/system.slice/c8", "memory pids"))}},
			[]string{"cpu weight=absent"}},
		{"re-enabled at the kernel's default", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", limits.Resources{CpuWeight: 59}, "/c7", lv("/c7", all, "cpu.weight", "100"))}},
			[]string{"cpu weight=default"}},
		{"another value", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", limits.Resources{Memory: 128 << 20}, "/c7", lv("/c7", all, "memory.max", "268435456"))}},
			[]string{"memory=other"}},
		{"Garden: the limit on /garden/<h>, runc's init below it", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("h1", limits.Resources{Memory: 128 << 20}, "/garden/h1/init", lv("/garden", all), lv("/garden/h1", all, "memory.max", "134217728"),
				lv("/garden/h1/init", all, "memory.max", "max"))}}, nil},
		{"throttled into bad/<h>: cpu.weight copied, memory not", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("h1", limits.Resources{Memory: 128 << 20, CpuWeight: 59}, "/garden/good/h1/init", lv("/garden", all), lv("/garden/bad", all, "memory.max", "max", "cpu.weight", "100"),
				lv("/garden/bad/h1", all, "memory.max", "max", "cpu.weight", "59"))}},
			[]string{"memory=default"}},
		{"-memory on the parent", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c9", limits.Resources{Memory: 128 << 20, MemorySwap: -1, CpuWeight: 59}, "/garden/c9", lv("/garden", all), lv("/garden/c9", "cpuset cpu io pids", "cpu.weight", "59"))}},
			// swap "max" is optional: runc tolerates memory.swap.max's absence
			[]string{"memory=absent"}},
		{"BFQ's weight instead of io.weight", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", limits.Resources{BlkioWeight: 300}, "/c7", lv("/c7", all, "io.weight", "default 100", "io.bfq.weight", "default 300"))}}, nil},
		{"memory rounded down to a page by the kernel", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", limits.Resources{Memory: 100000}, "/c7", lv("/c7", all, "memory.max", "98304"))}}, nil},
		{"nothing recorded, nothing judged", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", limits.Resources{CpuShares: 512}, "/c7", lv("/c7", ""))}}, nil},
		{"in the root cgroup", limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
			v2proc("c7", limits.Resources{CpuWeight: 59}, "/")}},
			[]string{"cpu weight=absent"}},
		{"v1: shares reset in the cpu hierarchy", limits.Facts{Unified: false, Containers: 1, Processes: []limits.Process{{
			PID: 5, Container: "c1", Expected: "/garden/c1", Wants: limits.Expected(false, limits.Resources{CpuShares: 512, Memory: 1 << 30}),
			Paths: []limits.Path{
				{Key: "memory", Cgroup: "/garden/c1", Levels: []limits.Level{{Cgroup: "/garden", Files: map[string]string{}}, {Cgroup: "/garden/c1", Files: map[string]string{"memory.limit_in_bytes": "1073741824"}}}},
				{Key: "cpu", Cgroup: "/garden/c1", Levels: []limits.Level{{Cgroup: "/garden", Files: map[string]string{}}, {Cgroup: "/garden/c1", Files: map[string]string{"cpu.shares": "1024"}}}},
			}}}},
			[]string{"cpu shares=default"}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			fs := JudgeLimits(&tc.f)
			var got []string
			for _, f := range fs {
				if f.Status == validator.Fail {
					got = append(got, f.Data["limit"]+"="+f.Data["found"])
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("lost = %q, want %q\n%s", got, tc.want, details(fs))
			}
			last := fs[len(fs)-1]
			if last.Status != validator.Pass || last.Data["processes"] != "1" {
				t.Errorf("summary = %+v", last)
			}
		})
	}
}

func TestJudgeLimitsNamesWhatIsLost(t *testing.T) {
	f := limits.Facts{Unified: true, Containers: 1, Processes: []limits.Process{
		v2proc("c8", limits.Resources{CpuWeight: 59}, "/system.slice/c8", lv("/system.slice", "cpu memory pids", "cpu.weight", "100"), lv("/system.slice/c8", "memory pids"))}}
	fs := JudgeLimits(&f)
	want := "pid 100: cpu weight 59 (recorded for /system.slice/c8) is absent: the cpu controller is not enabled in /system.slice's cgroup.subtree_control at /system.slice/c8"
	if fs[0].Detail != want || fs[0].Subject != "c8" || fs[0].Data["pid"] != "100" || fs[0].Data["file"] != "cpu.weight" {
		t.Errorf("finding = %+v\nwant detail %q", fs[0], want)
	}
}

// A container whose processes lost the same limit at the same cgroup is
// one finding that names them; another cgroup or container is another.
// The cap on a check's findings then names 25 containers of a cell whose
// every container lost two limits, not the first one's processes (the live
// bench cell before its limits were written: 10,000 findings at 1x, 50
// listed, all of c000000 and c000001).
func TestJudgeLimitsOneFindingPerContainerAndLoss(t *testing.T) {
	r := limits.Resources{CpuWeight: 59}
	stripped := lv("/c7", "memory pids")
	var ps []limits.Process
	for pid := 100; pid < 105; pid++ {
		p := v2proc("c7", r, "/c7", stripped)
		p.PID = pid
		ps = append(ps, p)
	}
	other := v2proc("c7", r, "/c7", stripped)
	other.PID, other.Paths = 105, []limits.Path{{Key: "", Cgroup: "/c7/sub", Levels: []limits.Level{stripped, lv("/c7/sub", "memory pids")}}}
	c8 := v2proc("c8", r, "/c8", lv("/c8", "memory pids"))
	c8.PID = 200
	f := limits.Facts{Unified: true, Containers: 2, Processes: append(ps, other, c8)}
	fs := JudgeLimits(&f)
	var got []string
	for _, x := range fs {
		got = append(got, x.Subject+" ["+x.Data["pid"]+" x"+x.Data["processes"]+"] "+x.Detail)
	}
	want := []string{
		"c7 [100 x5] pids 100, 101, 102 and 2 more: cpu weight 59 (recorded for /c7) is absent: the cpu controller is not enabled in /'s cgroup.subtree_control at /c7",
		"c7 [105 x1] pid 105: cpu weight 59 (recorded for /c7) is absent: the cpu controller is not enabled in /'s cgroup.subtree_control at /c7/sub",
		"c8 [200 x1] pid 200: cpu weight 59 (recorded for /c8) is absent: the cpu controller is not enabled in /'s cgroup.subtree_control at /c8",
		" [ x7] 7 container processes with recorded limits checked (2 containers running)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The container's first process exits, the loss stays: the same
	// problem for watch, not a new one.
	f.Processes = f.Processes[1:]
	again := JudgeLimits(&f)
	measured := LimitsIntact{}.Meta().Measured
	fs[0].Measured, again[0].Measured = measured, measured
	if fs[0].Identity("limits-intact") != again[0].Identity("limits-intact") {
		t.Errorf("identity changed with the first pid gone:\n%q\n%q", fs[0].Identity("limits-intact"), again[0].Identity("limits-intact"))
	}
	if again[0].Data["pid"] != "101" || again[0].Data["processes"] != "4" {
		t.Errorf("after pid 100 exited: %+v", again[0].Data)
	}
}

func TestJudgeLimitsCouldNotRead(t *testing.T) {
	f := limits.Facts{Unified: true, Containers: 2, Problems: []string{"read limits of c2: boom"}, Processes: []limits.Process{
		{PID: 7, Container: "c1", Wants: limits.Expected(true, limits.Resources{CpuWeight: 59}), Err: "read /proc/7/cgroup: permission denied"}}}
	fs := JudgeLimits(&f)
	if len(fs) != 3 || fs[0].Status != validator.Warn || fs[1].Status != validator.Warn ||
		!strings.Contains(fs[1].Detail, "pid 7: could not read") || fs[2].Data["processes"] != "0" {
		t.Errorf("findings:\n%s", details(fs))
	}
}

func details(fs []validator.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f.Status) + " " + f.Subject + ": " + f.Detail + "\n")
	}
	return b.String()
}

// A container's processes are its init, what its own cgroups list and what
// runs in its pid namespace (the snapshot's attribution): never the other
// members of a foreign cgroup its init escaped into. Here c1's init and
// c2's app escaped into garden.service's cgroup, beside the daemon's own
// processes; each escapee is judged where it is, as its container's, and
// the daemon's processes are no container's (issue 37: on the 10x escaped
// bench cell every escaped init claimed the whole garden.service listing,
// 82,825 "container processes").
func TestLimitsIntactJudgesOnlyTheContainersOwnProcesses(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			daemon := "/system.slice/garden.service"
			h.Add(fakehost.Proc{PID: 50, Comm: "gdn", Cgroup: daemon, Start: 10, MntNS: fakehost.HostMntNS})
			h.Add(fakehost.Proc{PID: 51, PPID: 50, Comm: "gdn", Cgroup: daemon, Start: 11, MntNS: fakehost.HostMntNS})
			res := map[string]any{"memory": 1 << 30}
			limitFile := "memory.max"
			dir := func(cg string) string { return "sys/fs/cgroup" + cg + "/" }
			if mode != cgroup.Unified {
				limitFile = "memory.limit_in_bytes"
				dir = func(cg string) string { return "sys/fs/cgroup/memory" + cg + "/" }
			} else {
				h.Write("sys/fs/cgroup/cgroup.subtree_control", "memory pids\n")
				h.Write("sys/fs/cgroup/system.slice/cgroup.subtree_control", "memory pids\n")
				h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", "memory pids\n")
			}
			h.Write(dir(daemon)+limitFile, "max\n")
			for i, id := range []string{"c1", "c2"} {
				c := garden(id)
				c.Resources = res
				h.RunContainer(c, 100+100*i, 2, 500)
				h.Write(dir(c.Cgroup)+limitFile, "1073741824\n")
			}
			for _, pid := range []int{100, 201} { // c1's init, c2's app
				p := h.Get(pid)
				p.Cgroup, p.In = daemon, nil
				h.Update(p)
			}
			fs := run(t, deps(h), "limits-intact")
			var got []string
			for _, f := range fs {
				if f.Status != validator.Pass {
					got = append(got, f.Subject+" pid "+f.Data["pid"]+" at "+f.Data["cgroup"]+": "+f.Data["found"])
				} else {
					got = append(got, "pass: "+f.Detail)
				}
			}
			want := []string{
				"c1 pid 100 at " + daemon + ": default",
				"c2 pid 201 at " + daemon + ": default",
				"pass: 4 container processes with recorded limits checked (2 containers running)",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("limits-intact:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// cgroup-integrity still names both escapes.
			var esc []string
			for _, f := range failures(run(t, deps(h), "cgroup-integrity")) {
				esc = append(esc, f.Subject+"/"+f.Data["pid"])
			}
			slices.Sort(esc)
			if esc = slices.Compact(esc); strings.Join(esc, ",") != "c1/100,c2/201" {
				t.Errorf("cgroup-integrity escapes: %s", strings.Join(esc, ","))
			}
		})
	}
}
