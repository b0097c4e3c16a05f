package fleetsummary

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const id1 = "cell/0b7c2a4e-5a51-4f1e-9d53-7d1f64a4c001"

// Only bosh-cli's --json document is read: its terminal and pipe tables
// carry each instance's streams as free text.
func TestParseErrandReadsOnlyJSON(t *testing.T) {
	got, err := ParseErrand([]byte(`{"Tables":[{"Content":"instances","Rows":[{"instance":"x"}]},{"Content":"errand(s)","Rows":[{"instance":"` + id1 + `","exit_code":"2","stdout":"","stderr":"e"}]}],"Lines":["Exit code 1"]}`))
	if err != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", []Instance{{Name: id1, ExitCode: 2, Stderr: "e"}}) {
		t.Fatalf("json, another table first: %+v, %v", got, err)
	}
	for name, in := range map[string]string{
		"terminal": "\x1b[1mInstance\x1b[0m   " + id1 + "  \n\x1b[1mExit Code\x1b[0m  0  \n\x1b[1mStdout\x1b[0m     -  \n",
		"pipe":     id1 + "\t\n0\t\ncellguard validate --phase pre-start: ok\t\n-\t\n\nSucceeded\n",
	} {
		if _, err := ParseErrand([]byte(in)); !errors.Is(err, ErrNotJSON) {
			t.Errorf("%s: %v, want ErrNotJSON", name, err)
		}
	}
	if _, err := ParseErrand([]byte(" \n")); !errors.Is(err, ErrNoErrandTable) {
		t.Errorf("empty: %v", err)
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
	okReport := `{"phase":"pre-start","results":[{"id":"sysctl-profile","status":"pass"}]}`
	for i := 0; i < 200; i++ {
		ins = append(ins, Instance{Name: fmt.Sprintf("cell/%036d", i), Stdout: okReport})
	}
	ins = append(ins, Instance{Name: "cell/blocked", ExitCode: 1, Stdout: `{"phase":"pre-start","blocked":true,"results":[{"id":"sysctl-profile","severity":"blocking","status":"fail","blocking":true,` +
		`"findings":[{"status":"fail"},{"status":"fail"},{"status":"fail"}],"fix":"cellguard sysctl apply"}]}`})
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
// report (its stderr); a cell whose blocking findings a lift let go exits
// 0 with a blocked report, and the summary says so. A human report, and
// the decision line after it, are not read.
func TestDrainPhaseReports(t *testing.T) {
	decision := "cellguard validate --phase drain: lifted: blocking findings, lifted by ops until 2026-12-02T16:00:00Z\n"
	jsonRep := `{"phase":"drain","results":[{"id":"cgroup-integrity","severity":"blocking","status":"fail","blocking":true,` +
		`"findings":[{"status":"fail","detail":"a"},{"status":"fail","detail":"b"}],"fix":"cellguard validate --fix"}],"blocked":true}` + "\n"
	c := ReadCell(Instance{Name: id1, ExitCode: 0, Stdout: jsonRep})
	if c.Phase != "drain" || c.DrainOutcome != "lifted" || c.NoReport || len(c.Checks) != 1 || !c.Checks[0].Blocking {
		t.Fatalf("json: %+v", c)
	}
	var out bytes.Buffer
	if err := Write(&out, Summarize([]Instance{{Name: id1, ExitCode: 0, Stdout: jsonRep}})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ok (lifted)  0     cgroup-integrity! ") {
		t.Errorf("summary:\n%s", out.String())
	}
	human := "cellguard validate --phase drain: BLOCKED by cgroup-integrity\n\nSTATUS  CHECK             SEVERITY  FINDINGS  TITLE\n" +
		"FAIL    cgroup-integrity  blocking  4         container processes\n\n[FAIL] cgroup-integrity (blocking)\n  fix: cellguard validate --fix\n" + decision
	if c := ReadCell(Instance{Name: id1, ExitCode: 0, Stdout: human}); !c.NoReport || len(c.Checks) != 0 || c.DrainOutcome != "" {
		t.Fatalf("human: %+v", c)
	}
}
