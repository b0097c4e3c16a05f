package cli

import (
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// The validate reports the fleet-summary fixtures carry are validate's own
// output on fakehost cells, kept current here: spec/jobs's errand test runs
// them through the rendered errand and bosh-cli's own run-errand output code
// into testdata/fleetsummary/errand-*.
func TestFleetSummaryValidateReports(t *testing.T) {
	cases := []struct {
		name    string
		phase   string
		escaped bool
		code    int
	}{
		{name: "ok", phase: "pre-start", code: ExitOK},
		{name: "blocked", phase: "pre-start", escaped: true, code: ExitFailed},
	}
	for _, tc := range cases {
		for _, format := range []string{"human", "json"} {
			t.Run(tc.name+"-"+format, func(t *testing.T) {
				h := cell(t)
				if tc.escaped {
					escape(h)
					h.Kill(200) // c2's init is gone: a ghost, a warning
				}
				code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", tc.phase, "--format", format)
				if code != tc.code {
					t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
				}
				testkit.Golden(t, "fleetsummary/validate-"+tc.name+"."+format, []byte(stable(out, h.Root)), *update)
			})
		}
	}
}

var (
	durationRE  = regexp.MustCompile(`"duration_seconds": [0-9.e-]+`)
	generatedRE = regexp.MustCompile(`"generated_at": "[^"]+"`)
)

// stable replaces what changes from run to run (the fixture root, each
// check's wall time, the report's time) with fixed values.
func stable(out, root string) string {
	out = strings.ReplaceAll(out, root, "")
	out = durationRE.ReplaceAllString(out, `"duration_seconds": 0.001`)
	return generatedRE.ReplaceAllString(out, `"generated_at": "2026-12-02T14:00:00Z"`)
}
