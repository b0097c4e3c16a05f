package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/testkit"
)

// runSummary runs cell.sh's summary program (src/tests/cell/summary.jq) on
// one scenario's recorded expectations, as cell.sh does.
func runSummary(t *testing.T, shape, sc string, recorded []expectation) scenario {
	t.Helper()
	testkit.RequireFile(t, "/usr/bin/jq", "apt-get install jq (make deps)")
	repo := repoRoot(t)
	var lines []string
	for _, e := range recorded {
		b, _ := json.Marshal(e)
		lines = append(lines, string(b))
	}
	f := filepath.Join(t.TempDir(), "expect.jsonl")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("jq", "-s", "--arg", "name", shape+"/"+sc, "--arg", "shape", shape, "--arg", "sc", sc,
		"--slurpfile", "declared", filepath.Join(repo, "src/tests/cell/expectations.json"),
		"-f", filepath.Join(repo, "src/tests/cell/summary.jq"), f).Output()
	if err != nil {
		t.Fatalf("jq: %v", err)
	}
	var s scenario
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return s
}

// A scenario that stopped early (issue 23: cell.sh's old `length > 0 and
// all(.ok)` counted it as ok) fails, each declared expectation it never
// recorded named; one that recorded every declared expectation and held
// them all is ok; an unknown scenario is never ok.
func TestCellSummaryFailsAScenarioThatStoppedEarly(t *testing.T) {
	d := loadDeclared(t, repoRoot(t))
	all := func(shape, sc string) []expectation {
		var es []expectation
		for _, id := range append(append([]string(nil), d.Scenarios[sc]...), d.Shapes[shape]...) {
			es = append(es, expectation{ID: id, OK: true, Detail: "held"})
		}
		return es
	}
	full := all("jammy", "protect")
	cases := []struct {
		name, shape, sc string
		recorded        []expectation
		ok              bool
		missing         []string
	}{
		{"every expectation held", "jammy", "protect", full, true, nil},
		{"stopped after create-env", "jammy", "protect", full[:2], false, []string{"agent-compiled-packages", "vm-gone", "monit-under-runit"}},
		{"the other shape's supervisor", "noble", "protect", full, false, []string{"monit-under-monit"}},
		{"nothing recorded", "jammy", "seed001", nil, false, []string{"real-agent-and-monit", "rc93-blocks-pre-start"}},
		{"undeclared scenario", "jammy", "later", full, false, []string{"declared"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := runSummary(t, tc.shape, tc.sc, tc.recorded)
			if s.OK != tc.ok {
				t.Fatalf("ok %v, want %v: %+v", s.OK, tc.ok, s.Expectations)
			}
			failed := map[string]bool{}
			for _, e := range s.Expectations {
				if !e.OK {
					failed[e.ID] = true
				}
			}
			for _, id := range tc.missing {
				if !failed[id] {
					t.Errorf("%s not failed as never recorded: %+v", id, s.Expectations)
				}
			}
		})
	}
}
