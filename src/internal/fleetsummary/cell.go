package fleetsummary

import (
	"encoding/json"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Verdict is what an instance's errand run means for the next rollout.
type Verdict string

const (
	OK          Verdict = "ok"            // exit 0: validate passed (warnings allowed)
	Blocked     Verdict = "BLOCKED"       // exit 1: a blocking check failed
	CouldNotRun Verdict = "could not run" // exit 2: cellguard could not validate
	Canceled    Verdict = "canceled"      // above 128: the errand was ended by a signal (bosh-cli's reading)
	Failed      Verdict = "failed"        // any other exit: the errand itself failed
)

// verdictOf reads the errand's exit code, which is validate's
// (jobs/cellguard-validate bin/run; README "Exit codes").
func verdictOf(code int) Verdict {
	switch {
	case code == 0:
		return OK
	case code == 1:
		return Blocked
	case code == 2:
		return CouldNotRun
	case code > 128:
		return Canceled
	}
	return Failed
}

// Check is one check that did not pass on an instance.
type Check struct {
	ID       string           `json:"id"`
	Status   validator.Status `json:"status"`
	Blocking bool             `json:"blocking"`
	Ignored  bool             `json:"ignored,omitempty"`
	Findings int              `json:"findings"`
	Fix      string           `json:"fix,omitempty"`
}

// Cell is one instance of the fleet.
type Cell struct {
	Instance string  `json:"instance"`
	ExitCode int     `json:"exit_code"`
	Verdict  Verdict `json:"verdict"`
	Phase    string  `json:"phase,omitempty"`
	Checks   []Check `json:"checks"`
	// Reason is cellguard's own error line when it could not run.
	Reason string `json:"reason,omitempty"`
	// NoReport: stdout held no JSON report to read checks from (it could
	// not run, or cellguard_validate.format is human).
	NoReport bool `json:"no_report,omitempty"`
	// DrainOutcome is "lifted" when the errand ran with
	// cellguard_validate.phase drain and exited 0 with blocking findings:
	// drain's lift let the VM go.
	DrainOutcome string `json:"drain_outcome,omitempty"`
}

// ReadCell reads one instance's result: the verdict from its exit code,
// the checks from validate's JSON report, the first JSON value on stdout.
// A human report is not read: its lines carry what tenants named, so a
// line in it proves nothing (a comm with a newline once forged a check).
func ReadCell(in Instance) Cell {
	c := Cell{Instance: in.Name, ExitCode: in.ExitCode, Verdict: verdictOf(in.ExitCode), Checks: []Check{}}
	c.NoReport = !readJSONReport(&c, in.Stdout)
	for _, l := range strings.Split(in.Stderr+"\n"+in.Stdout, "\n") {
		// cellguard's own error line: shown, never counted. Nothing a
		// tenant names starts a line (report.Escape, JSON).
		if strings.HasPrefix(l, "cellguard: error: ") {
			c.Reason = strings.TrimPrefix(l, "cellguard: ")
			break
		}
	}
	return c
}

// readJSONReport reads the first JSON value of stdout. With phase drain,
// exit 0 from a blocked report is drain's lift: the VM may go, but not
// because it passed.
func readJSONReport(c *Cell, s string) bool {
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return false
	}
	var rep validator.Report
	if err := json.NewDecoder(strings.NewReader(s)).Decode(&rep); err != nil || len(rep.Results) == 0 {
		return false
	}
	c.Phase = string(rep.Phase)
	if rep.Phase == validator.Drain && rep.Blocked && c.ExitCode == 0 {
		c.DrainOutcome = "lifted"
	}
	for _, r := range rep.Results {
		if r.Status == validator.Pass || r.Status == validator.Skip {
			continue
		}
		c.Checks = append(c.Checks, Check{ID: r.ID, Status: r.Status, Blocking: r.Blocking, Ignored: r.Ignored, Findings: r.Count(), Fix: r.Fix})
	}
	return true
}
