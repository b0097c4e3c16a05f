package qemu

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// CELLGUARD_BEFORE_REV=e18d83e (the commit cgroup-topology was added on
// top of) also runs that commit's cellguard, for before/after evidence.

// TestNobleTopology is issue 37 item 3's internal process on a real noble
// VM: a runc container at /garden/t1 with its init inside, then `+pids`
// written into /garden/t1's cgroup.subtree_control. The kernel allows it
// (pids is a threaded controller: cgroup_vet_subtree_control_enable) and
// refuses `+memory` after it (EBUSY), so nothing below the init can be
// memory-limited. validate's cgroup-topology must name /garden/t1 and the
// init's pid; the cellguard before the check had nothing to say.
func TestNobleTopology(t *testing.T) {
	t.Parallel()
	qemuvm.RequireImage(t)
	g, before := bootWithCellguard(t)
	g.bundle()
	g.run("t1", "/garden/t1")
	init := strings.TrimSpace(g.sh(`runc state t1 | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'`))
	if got := topologyProblems(&g, guestBin, "with t1 as runc made it"); len(got) != 0 {
		t.Fatalf("before +pids: %q", got)
	}
	layoutTruth(&g)

	sc := "/sys/fs/cgroup/garden/t1/cgroup.subtree_control"
	g.sh("echo +pids > " + sc)
	t.Logf("+memory into %s with the init inside: %s", sc, g.sh("echo +memory > "+sc+" 2>&1 || true; cat "+sc))
	if before {
		topologyProblems(&g, guestBefore, "after +pids")
	}
	got := topologyProblems(&g, guestBin, "after +pids")
	// With a process inside and a threaded controller enabled, the kernel
	// makes /garden/t1 a thread root (cgroup_is_thread_root): the type
	// finding comes with the internal process's (measured here).
	want := []string{"warn /garden/t1 type=domain threaded pids= subtree_control=", "warn /garden/t1 type= pids=" + init + " subtree_control=pids"}
	if !slices.Equal(got, want) {
		t.Fatalf("cgroup-topology found %q, want %q", got, want)
	}
}

// topologyProblems runs bin's validate and returns cgroup-topology's
// problems as "status cgroup type=... pids=... subtree_control=...", logging the
// whole result.
func topologyProblems(g *guest, bin, step string) []string {
	g.t.Helper()
	rep, res := g.validate(bin)
	var got, details []string
	found := false
	for _, r := range rep.Results {
		if r.ID != "cgroup-topology" {
			continue
		}
		found = true
		for _, f := range r.Findings {
			details = append(details, f.Status+" "+f.Subject+": "+f.Detail)
			if f.Status == "fail" || f.Status == "warn" {
				got = append(got, f.Status+" "+f.Data["cgroup"]+" type="+f.Data["type"]+" pids="+f.Data["pids"]+" subtree_control="+f.Data["subtree_control"])
			}
		}
	}
	g.t.Logf("%s: %s validate exit %d, cgroup-topology in the report: %v\n%s", step, bin, res.Exit, found, strings.Join(details, "\n"))
	if bin == guestBefore && found {
		g.t.Errorf("the cellguard before cgroup-topology (%s) has it", beforeRev())
	}
	if bin == guestBin && !found {
		g.t.Fatalf("no cgroup-topology in the report")
	}
	return got
}

// layoutTruth is issue 37 item 8 on the noble VM: validate's report says
// which layouts each check judges; the one that judges only v1 devices
// lists (devices-cgroup) is a skip whose one finding says it is not
// applicable on cgroup v2, and no finding of any check tells of something
// only v1's systemd does (moving processes out) on this v2 host.
func layoutTruth(g *guest) {
	g.t.Helper()
	rep, res := g.validate(guestBin)
	var lines []string
	for _, r := range rep.Results {
		lines = append(lines, fmt.Sprintf("%s=%s layouts=%s", r.ID, r.Status, strings.Join(r.Layouts, ",")))
		if r.Error != "" {
			lines = append(lines, "    could not judge: "+r.Error)
		}
		if len(r.Layouts) == 0 {
			g.t.Errorf("%s names no layouts", r.ID)
		}
		judges := slices.Contains(r.Layouts, "unified")
		for _, f := range r.Findings {
			if strings.Contains(f.Detail, "moving them out") || strings.Contains(f.Detail, "moves processes") {
				g.t.Errorf("%s on cgroup v2 tells of moving processes: %s %s: %s", r.ID, f.Status, f.Subject, f.Detail)
			}
			if !judges {
				lines = append(lines, "    "+f.Status+" "+f.Subject+": "+f.Detail)
			}
		}
		if judges {
			continue
		}
		if r.Status != "skip" || len(r.Findings) != 1 || r.Findings[0].Status != "skip" || r.Findings[0].Data["kind"] != "not-applicable" ||
			r.Findings[0].Data["cgroup_mode"] != "unified" || !strings.HasPrefix(r.Findings[0].Detail, "not applicable on cgroup v2 (unified)") {
			g.t.Errorf("%s (layouts %v) on the noble VM: %s %+v; want one not-applicable skip", r.ID, r.Layouts, r.Status, r.Findings)
		}
	}
	g.t.Logf("layouts on the noble VM (validate exit %d):\n%s", res.Exit, strings.Join(lines, "\n"))
	for _, id := range []string{"devices-cgroup"} {
		found := false
		for _, r := range rep.Results {
			found = found || r.ID == id && !slices.Contains(r.Layouts, "unified")
		}
		if !found {
			g.t.Errorf("%s is not in the report as a check that does not judge v2", id)
		}
	}
}
