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
