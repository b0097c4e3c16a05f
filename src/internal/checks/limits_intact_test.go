package checks

import (
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/limits"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
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
