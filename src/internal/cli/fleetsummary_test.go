package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runFleetSummaryCLI(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, append([]string{"fleet-summary"}, args...))
	return code, out.String(), errb.String()
}

// The fixtures are bosh-cli v7.9.12's run-errand output for a three-cell
// fleet, made by spec/jobs TestErrandOutputFixtures from the rendered
// errand and bosh-cli's own output code (not from a director run yet).
// fleet-summary reads the --json form with validate's JSON report (the
// errand's default); of a human report it counts nothing but the exit
// codes, and a terminal's table it refuses.
func TestFleetSummaryReadsOnlyTheJSONForm(t *testing.T) {
	const (
		blocked = "cell/0b7c2a4e-5a51-4f1e-9d53-7d1f64a4c001"
		ok      = "cell/6e3f9c2d-1b8a-4c47-8e0f-2a9d5b7c0002"
		cantRun = "cell/a91d4f60-3c2e-4b8d-b7a1-5e6f8d9c0003"
	)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata/fleetsummary", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	code, out, errOut := runFleetSummaryCLI(t, read("errand-mixed-json.json"))
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1 (a cell is blocked)\n%s%s", code, out, errOut)
	}
	mustContainAll(t, "summary", out,
		"cellguard fleet-summary: 3 instances: 1 BLOCKED, 1 could not run, 1 ok\n",
		blocked+"  BLOCKED        1     cgroup-integrity! 2, runtime-ghosts 1\n",
		cantRun+"  could not run  2     error: open /empty/proc: no such file or directory\n",
		ok+"  ok             0     -\n",
		"cgroup-integrity (blocks on 1 of 3; 2 findings): Run `cellguard validate --fix` to move",
		"runtime-ghosts (warns on 1 of 3; 1 findings): For a ghost state, `runc --root <root> delete --force <id>`",
		"not validated (1 of 3):")
	if lines := strings.Count(out, "\n"); lines > 24 {
		t.Errorf("%d lines: not one screen\n%s", lines, out)
	}

	code, out, errOut = runFleetSummaryCLI(t, read("errand-mixed-human.json"))
	if code != ExitFailed {
		t.Fatalf("human report: exit %d, want 1 (a cell is blocked)\n%s%s", code, out, errOut)
	}
	mustContainAll(t, "summary of human reports", out,
		"cellguard fleet-summary: 3 instances: 1 BLOCKED, 1 could not run, 1 ok\n",
		blocked+"  BLOCKED        1     (no JSON report on stdout)\n",
		"2 of 3 printed no JSON report, so their checks are not counted")
	if strings.Contains(out, "cgroup-integrity") {
		t.Errorf("checks counted from a human report:\n%s", out)
	}

	code, out, errOut = runFleetSummaryCLI(t, read("errand-mixed-json.tty"))
	if code != ExitCantRun || !strings.Contains(errOut, "not bosh --json output") || !strings.Contains(errOut, "hint: give it the whole output of bosh -d DEPLOYMENT --json run-errand") {
		t.Fatalf("terminal table: exit %d, want 2 and the hint\n%s%s", code, out, errOut)
	}
}

// Real output: bosh --json run-errand cellguard-validate on the director
// (v283.0.0, bosh-cli v7.9.12) with three jammy cells, as the fleet test
// ran it at 14:40 (its log, kept as is), when the errand's format was
// human. Every cell passed: the fleet passes, and the summary says their
// checks are not counted.
func TestFleetSummaryOfADirectorRun(t *testing.T) {
	code, out, errOut := runFleetSummaryCLI(t, nil, "testdata/fleetsummary/director-jammy-3cells.json")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0 (every cell passed)\n%s%s", code, out, errOut)
	}
	mustContainAll(t, "summary", out,
		"cellguard fleet-summary: 3 instances: 3 ok\n",
		"cell/3ff3f922-3e1a-4e40-885f-f8287637c86d  ok       0     (no JSON report on stdout)\n",
		"3 of 3 printed no JSON report")
}

// --json carries every instance with its checks and fixes, for tools.
func TestFleetSummaryJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/fleetsummary/errand-mixed-json.json")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runFleetSummaryCLI(t, b, "--json")
	if code != ExitFailed {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var s struct {
		Cells []struct {
			Instance, Verdict, Phase string
			Checks                   []struct {
				ID       string
				Blocking bool
				Findings int
			}
		}
		Counts map[string]int
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(s.Cells) != 3 || s.Counts["BLOCKED"] != 1 || s.Counts["ok"] != 1 || s.Counts["could not run"] != 1 {
		t.Fatalf("%+v", s)
	}
	first := s.Cells[0]
	if first.Verdict != "BLOCKED" || first.Phase != "pre-start" || len(first.Checks) != 2 || first.Checks[0].ID != "cgroup-integrity" || !first.Checks[0].Blocking || first.Checks[0].Findings != 2 {
		t.Fatalf("blocked cell: %+v", first)
	}
}

// Input that is not run-errand's result is refused with a hint, exit 2; a
// fleet that passed everywhere exits 0.
func TestFleetSummaryExitCodes(t *testing.T) {
	okReport, err := os.ReadFile("testdata/fleetsummary/validate-ok.json")
	if err != nil {
		t.Fatal(err)
	}
	okOnly := string(boshJSON(t, 0, string(okReport)))
	cases := []struct {
		name  string
		input string
		code  int
		want  string
	}{
		{"empty", "", ExitCantRun, "no bosh run-errand result table"},
		{"another command", "Using environment '10.244.0.2' as client 'admin'\n\nName  Release(s)\ncf    cellguard/0+dev.1\n", ExitCantRun, "hint: give it the whole output"},
		{"another --json command", `{"Tables":[{"Content":"instances","Rows":[]}]}`, ExitCantRun, "no bosh run-errand result table"},
		{"broken json", "{\"Tables\": [", ExitCantRun, "parse bosh --json output"},
		{"all ok", okOnly, ExitOK, "1 instances: 1 ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runFleetSummaryCLI(t, []byte(tc.input))
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}
