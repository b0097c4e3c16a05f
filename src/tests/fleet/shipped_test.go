package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
)

// The shipped runtime config on the fleet (issue 39: "what ships is what
// was tested"): manifests/runtime-config.yml with the shipped
// cellguard-release-url.yml, as an operator uploads it, and the fleet's
// test-only settings in one ops file (manifests/shipped-addon-ops.yml).
// runtime-versions blocks pre-start as shipped: nothing is ignored. The
// cells' runc is real, at the path the shipped file names, one pinned
// version per deploy (runc_test.go).

const (
	// shippedRunc is where the shipped manifests' validator.runtime_binaries
	// look for runc (garden-runc-release's package).
	shippedRunc = "/var/vcap/packages/runc/bin/runc"
	// runcClean matches no shipped advisory: the newest runc ranges of
	// `cellguard advisories` end below it (CVE-2026-41579 at 1.3.6).
	runcClean = "1.3.7"
	// runcHazard's advisory is a hazard whose condition holds on the
	// fleet's cells: before rc91 `runc update` denied every device on a v1
	// devices cgroup, and the jammy VMs are hybrid (cgroup v1 devices).
	runcHazard, hazardAdvisory = "1.0.0-rc90", "runc-devices-update-deny-all"
	// runcCVE is affected by security advisories only, Leaky Vessels among
	// them, and by no hazard.
	runcCVE, cveAdvisory = "1.1.11", "CVE-2024-21626"

	shippedAddonOps = "src/tests/fleet/manifests/shipped-addon-ops.yml"
	fleetRuncOps    = "src/tests/fleet/manifests/fleet-runc-ops.yml"
	preStartLog     = "/var/vcap/sys/log/cellguard/pre-start.stdout.log"
)

// shippedOn: the shipped runtime config includes ubuntu-jammy and
// ubuntu-noble stemcells only (include.stemcell), so xenial has no lane.
func shippedOn(sh shape) bool { return sh.name == "jammy" || sh.name == "noble" }

// shippedRollOut sets the lane's runtime config to the shipped one (with
// blocking_advisories promoting promote, when any) and deploys the lane's
// cells with runc VERSION where the shipped file looks for it.
func (f *fleet) shippedRollOut(ctx context.Context, r *Record, version string, promote []string) (boshlab.Result, error) {
	if _, err := f.runcRelease(ctx, r, version); err != nil {
		return boshlab.Result{}, err
	}
	urlVars, err := f.releaseURLVars()
	if err != nil {
		return boshlab.Result{}, err
	}
	args := []string{"update-runtime-config", "--name", "cellguard-" + f.dep,
		filepath.Join(f.repo, "manifests/runtime-config.yml"),
		"-o", filepath.Join(f.repo, "manifests/operations/cellguard-release-url.yml"),
		"-o", filepath.Join(f.repo, shippedAddonOps)}
	if len(promote) > 0 {
		vars := filepath.Join(f.work, fmt.Sprintf("promoted-%s-%s.yml", f.dep, strings.Join(promote, "-")))
		b, _ := json.Marshal(map[string][]string{"promoted_advisories": promote})
		if err := os.WriteFile(vars, b, 0o600); err != nil {
			return boshlab.Result{}, err
		}
		args = append(args, "-o", filepath.Join(f.repo, "src/tests/fleet/manifests/shipped-promote-ops.yml"), "-l", vars)
	}
	args = append(append(append(args, f.vars...), urlVars...), "-v", "garden_release="+f.gardenJob)
	if _, err := f.bosh.MustRun(ctx, args...); err != nil {
		return boshlab.Result{}, err
	}
	res, err := f.deployVars(ctx, []string{"-v", "runc_version=" + version}, fleetRuncOps)
	if err != nil {
		return res, err
	}
	sayTask(r, fmt.Sprintf("bosh deploy (runc %s, blocking_advisories %v)", version, promote), res)
	if res.ExitCode == 0 {
		f.storeRunc(ctx, r, version)
	}
	return res, nil
}

// logSize is the size of a log in the VM (0 when there is none): what a
// later read skips, as the agent appends every run's output.
func logSize(ctx context.Context, vm VM, path string) int {
	out, err := vm.Exec(ctx, "stat", "-c", "%s", path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// logSince is what was appended to a log in the VM after its first n bytes.
func logSince(ctx context.Context, vm VM, path string, n int) string {
	out, _ := vm.Exec(ctx, "tail", "-c", fmt.Sprintf("+%d", n+1), path)
	return out
}

// linesWith are report's lines that contain any of words, trimmed.
func linesWith(report string, words ...string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
	}
	return out
}

// validateReport is what the scenarios read of validate's JSON report.
type validateReport struct {
	Phase   string `json:"phase"`
	Blocked bool   `json:"blocked"`
	Results []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Blocking bool   `json:"blocking"`
		Ignored  bool   `json:"ignored"`
		Findings []struct {
			Subject string            `json:"subject"`
			Status  string            `json:"status"`
			Detail  string            `json:"detail"`
			Data    map[string]string `json:"data"`
		} `json:"findings"`
	} `json:"results"`
}

// advisoryFinding is runtime-versions' finding of advisory id on the
// binary at path in a report: its status and detail, ok false when none.
func (v validateReport) advisoryFinding(path, id string) (status, detail string, ok bool) {
	for _, res := range v.Results {
		if res.ID != "runtime-versions" {
			continue
		}
		for _, fd := range res.Findings {
			if fd.Subject == path && fd.Data["advisory"] == id {
				return fd.Status, fd.Detail, true
			}
		}
	}
	return "", "", false
}

// runtimeVersions is the runtime-versions result of a report: status,
// whether it blocks, and its problem findings as lines.
func (v validateReport) runtimeVersions() (status string, blocking bool, problems []string) {
	for _, res := range v.Results {
		if res.ID != "runtime-versions" {
			continue
		}
		for _, fd := range res.Findings {
			if fd.Status == "warn" || fd.Status == "fail" || fd.Status == "error" {
				problems = append(problems, fmt.Sprintf("%s %s: %s", fd.Status, fd.Subject, fd.Detail))
			}
		}
		return res.Status, res.Blocking, problems
	}
	return "absent", false, nil
}

// shippedErrand runs the shipped addon's errand (the test ops file's
// wiring, shipped-addon-ops.yml says why) on the lane's one cell and reads
// its report and cellguard fleet-summary --json of bosh-cli's --json.
func (f *fleet) shippedErrand(ctx context.Context, r *Record) (rep validateReport, verdict string, res boshlab.Result, err error) {
	rows, res, err := f.errand(ctx)
	if err != nil {
		return rep, "", res, err
	}
	for _, row := range rows {
		r.Say("      %s exit %s: %s", row.Instance, row.ExitCode, reportLine(row.Stdout))
		if strings.HasPrefix(row.Instance, "cell/") {
			if jerr := json.NewDecoder(strings.NewReader(row.Stdout)).Decode(&rep); jerr != nil {
				return rep, "", res, fmt.Errorf("the errand's report on %s: %w", row.Instance, jerr)
			}
		}
	}
	js, serr := f.fleetSummary(ctx, res.Stdout, true)
	var sum struct {
		Cells []struct {
			Instance string `json:"instance"`
			Verdict  string `json:"verdict"`
			Checks   []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"checks"`
		} `json:"cells"`
	}
	if jerr := json.Unmarshal([]byte(js), &sum); jerr != nil || len(sum.Cells) != 1 {
		return rep, "", res, fmt.Errorf("cellguard fleet-summary --json: %v %v: %s", serr, jerr, firstLine(js))
	}
	c := sum.Cells[0]
	rv := "absent"
	for _, ch := range c.Checks {
		if ch.ID == "runtime-versions" {
			rv = ch.Status
		}
	}
	verdict = fmt.Sprintf("%s %s (runtime-versions %s)", c.Instance, c.Verdict, rv)
	r.Say("   bosh --json run-errand cellguard-validate | cellguard fleet-summary --json: %s", verdict)
	return rep, verdict, res, nil
}

// canaryRollOut is a shipped rollout on the lane's one cell (the canary)
// and what that deploy appended to the cell's pre-start report (the agent
// appends every run's output).
type canaryRollOut struct {
	res    boshlab.Result
	canary string
	vm     VM
	report string
}

// onTheCanary is shippedRollOut on the lane's one cell, with its report.
func (f *fleet) onTheCanary(ctx context.Context, r *Record, version string, promote []string) (canaryRollOut, error) {
	order, err := f.cellOrder(ctx)
	if err != nil {
		return canaryRollOut{}, err
	}
	vm, err := f.vm(order[0])
	if err != nil {
		return canaryRollOut{}, err
	}
	from := logSize(ctx, vm, preStartLog)
	res, err := f.shippedRollOut(ctx, r, version, promote)
	if err != nil {
		return canaryRollOut{}, err
	}
	return canaryRollOut{res: res, canary: order[0], vm: vm, report: logSince(ctx, vm, preStartLog, from)}, nil
}

// preStartBlocked reads a blocked deploy of the lane's one cell: the task
// stopped at the canary's pre-start, and what that pre-start's report says
// about advisory id at the shipped runc. Records the three expectations
// prefix-blocked, prefix-at-canary and prefix-report.
func (f *fleet) preStartBlocked(r *Record, prefix, id string, ro canaryRollOut) {
	res, canary := ro.res, ro.canary
	lines := strings.Join(taskLines(res.Output), "\n")
	up := updated(res.Output)
	r.Expect(prefix+"-blocked", res.ExitCode != 0, "bosh deploy exited %d", res.ExitCode)
	r.Expect(prefix+"-at-canary", len(up) == 1 && up[0] == canary && strings.Contains(lines, "(canary)") && strings.Contains(lines, "pre-start"),
		"the task updated %v (the canary %s) and failed in pre-start: %t", up, canary, strings.Contains(lines, "pre-start"))
	r.Say("   %s: this deploy's pre-start report (%s), its verdict and the advisory's lines:", canary, preStartLog)
	named := linesWith(ro.report, "cellguard validate --phase", id)
	for _, l := range named {
		r.Say("      %s", l)
	}
	verdict := verdictLine(ro.report)
	cites := false
	for _, l := range named {
		cites = cites || strings.HasPrefix(l, shippedRunc+": "+id)
	}
	r.Expect(prefix+"-report", strings.Contains(verdict, "BLOCKED by runtime-versions") && cites,
		"the canary's pre-start report %q names %s at %s: %t", verdict, id, shippedRunc, cites)
}

// shippedScenario: the shipped runtime config deployed onto the lane's
// cell with a runc no advisory names; runtime-versions blocks pre-start as
// shipped and stays quiet; the errand the test ops file wires runs, and
// fleet-summary reads bosh-cli's --json.
func (f *fleet) shippedScenario(ctx context.Context) Scenario {
	return Scenario{Name: "the shipped runtime config", Steps: []Step{
		{Name: "bosh update-runtime-config manifests/runtime-config.yml (shipped, with cellguard-release-url.yml and the fleet's ops file); bosh deploy with runc " + runcClean,
			Expects: []string{"shipped-deploy-succeeds", "shipped-config-on-cell", "shipped-runc-on-cell"},
			Do: func(r *Record) error {
				res, err := f.shippedRollOut(ctx, r, runcClean, nil)
				if err != nil {
					return err
				}
				r.Expect("shipped-deploy-succeeds", res.ExitCode == 0, "bosh deploy of %d cell exited %d after %s", f.cells, res.ExitCode, res.Took.Round(time.Second))
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				vm, err := f.vm(order[0])
				if err != nil {
					return err
				}
				out, err := vm.Exec(ctx, "cat", cellguardConfig)
				if err != nil {
					return err
				}
				var c struct {
					Validator struct {
						Ignore             []string            `json:"ignore"`
						Blocking           map[string][]string `json:"blocking"`
						BlockingAdvisories []string            `json:"blocking_advisories"`
						RuntimeBinaries    map[string]string   `json:"runtime_binaries"`
					} `json:"validator"`
				}
				if err := json.Unmarshal([]byte(out), &c); err != nil {
					return fmt.Errorf("%s on %s: %w", cellguardConfig, order[0], err)
				}
				v := c.Validator
				r.Say("   %s: %s: ignore %v, blocking %v, blocking_advisories %v, runtime_binaries %v", order[0], cellguardConfig, v.Ignore, v.Blocking, v.BlockingAdvisories, v.RuntimeBinaries)
				r.Expect("shipped-config-on-cell", len(v.Ignore) == 0 && strings.Contains(strings.Join(v.Blocking["pre-start"], " "), "runtime-versions") &&
					len(v.BlockingAdvisories) == 0 && v.RuntimeBinaries["runc"] == shippedRunc,
					"the cell runs the shipped addon: nothing ignored, runtime-versions blocks pre-start, no advisory promoted, runc at %s", shippedRunc)
				got := runcVersionIn(ctx, vm, shippedRunc)
				r.Expect("shipped-runc-on-cell", got == "runc version "+runcClean, "%s --version on the cell: %q", shippedRunc, got)
				return nil
			}},
		{Name: "bosh run-errand cellguard-validate (the shipped addon's errand), and cellguard fleet-summary --json of its output",
			Expects: []string{"shipped-errand-runs", "shipped-runtime-versions-quiet"},
			Do: func(r *Record) error {
				rep, verdict, res, err := f.shippedErrand(ctx, r)
				if err != nil {
					return err
				}
				r.Expect("shipped-errand-runs", res.ExitCode == 0 && strings.Contains(verdict, " ok ") && !rep.Blocked,
					"the errand exited %d after %s; fleet-summary: %s", res.ExitCode, res.Took.Round(100*time.Millisecond), verdict)
				status, blocking, problems := rep.runtimeVersions()
				for i, p := range problems {
					if i == 4 {
						r.Say("      runtime-versions: ... and %d more", len(problems)-i)
						break
					}
					r.Say("      runtime-versions: %s", p)
				}
				_, _, onShipped := rep.advisoryFindingAny(shippedRunc)
				r.Expect("shipped-runtime-versions-quiet", !blocking && status != "fail" && status != "error" && !onShipped,
					"runtime-versions %s, blocking %t, %d findings to report (none on %s: %t)", status, blocking, len(problems), shippedRunc, !onShipped)
				return nil
			}},
	}}
}

// advisoryFindingAny: whether any advisory finding names the binary at path.
func (v validateReport) advisoryFindingAny(path string) (status, id string, ok bool) {
	for _, res := range v.Results {
		if res.ID != "runtime-versions" {
			continue
		}
		for _, fd := range res.Findings {
			if fd.Subject == path && fd.Data["advisory"] != "" {
				return fd.Status, fd.Data["advisory"], true
			}
		}
	}
	return "", "", false
}

// hazardScenario: runc 1.0.0-rc90 (devices deny-all, a hazard whose
// condition, a v1 devices hierarchy, holds on a hybrid cell) on the cell:
// the shipped addon's pre-start blocks the canary naming the advisory, and
// the remedy (runc 1.3.7) deploys.
func (f *fleet) hazardScenario(ctx context.Context) Scenario {
	return Scenario{Name: "a hazard blocks the canary", Steps: []Step{
		{Name: "bosh deploy with runc " + runcHazard + " (" + hazardAdvisory + ")", Expects: []string{"hazard-blocked", "hazard-at-canary", "hazard-report"},
			Do: func(r *Record) error {
				ro, err := f.onTheCanary(ctx, r, runcHazard, nil)
				if err != nil {
					return err
				}
				f.preStartBlocked(r, "hazard", hazardAdvisory, ro)
				return nil
			}},
		{Name: "the remedy: runc " + runcClean, Expects: []string{"hazard-remedy-completes"},
			Do: func(r *Record) error {
				res, err := f.shippedRollOut(ctx, r, runcClean, nil)
				if err != nil {
					return err
				}
				r.Expect("hazard-remedy-completes", res.ExitCode == 0, "bosh deploy with runc %s exited %d after %s", runcClean, res.ExitCode, res.Took.Round(time.Second))
				return nil
			}},
	}}
}

// cveScenario: runc 1.1.11 (CVE-2024-21626 and other security advisories,
// no hazard): the deploy completes, pre-start's report and the errand warn;
// promoted in cellguard.validator.blocking_advisories, the same runc
// blocks the canary; with runc 1.3.7 at the shipped path the promotion
// still blocks, on the stemcell's own runc (PATH).
func (f *fleet) cveScenario(ctx context.Context) Scenario {
	return Scenario{Name: "a CVE reports without blocking", Steps: []Step{
		{Name: "bosh deploy with runc " + runcCVE + " (" + cveAdvisory + ")", Expects: []string{"cve-deploy-completes", "cve-pre-start-warns", "cve-errand-warns"},
			Do: func(r *Record) error {
				ro, err := f.onTheCanary(ctx, r, runcCVE, nil)
				if err != nil {
					return err
				}
				res, report := ro.res, ro.report
				r.Expect("cve-deploy-completes", res.ExitCode == 0, "bosh deploy with runc %s exited %d after %s", runcCVE, res.ExitCode, res.Took.Round(time.Second))
				r.Say("   %s: this deploy's pre-start report (%s), its verdict and %s's lines:", ro.canary, preStartLog, cveAdvisory)
				named := linesWith(report, "cellguard validate --phase", cveAdvisory)
				warned := false
				for _, l := range named {
					r.Say("      %s", l)
					warned = warned || strings.HasPrefix(l, shippedRunc+": "+cveAdvisory+" (security)")
				}
				r.Expect("cve-pre-start-warns", verdictLine(report) == "cellguard validate --phase pre-start: ok" && warned,
					"pre-start %q, and it names %s at %s: %t", verdictLine(report), cveAdvisory, shippedRunc, warned)
				rep, verdict, _, err := f.shippedErrand(ctx, r)
				if err != nil {
					return err
				}
				status, detail, ok := rep.advisoryFinding(shippedRunc, cveAdvisory)
				r.Say("   the errand's report, runtime-versions on %s: %s %s", shippedRunc, status, detail)
				r.Expect("cve-errand-warns", ok && status == "warn" && !rep.Blocked && strings.Contains(verdict, " ok "),
					"the errand's finding of %s is %q, report blocked %t; fleet-summary: %s", cveAdvisory, status, rep.Blocked, verdict)
				return nil
			}},
		{Name: "the operator promotes " + cveAdvisory + " (cellguard.validator.blocking_advisories); bosh deploy", Expects: []string{"promoted-blocked", "promoted-at-canary", "promoted-report"},
			Do: func(r *Record) error {
				ro, err := f.onTheCanary(ctx, r, runcCVE, []string{cveAdvisory})
				if err != nil {
					return err
				}
				f.preStartBlocked(r, "promoted", cveAdvisory, ro)
				return nil
			}},
		// Fleet run 1: this deploy was expected to complete and stopped at
		// the canary's pre-start. runtime-versions judges every runc on the
		// cell, PATH's too, and the fleet's stemcell has Ubuntu's
		// (/usr/sbin/runc 1.1.0-0ubuntu1, which its containerd package
		// brings; the stand-in runs it): a promoted CVE blocks on it.
		{Name: "runc " + runcClean + " at the shipped path, " + cveAdvisory + " still promoted: the stemcell's runc on PATH blocks",
			Expects: []string{"promoted-path-blocked", "promoted-path-report"},
			Do: func(r *Record) error {
				ro, err := f.onTheCanary(ctx, r, runcClean, []string{cveAdvisory})
				if err != nil {
					return err
				}
				res, report, vm := ro.res, ro.report, ro.vm
				r.Expect("promoted-path-blocked", res.ExitCode != 0 && strings.Contains(strings.Join(taskLines(res.Output), "\n"), "pre-start"),
					"bosh deploy with runc %s exited %d (pre-start)", runcClean, res.ExitCode)
				named := linesWith(report, "cellguard validate --phase", cveAdvisory)
				onPath, onShipped := false, false
				for _, l := range named {
					r.Say("      %s", l)
					onPath = onPath || strings.HasPrefix(l, f.shape.runc()+": "+cveAdvisory+" (security, promoted to blocking)")
					onShipped = onShipped || strings.HasPrefix(l, shippedRunc+": ")
				}
				got := runcVersionIn(ctx, vm, shippedRunc)
				r.Expect("promoted-path-report", verdictLine(report) == "cellguard validate --phase pre-start: BLOCKED by runtime-versions" && onPath && !onShipped && got == "runc version "+runcClean,
					"%q; %s names %s at %s: %t, at %s (%s): %t", verdictLine(report), cveAdvisory, "promoted", f.shape.runc(), onPath, shippedRunc, got, onShipped)
				return nil
			}},
	}}
}
