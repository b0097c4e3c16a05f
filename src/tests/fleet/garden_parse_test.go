package fleet

import "testing"

// The garden scenario's quiet verdicts count findings read back from watch's
// log and validate's JSON; a parser that saw nothing would make "quiet"
// unfalsifiable, so each is held to real lines (watch.log of fleet run 1 on
// noble, where blkio moved).
func TestWatchContainerFinding(t *testing.T) {
	testCases := []struct {
		name string
		line string
		want bool
	}{
		{"cgroup-integrity finding (noble run 1)", `{"timestamp":"2026-12-03T12:22:02.130585309Z","level":"info","source":"cellguard","message":"cellguard.watch.finding","data":{"check":"cgroup-integrity","data":{"actual":"/","comm":"garden-init","container":"garden/c1","expected":"/garden/c1","hierarchy":"blkio","pid":"1301","runtime":"containerd","state":"/run/containerd/runc/garden/c1/state.json"},"detail":"pid 1301 (garden-init) escaped in blkio: in /, state says /garden/c1","session":"1","status":"fail","subject":"garden/c1","trigger":"unit"}}`, true},
		{"runtime-ghosts finding of a churn container", `{"level":"info","source":"cellguard","message":"cellguard.watch.finding","data":{"check":"runtime-ghosts","subject":"garden/churn3","status":"fail"}}`, true},
		{"a finding of another check", `{"level":"info","source":"cellguard","message":"cellguard.watch.finding","data":{"check":"runtime-versions","subject":"/usr/sbin/runc","status":"warn"}}`, false},
		{"a cleared finding", `{"level":"info","source":"cellguard","message":"cellguard.watch.finding-cleared","data":{"check":"cgroup-integrity","subject":"garden/c1"}}`, false},
		{"not JSON", `cellguard.watch.finding garden/c1`, false},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := watchContainerFinding(tc.line); got != tc.want {
				t.Fatalf("watchContainerFinding = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestDecodeReportAfterMark(t *testing.T) {
	out := `{"op":"list","handles":[],"seconds":0.01}
runc states: 
== cellguard validate
{"phase":"drain","results":[{"id":"runtime-ghosts","status":"warn","findings":[{"subject":"garden/g2","status":"fail","detail":"init pid 3093 is gone"}]}],"blocked":false}
0
`
	rep, err := decodeReport(out)
	if err != nil {
		t.Fatal(err)
	}
	problems, couldNot := containerProblems(rep)
	if len(problems) != 1 || problems[0] != "runtime-ghosts: fail garden/g2: init pid 3093 is gone" {
		t.Fatalf("problems %v", problems)
	}
	// the three other container checks are missing from this report
	if len(couldNot) != 3 {
		t.Fatalf("could not run %v", couldNot)
	}
}

// TestParsePlacements holds garden_v2's placement lines to what
// v2PlacementScript prints (lines as a noble cell of Garden c2d9348 would:
// src/tests/qemu/README.md's measured placements).
func TestParsePlacements(t *testing.T) {
	out := "noise\nplacement|u1|1412|/garden/u1/init|/garden/u1/init|4026532301|4026531836|memory.max=67108864 pids.max=64 cpu.weight=4 io.weight=ABSENT\n" +
		"placement|p1|1500|/system.slice/p1|/system.slice/p1|4026531836|4026531836|memory.max=67108864 pids.max=64 cpu.weight=4 io.weight=100\n" +
		"placement|broken|1|2\n"
	ps := parsePlacements(out)
	if len(ps) != 2 {
		t.Fatalf("placements %v", ps)
	}
	u1, p1 := ps["u1"], ps["p1"]
	if u1.PID != 1412 || u1.At != "/garden/u1/init" || u1.HostPIDNS || u1.PIDNS != "4026532301" || u1.Limits["pids.max"] != "64" || u1.Limits["io.weight"] != "ABSENT" {
		t.Errorf("u1: %+v", u1)
	}
	if !p1.HostPIDNS || p1.Recorded != "/system.slice/p1" || p1.Limits["memory.max"] != "67108864" {
		t.Errorf("p1: %+v", p1)
	}
}

func TestWatchEventTime(t *testing.T) {
	if got := logTime("2026-12-03T12:22:02.5Z"); got != 1796300522.5 {
		t.Errorf("RFC 3339: %f", got)
	}
	if got := logTime("1796300522.25"); got != 1796300522.25 {
		t.Errorf("unix seconds: %f", got)
	}
	if !isContainer("garden/u1", "u1") || !isContainer("u1", "u1") || isContainer("garden/cu1", "u1") {
		t.Error("isContainer")
	}
}
