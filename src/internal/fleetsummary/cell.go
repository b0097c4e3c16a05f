package fleetsummary

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/report"
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
	// NoReport: stdout held no validator report to read checks from.
	NoReport bool `json:"no_report,omitempty"`
	// DrainOutcome is drain's decision when the errand ran with
	// cellguard_validate.phase drain (validate --phase drain's last line):
	// pass, lifted, budget_expired, blocked, could_not_run.
	DrainOutcome string `json:"drain_outcome,omitempty"`
}

// ReadCell reads one instance's result: the verdict from its exit code,
// the checks from the report on stdout (validate's JSON or human form).
func ReadCell(in Instance) Cell {
	c := Cell{Instance: in.Name, ExitCode: in.ExitCode, Verdict: verdictOf(in.ExitCode), Checks: []Check{}}
	var ok bool
	if strings.HasPrefix(strings.TrimSpace(in.Stdout), "{") {
		ok = readJSONReport(&c, in.Stdout)
	} else {
		ok = readHumanReport(&c, in.Stdout)
	}
	c.NoReport = !ok
	for _, l := range strings.Split(in.Stdout, "\n") {
		if m := decisionRE.FindStringSubmatch(l); m != nil {
			c.DrainOutcome = m[1]
		}
	}
	for _, l := range strings.Split(in.Stderr+"\n"+in.Stdout, "\n") {
		if strings.HasPrefix(l, "cellguard: error: ") {
			c.Reason = strings.TrimPrefix(l, "cellguard: ")
			break
		}
	}
	return c
}

// readJSONReport reads the first JSON value: with phase drain, validate's
// decision line follows the report.
func readJSONReport(c *Cell, s string) bool {
	var rep validator.Report
	if err := json.NewDecoder(strings.NewReader(s)).Decode(&rep); err != nil || len(rep.Results) == 0 {
		return false
	}
	c.Phase = string(rep.Phase)
	for _, r := range rep.Results {
		if r.Status == validator.Pass || r.Status == validator.Skip {
			continue
		}
		c.Checks = append(c.Checks, Check{ID: r.ID, Status: r.Status, Blocking: r.Blocking, Ignored: r.Ignored, Findings: report.Count(r), Fix: r.Fix})
	}
	return true
}

// The human report (internal/report human.go): a headline, a table, then
// a section per check that did not pass, ending with its fix.
var (
	headlineRE = regexp.MustCompile(`^cellguard validate --phase (\S+): (ok|BLOCKED)(?: by (.+))?$`)
	rowRE      = regexp.MustCompile(`^(\S+)\s+(\S+)\s+(blocking|warning|info)( \(ignored\))?\s+([0-9]+)\s`)
	sectionRE  = regexp.MustCompile(`^\[(\S+)\] (\S+) \(`)
	// decisionRE is validate --phase drain's decision (cli/validate.go
	// decideDrain): "cellguard validate --phase drain: OUTCOME: reason".
	decisionRE = regexp.MustCompile(`^cellguard validate --phase drain: ([a-z_]+): `)
)

func readHumanReport(c *Cell, s string) bool {
	blocking := map[string]bool{}
	fixes := map[string]string{}
	var section string
	found := false
	var checks []Check
	for _, l := range strings.Split(s, "\n") {
		if m := headlineRE.FindStringSubmatch(l); m != nil {
			found = true
			c.Phase = m[1]
			for _, id := range strings.Split(m[3], ", ") {
				blocking[id] = id != ""
			}
			continue
		}
		if m := rowRE.FindStringSubmatch(l); m != nil && m[1] != "STATUS" {
			st := validator.Status(strings.ToLower(m[1]))
			if st == validator.Pass || st == validator.Skip {
				continue
			}
			n, _ := strconv.Atoi(m[5])
			checks = append(checks, Check{ID: m[2], Status: st, Ignored: m[4] != "", Findings: n})
			continue
		}
		if m := sectionRE.FindStringSubmatch(l); m != nil {
			section = m[2]
			continue
		}
		if fix, ok := strings.CutPrefix(l, "  fix: "); ok && section != "" {
			fixes[section] = fix
		}
	}
	for i := range checks {
		checks[i].Blocking = blocking[checks[i].ID]
		checks[i].Fix = fixes[checks[i].ID]
	}
	if checks != nil {
		c.Checks = checks
	}
	return found || checks != nil
}
