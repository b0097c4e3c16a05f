package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
)

// Issue 22's "today on noble": cellguard quiet across the seed-000 trigger
// and a churn of containers through Garden's API. The churn runs after the
// trigger step and before the verdict step, so watch's log and metrics over
// both are what the verdict step judges.

// gardenChurnRounds is how many containers the churn makes and destroys,
// one bosh ssh each: every bosh ssh login starts a session scope, a systemd
// job after which watch scans, so watch looks between the rounds too.
const gardenChurnRounds = 4

// containerChecks are the checks that judge containers; a finding of theirs
// where nothing escaped is a false positive (as src/tests/garden's).
var containerChecks = []string{"cgroup-integrity", "devices-cgroup", "runtime-ghosts", "stuck-runc-init"}

// gardenChurnStep: after the trigger, rounds of create, a process run to
// its end, a process left running, destroy, each through gclient over bosh
// ssh; then c1 and c2 read again from /proc, and the operator's own `sudo
// cellguard validate --phase drain` over bosh ssh, judged on the container
// checks.
func (f *fleet) gardenChurnStep(ctx context.Context, g *gardenRun) Step {
	return Step{Name: fmt.Sprintf("a churn of %d containers through Garden's API after the trigger (create, run to its end, run, destroy; gclient over bosh ssh)", gardenChurnRounds),
		Expects: []string{"churn-through-garden", "churn-moved-nothing-more", "validate-quiet-on-containers"},
		Do: func(r *Record) error {
			if g.vm.InitPID == "" {
				return fmt.Errorf("no cell with Garden's containers from the steps before")
			}
			var creates, destroys []float64
			rounds := 0
			for i := 1; i <= gardenChurnRounds; i++ {
				h := fmt.Sprintf("churn%d", i)
				cmd := strings.Join([]string{
					"sudo " + gclient("create", "-handle", h, "-rootfs", "/var/vcap/data/garden/rootfs"),
					"sudo " + gclient("run", "-handle", h, "-wait", "--", "sh", "-c", "'echo ok'"),
					"sudo " + gclient("run", "-handle", h, "--", "sleep", "3600"),
					"sudo " + gclient("destroy", "-handle", h),
				}, "; ")
				rows, res, err := f.ssh(ctx, g.cell, cmd)
				if err != nil {
					return err
				}
				ok := 0
				var said []string
				for _, row := range rows {
					for _, res := range gclientResults(row.Stdout) {
						good := res.Error == ""
						switch res.Op {
						case "create":
							creates = append(creates, res.Seconds)
						case "run":
							if res.ExitCode != nil {
								good = good && *res.ExitCode == 0 && strings.TrimSpace(res.Stdout) == "ok"
							}
						case "destroy":
							destroys = append(destroys, res.Seconds)
						}
						if good {
							ok++
						}
						said = append(said, fmt.Sprintf("%s %.2fs%s", res.Op, res.Seconds, errSuffix(res.Error)))
					}
				}
				r.Say("   %s round %d (%s, bosh ssh %s): %s", g.cell, i, h, res.Took.Round(100*time.Millisecond), strings.Join(said, ", "))
				if ok == 4 {
					rounds++
				}
			}
			rows, _, err := f.ssh(ctx, g.cell, "sudo "+gclient("list"))
			if err != nil {
				return err
			}
			var listed []string
			for _, row := range rows {
				for _, res := range gclientResults(row.Stdout) {
					if res.Op == "list" && res.Error == "" {
						listed = res.Handles
					}
				}
			}
			sort.Strings(listed)
			r.Expect("churn-through-garden", rounds == gardenChurnRounds && strings.Join(listed, " ") == strings.Join(g.handles, " "),
				"%d of %d rounds made, ran (exit 0, \"ok\"), ran and destroyed a container (create %s s, destroy %s s); Garden lists %v afterwards",
				rounds, gardenChurnRounds, garden.SecondsRange(creates), garden.SecondsRange(destroys), listed)

			// c1's and c2's processes: the churn must have moved nothing
			// the trigger had not.
			var pids []int
			for _, h := range g.handles {
				pids = append(pids, g.containers[h].PIDs...)
			}
			after, err := procCgroups(ctx, g.vm, pids)
			if err != nil {
				return err
			}
			more, read := 0, 0
			for _, h := range g.handles {
				for _, pid := range g.containers[h].PIDs {
					if _, ok := after[pid]; ok {
						read++
					}
					for ctrl := range movedBetween(g.before[pid], after[pid]) {
						if _, byTrigger := g.moved[h][ctrl]; !byTrigger {
							more++
						}
					}
				}
			}
			r.Expect("churn-moved-nothing-more", read == len(pids) && len(pids) > 0 && more == 0,
				"%d of %d processes of %v read after the churn; %d (pid, hierarchy) pairs moved beyond what the trigger moved (%s)",
				read, len(pids), g.handles, more, describeAllMoved(g.moved))

			// The operator's own validate, as bosh ssh gives a shell.
			rows, _, err = f.ssh(ctx, g.cell, "echo '"+reportMark+"'; sudo "+cellguardBin+" validate --phase drain --format json --log-file /dev/null")
			if err != nil {
				return err
			}
			if len(rows) != 1 {
				return fmt.Errorf("bosh ssh %s: %d rows", g.cell, len(rows))
			}
			rep, err := decodeReport(rows[0].Stdout)
			if err != nil {
				return fmt.Errorf("sudo cellguard validate over bosh ssh on %s (exit %s): %w", g.cell, rows[0].ExitCode, err)
			}
			fs, couldNot := containerProblems(rep)
			r.Say("   sudo cellguard validate --phase drain --format json over bosh ssh (exit %s): blocked %t; %s",
				rows[0].ExitCode, rep.Blocked, checkSummary(rep, containerChecks))
			for i, p := range fs {
				if i < 12 {
					r.Say("      %s", p)
				}
			}
			// Where the trigger moved nothing every container check must
			// pass; where it moved something, cgroup-integrity's escapes of
			// c1 and c2 are the truth and nothing else may be reported.
			anyMoved := false
			for _, m := range g.moved {
				anyMoved = anyMoved || len(m) > 0
			}
			unexplained := 0
			for _, p := range fs {
				if !anyMoved || !strings.HasPrefix(p, "cgroup-integrity:") || !(strings.Contains(p, "/c1") || strings.Contains(p, "/c2")) {
					unexplained++
				}
			}
			r.Expect("validate-quiet-on-containers", len(couldNot) == 0 && unexplained == 0,
				"after the trigger (moved: %s) and the churn, %d findings of %v, %d not explained by what moved; could not run: %v",
				describeAllMoved(g.moved), len(fs), containerChecks, unexplained, couldNot)
			return nil
		}}
}

// reportMark is echoed right before validate in a bosh ssh command whose
// other output may hold JSON too (gclient's lines).
const reportMark = "== cellguard validate"

// decodeReport reads validate's JSON report: the first JSON value after
// reportMark, or after the start when out has no mark; drain's one-line
// verdict may follow it.
func decodeReport(out string) (validator.Report, error) {
	var rep validator.Report
	if _, after, ok := strings.Cut(out, reportMark); ok {
		out = after
	}
	i := strings.Index(out, "{")
	if i < 0 {
		return rep, fmt.Errorf("no JSON report in %q", lastLine(out))
	}
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&rep); err != nil {
		return rep, fmt.Errorf("decode validate's JSON report: %w", err)
	}
	return rep, nil
}

// containerProblems is "check: status subject: detail" for each finding of
// a container check that is not a pass or a skip, and the container checks
// that could not run or are missing from the report (a report without them
// proves nothing).
func containerProblems(rep validator.Report) (problems, couldNotRun []string) {
	return problemsOf(rep, containerChecks)
}

// problemsOf is containerProblems for the checks ids.
func problemsOf(rep validator.Report, ids []string) (problems, couldNotRun []string) {
	seen := map[string]bool{}
	for _, res := range rep.Results {
		if !slices.Contains(ids, res.ID) {
			continue
		}
		seen[res.ID] = true
		if res.Status == validator.Error {
			couldNotRun = append(couldNotRun, res.ID+": "+res.Error)
		}
		for _, f := range res.Findings {
			if f.Status != validator.Pass && f.Status != validator.Skip {
				problems = append(problems, fmt.Sprintf("%s: %s %s: %s", res.ID, f.Status, f.Subject, f.Detail))
			}
		}
	}
	for _, id := range ids {
		if !seen[id] {
			couldNotRun = append(couldNotRun, id+": not in the report")
		}
	}
	return problems, couldNotRun
}

// checkSummary is "id status (n findings)" for each of ids in the report.
func checkSummary(rep validator.Report, ids []string) string {
	var parts []string
	for _, res := range rep.Results {
		if slices.Contains(ids, res.ID) {
			parts = append(parts, fmt.Sprintf("%s %s (%d findings)", res.ID, res.Status, len(res.Findings)))
		}
	}
	return strings.Join(parts, ", ")
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " error: " + e
}

// watchContainerFinding reports whether a line of watch.log is a finding of
// a container check (any container's: the churn's too).
func watchContainerFinding(line string) bool {
	var l struct {
		Message string `json:"message"`
		Data    struct {
			Check string `json:"check"`
		} `json:"data"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(line)), &l) != nil {
		return false
	}
	return strings.HasSuffix(l.Message, ".finding") && slices.Contains(containerChecks, l.Data.Check)
}

// gardenDelegateStep: every cell's garden.service is as garden_ctl wrote
// it, with no drop-in of cellguard's: the addon delegates nothing of
// Garden's (noble's nspawn box, hybrid with systemd 255, needed
// cellguard.delegate_units for v1 blkio; noble is a QEMU VM on v2 now, and
// the fleet's README keeps what that box measured).
func (f *fleet) gardenDelegateStep(ctx context.Context) Step {
	return Step{Name: "garden.service as garden_ctl wrote it (no drop-in of cellguard's)",
		Expects: []string{"garden-service-delegation"},
		Do: func(r *Record) error {
			order, err := f.cellOrder(ctx)
			if err != nil {
				return err
			}
			as := 0
			for _, c := range order {
				vm, err := f.vm(c)
				if err != nil {
					return err
				}
				show, err := vm.Exec(ctx, "systemctl", "show", "garden.service", "-p", "DelegateControllers", "-p", "DropInPaths")
				if err != nil {
					return err
				}
				kv := keyValues(show)
				r.Say("   %s: garden.service DelegateControllers=%s DropInPaths=%s", c, kv["DelegateControllers"], kv["DropInPaths"])
				if !strings.Contains(kv["DropInPaths"], "cellguard") {
					as++
				}
			}
			r.Expect("garden-service-delegation", as == len(order) && len(order) == 3,
				"%s (systemd %d): %d of %d cells' garden.service as garden_ctl wrote it, no drop-in of cellguard's", f.shape.name, f.shape.systemd, as, len(order))
			return nil
		}}
}
