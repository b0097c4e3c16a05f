package fleetsummary

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

const id1 = "cell/0b7c2a4e-5a51-4f1e-9d53-7d1f64a4c001"

// The forms' edges that the fixtures in cli/testdata do not hold: color
// codes, an empty stream, a run canceled by a signal.
func TestParseErrandEdges(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []Instance
	}{
		{"terminal with colors and an empty stdout",
			"\x1b[1mInstance\x1b[0m   " + id1 + "  \n\x1b[1mExit Code\x1b[0m  143  \n\x1b[1mStdout\x1b[0m     -  \n\x1b[1mStderr\x1b[0m     cellguard-validate on x at y  \n             \n\n1 errand(s)\n",
			[]Instance{{Name: id1, ExitCode: 143, Stderr: "cellguard-validate on x at y\n"}}},
		{"pipe with an empty stderr",
			"Task 7 | 10:00:00 | Running errand: cell/0 (00:00:02)\n\n" + id1 + "\t\n0\t\ncellguard validate --phase pre-start: ok\t\n-\t\n\nSucceeded\n",
			[]Instance{{Name: id1, ExitCode: 0, Stdout: "cellguard validate --phase pre-start: ok"}}},
		{"json, another table first",
			`{"Tables":[{"Content":"instances","Rows":[{"instance":"x"}]},{"Content":"errand(s)","Rows":[{"instance":"` + id1 + `","exit_code":"2","stdout":"","stderr":"e"}]}],"Lines":["Exit code 1"]}`,
			[]Instance{{Name: id1, ExitCode: 2, Stderr: "e"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseErrand([]byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The verdict is the errand's exit code, as validate's (0, 1, 2) and as
// bosh-cli reads a signal (above 128).
func TestVerdictOfExitCode(t *testing.T) {
	for code, want := range map[int]Verdict{0: OK, 1: Blocked, 2: CouldNotRun, 3: Failed, 127: Failed, 137: Canceled} {
		if got := ReadCell(Instance{ExitCode: code}).Verdict; got != want {
			t.Errorf("exit %d: %s, want %s", code, got, want)
		}
	}
}

// A fleet of 200 passing cells and one blocked stays on one screen: the
// passing ones are counted past MaxOKShown, the blocked one is listed.
func TestSummaryStaysOnOneScreen(t *testing.T) {
	var ins []Instance
	for i := 0; i < 200; i++ {
		ins = append(ins, Instance{Name: fmt.Sprintf("cell/%036d", i), Stdout: "cellguard validate --phase pre-start: ok\n"})
	}
	ins = append(ins, Instance{Name: "cell/blocked", ExitCode: 1, Stdout: "cellguard validate --phase pre-start: BLOCKED by sysctl-profile\n\n" +
		"STATUS  CHECK           SEVERITY  FINDINGS  TITLE\nFAIL    sysctl-profile  blocking  3         the profile\n\n[FAIL] sysctl-profile (blocking)\n  fix: cellguard sysctl apply\n"})
	s := Summarize(ins)
	var out bytes.Buffer
	if err := Write(&out, s); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"201 instances: 1 BLOCKED, 200 ok",
		"BLOCKED  1     sysctl-profile! 3\n",
		"... and 195 more ok without findings",
		"sysctl-profile (blocks on 1 of 201; 3 findings): cellguard sysctl apply",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n > 15 {
		t.Errorf("%d lines:\n%s", n, got)
	}
	if s.Healthy() {
		t.Error("a blocked cell: not healthy")
	}
}

// With cellguard_validate.phase drain, the errand's stdout is validate's
// report (its stderr) and then drain's decision; a lifted cell passes
// (exit 0) and says so. The JSON report is read though the line follows it.
func TestDrainPhaseReports(t *testing.T) {
	decision := "cellguard validate --phase drain: lifted: blocking findings, lifted by ops until 2026-12-02T16:00:00Z\n"
	human := "cellguard validate --phase drain: BLOCKED by cgroup-integrity\n\nSTATUS  CHECK             SEVERITY  FINDINGS  TITLE\n" +
		"FAIL    cgroup-integrity  blocking  4         container processes\n\n[FAIL] cgroup-integrity (blocking)\n  fix: cellguard validate --fix\n" + decision
	jsonRep := `{"phase":"drain","results":[{"id":"cgroup-integrity","severity":"blocking","status":"fail","blocking":true,` +
		`"findings":[{"status":"fail","detail":"a"},{"status":"fail","detail":"b"}],"fix":"cellguard validate --fix"}],"blocked":true}` + "\n" + decision
	for name, stdout := range map[string]string{"human": human, "json": jsonRep} {
		c := ReadCell(Instance{Name: id1, ExitCode: 0, Stdout: stdout})
		if c.Phase != "drain" || c.DrainOutcome != "lifted" || c.NoReport || len(c.Checks) != 1 || !c.Checks[0].Blocking {
			t.Fatalf("%s: %+v", name, c)
		}
		var out bytes.Buffer
		if err := Write(&out, Summarize([]Instance{{Name: id1, ExitCode: 0, Stdout: stdout}})); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "ok (lifted)  0     cgroup-integrity! ") {
			t.Errorf("%s: summary:\n%s", name, out.String())
		}
	}
}
