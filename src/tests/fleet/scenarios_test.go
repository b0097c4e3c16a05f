package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
)

const (
	cellguardBin    = "/var/vcap/packages/cellguard/bin/cellguard"
	cellguardConfig = "/var/vcap/jobs/cellguard/config/cellguard.json"
)

// TestFleet deploys the fleet on a real director: TestFleet/<shape>/<scenario>,
// the shapes at once (each gets its own director, lab and VMs), and on a
// shape its lanes at once (lanes_test.go). A run waits on the director and
// the agents far more than it computes, so two shapes at once took about as
// long as one (src/tests/fleet/README.md, "Shapes"). What runs is what -run
// and -skip pick (pick): `-run 'TestFleet/jammy/watch_heals'` brings up
// jammy's director and the fleet-heal lane's one cell, and nothing else.
//
// The shapes are not t.Parallel: go test's -parallel (make test's default,
// GOMAXPROCS: 2 here) would hold the third shape back until one of the
// others ended, and the shapes wait rather than compute. Each runs in a
// goroutine of its own; t.Run may be called from several at once.
func TestFleet(t *testing.T) {
	p, err := pickFromFlags()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	verdicts := map[string]string{}
	// Runs after every shape ended: one line per shape that ran, last.
	t.Cleanup(func() {
		for _, name := range shapeOrder {
			if v, ok := verdicts[name]; ok {
				t.Logf("fleet %s: %s", name, v)
			}
		}
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, name := range shapeOrder {
		sh := shapes[name]
		wg.Add(1)
		go func() { defer wg.Done(); t.Run(sh.name, func(t *testing.T) { runShape(t, p, sh, &mu, verdicts) }) }()
	}
}

// runShape is TestFleet/<shape>: the plan that shape runs, its lanes, and
// its verdict for TestFleet's last lines.
func runShape(t *testing.T, p pick, sh shape, mu *sync.Mutex, verdicts map[string]string) {
	if ok, why := p.shapePicked(sh); !ok {
		t.Skip(why)
	}
	plan, left := p.plan(sh)
	if len(left) > 0 {
		t.Logf("make cell's, left out: %s (CELLGUARD_FLEET_SCENARIOS=all, or a -run naming them: TestFleet/%s/%s)", strings.Join(left, ", "), sh.name, left[0])
	}
	if len(plan) == 0 {
		t.Skip("no scenario picked on " + sh.name)
	}
	// What this run brings up, before it does: lane: scenarios, a
	// prerequisite in parentheses.
	t.Logf("plan: %s", planSummary(plan))
	v := "FAILED: stopped before its scenarios ran to the end (the errors above)"
	// Deferred: t.Fatal and t.Skip end the goroutine.
	defer func() {
		if t.Skipped() {
			v = "SKIPPED (why: above)"
		}
		mu.Lock()
		verdicts[sh.name] = v
		mu.Unlock()
	}()
	v = runFleet(t, sh, plan)
}

// pickFromFlags is this run's pick: go test's -run and -skip, and
// CELLGUARD_FLEET_SCENARIOS (all: make cell's shapes and lanes too).
func pickFromFlags() (pick, error) {
	var p pick
	var err error
	if p.run, err = parseRunPattern(flagValue("test.run")); err != nil {
		return p, fmt.Errorf("-run: %w", err)
	}
	if p.skip, err = parseRunPattern(flagValue("test.skip")); err != nil {
		return p, fmt.Errorf("-skip: %w", err)
	}
	switch v := os.Getenv("CELLGUARD_FLEET_SCENARIOS"); v {
	case "":
	case "all":
		p.all = true
	default:
		return p, fmt.Errorf("CELLGUARD_FLEET_SCENARIOS=%q: want all or nothing (pick scenarios with -run TestFleet/<shape>/<scenario>)", v)
	}
	return p, nil
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// runFleet runs the plan's lanes on one shape at once; within a lane each
// scenario starts from what the one before left. Each picked scenario is a
// subtest (TestFleet/<shape>/<name>) with its own story and verdict; one
// that was not picked but a picked one starts from runs first, its story
// on the shape's. It returns the shape's verdict ("all expectations held
// (N scenarios)" or what failed).
func runFleet(t *testing.T, sh shape, plan []plannedLane) string {
	// Bounded by go test's -timeout (make test: 90m), less a margin for the
	// cleanup, which must not be cut short.
	deadline := time.Now().Add(80 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-5*time.Minute).Before(deadline) {
		deadline = d.Add(-5 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(interrupt.Context(), deadline)
	defer cancel()
	f := startFleet(t, ctx, sh, plan)
	ctx = f.ctx
	var mu sync.Mutex
	var held, picked int
	var failed []string
	runLanes(f.laneRuns(ctx, plan), func(l laneRun, j int, blocked string) string {
		s, name := l.scenarios[j], l.names[j]
		if !l.picked[j] {
			if blocked != "" {
				return blocked
			}
			problems := Check(s, Run(s, l.f.story))
			for _, p := range problems {
				l.f.story(fmt.Sprintf("prerequisite %s: %s", name, p))
			}
			if len(problems) > 0 {
				return fmt.Sprintf("%s, which it starts from, did not hold (the shape's story)", name)
			}
			return ""
		}
		entered, ok := false, false
		t.Run(name, func(t *testing.T) {
			entered = true
			if blocked != "" {
				t.Fatal(blocked)
			}
			log := func(line string) { t.Log(sh.name + " | " + l.f.dep + " | " + line) }
			problems := Check(s, Run(s, log))
			for _, p := range problems {
				t.Errorf("%s: %s", s.Name, p)
			}
			ok = len(problems) == 0
		})
		if !entered {
			// pick read -run as go test does; if they ever disagree, the
			// lane was brought up for nothing and the run must say so.
			t.Errorf("%s/%s was picked, but go test did not run it: pick is out of step with -run", t.Name(), name)
		}
		mu.Lock()
		defer mu.Unlock()
		picked++
		if ok {
			held++
		} else {
			failed = append(failed, name)
		}
		return ""
	})
	if held == picked {
		v := fmt.Sprintf("all expectations held (%d scenarios)", held)
		f.story(fmt.Sprintf("fleet %s: %s", sh.name, v))
		return v
	}
	return fmt.Sprintf("FAILED: %d of %d scenarios held; failed: %s", held, picked, strings.Join(failed, "; "))
}

// rollout is what the scenarios learn and pass on: the cells in the
// director's update order, the unsafe ones, the log level each cell runs.
type rollout struct {
	order  []string // cell/<uuid>, bootstrap first, then by uuid (the director's InstancePlanSorter)
	unsafe []string
	level  string // the runtime config's log level that last deployed everywhere
}

// cellOrder reads the cells from bosh instances: the bootstrap instance
// first, then by name, as the director's InstancePlanSorter orders one az.
func (f *fleet) cellOrder(ctx context.Context) ([]string, error) {
	rows, err := f.instances(ctx, "--details")
	if err != nil {
		return nil, err
	}
	var boot string
	var rest []string
	for _, r := range rows {
		name := r["instance"]
		if !strings.HasPrefix(name, "cell/") {
			continue
		}
		if r["bootstrap"] == "true" {
			boot = name
		} else {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	if boot == "" {
		return nil, fmt.Errorf("no bootstrap cell in bosh instances --details")
	}
	return append([]string{boot}, rest...), nil
}

// vm finds the CPI's VM of an instance (cell/<uuid>).
func (f *fleet) vm(name string) (VM, error) {
	vms, err := VMs(f.cpiState)
	if err != nil {
		return VM{}, err
	}
	for _, vm := range vms {
		if vm.Name == name {
			return vm, nil
		}
	}
	return VM{}, fmt.Errorf("no VM of %s in the CPI's state", name)
}

// addonConfig is what the scenarios read of the cellguard job's rendered
// config on an instance's VM: which version of the addon it runs.
type addonConfig struct {
	Log struct {
		Level string `json:"level"`
	} `json:"log"`
	Validator struct {
		RuntimeBinaries map[string]string `json:"runtime_binaries"`
	} `json:"validator"`
}

// config reads the cellguard job's rendered config on the instance's VM;
// ok is false where there is none.
func (f *fleet) config(ctx context.Context, name string) (c addonConfig, ok bool) {
	vm, err := f.vm(name)
	if err != nil {
		return c, false
	}
	out, err := vm.Exec(ctx, "cat", cellguardConfig)
	if err != nil {
		return c, false
	}
	return c, json.Unmarshal([]byte(out), &c) == nil
}

// logLevel is the log level the instance's addon runs, "?" for none.
func (f *fleet) logLevel(ctx context.Context, name string) string {
	if c, ok := f.config(ctx, name); ok && c.Log.Level != "" {
		return c.Log.Level
	}
	return "?"
}

func (f *fleet) levels(ctx context.Context, names []string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = f.logLevel(ctx, n)
	}
	return m
}

// showInstances tells bosh instances --details in the story.
func (f *fleet) showInstances(ctx context.Context, r *Record, when string) {
	res, err := f.bosh.Run(ctx, "-d", f.dep, "instances", "--details")
	if err != nil {
		r.Say("   bosh instances --details %s: %v", when, err)
		return
	}
	r.Say("   bosh instances --details (%s):", when)
	for _, l := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		if strings.HasPrefix(l, "Using environment") || strings.HasPrefix(l, "Task ") && !strings.Contains(l, "|") {
			continue
		}
		r.Say("      %s", l)
	}
}

var (
	updatingRE = regexp.MustCompile(`Updating instance[^:]*: (cell/[0-9a-f-]+) \((\d+)\)( \(canary\))?`)
	// completedRE: an instance's update ends with its post-start stage,
	// which the director prints with the whole update's duration; a failed
	// one never gets there (run 4's task output).
	completedRE = regexp.MustCompile(`L executing post-start: (cell/[0-9a-f-]+) \(\d+\)(?: \(canary\))? \(\d\d:\d\d:\d\d\)`)
	compileRE   = regexp.MustCompile(`Compiling packages: ([a-z0-9_.-]+)/[0-9a-f]+ \(\d+:\d+:\d+\)`)
)

// rollOut sets the addon's runtime config, deploys the fleet's manifest
// (with ops files) and tells the task's events in the story.
func (f *fleet) rollOut(ctx context.Context, r *Record, a addon, ops ...string) (boshlab.Result, error) {
	if _, err := f.runtimeConfig(ctx, a); err != nil {
		return boshlab.Result{}, err
	}
	res, err := f.deploy(ctx, ops...)
	if err != nil {
		return res, err
	}
	sayTask(r, fmt.Sprintf("bosh deploy %v", ops), res)
	return res, nil
}

// sayTask tells what a bosh command (what) did, and its task's events.
func sayTask(r *Record, what string, res boshlab.Result) {
	r.Say("   %s exited %d after %s (log %s); the task's events:", what, res.ExitCode, res.Took.Round(time.Second), res.Log)
	for _, l := range taskLines(res.Output) {
		r.Say("      %s", l)
	}
}

// taskLines are the task's event lines of bosh-cli's output ("Task N | ...")
// and the error lines under them.
func taskLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "Task ") && strings.Contains(t, "|") || strings.HasPrefix(t, "L Error") || strings.HasPrefix(t, "Error:") {
			lines = append(lines, t)
		}
	}
	return lines
}

// updated lists the cells the task's output shows being updated, in order.
func updated(out string) []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range updatingRE.FindAllStringSubmatch(out, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

// deployScenario is long because a scenario is one value holding its
// steps and their expectations, which is the point of scenario.go.
func (f *fleet) deployScenario(ctx context.Context, st *rollout) Scenario {
	placement := []string{"fleet-running", "addon-on-every-cell", "ssh-shows-placement"}
	if f.others > 0 {
		// A lane without other (noble's QEMU VMs) has no VM the addon
		// could wrongly be on.
		placement = append(placement, "addon-not-on-other")
	}
	s := Scenario{Name: "deploy", Steps: []Step{
		{Name: "bosh deploy (cold: each package compiled once per stemcell; warm: from the compiled-release cache)", Expects: []string{"deploy-succeeds", "compiled-once"},
			Do: func(r *Record) error {
				// The lane's named runtime config first: the addon is what
				// the cells must run from their first deploy.
				if _, err := f.runtimeConfig(ctx, addon{Level: "info"}); err != nil {
					return err
				}
				res, err := f.deploy(ctx)
				if err != nil {
					return err
				}
				sayTask(r, "bosh deploy", res)
				r.Expect("deploy-succeeds", res.ExitCode == 0, "bosh deploy of cell (%d) and other (%d) exited %d after %s", f.cells, f.others, res.ExitCode, res.Took.Round(time.Second))
				f.sayPreStartFailure(ctx, r, res)
				counts := map[string]int{}
				for _, m := range compileRE.FindAllStringSubmatch(res.Output, -1) {
					counts[m[1]]++
				}
				if len(f.toStore) == 0 {
					// Both releases came compiled from the cache: nothing to compile.
					r.Expect("compiled-once", len(counts) == 0, "both releases uploaded compiled for %s/%s; packages compiled: %v", f.cache.StemcellOS, f.cache.Stemcell, counts)
				} else {
					once := len(counts) > 0
					for _, n := range counts {
						once = once && n == 1
					}
					r.Expect("compiled-once", once, "packages compiled (name: times): %v", counts)
				}
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				st.level = "info"
				for _, rel := range f.toStore {
					ex, err := f.cache.Store(ctx, f.bosh, f.dep, rel)
					if err != nil {
						return err
					}
					r.Say("   bosh export-release %s/%s %s/%s: %s, kept as %s", rel.Name, rel.Version, f.cache.StemcellOS, f.cache.Stemcell, ex.Took.Round(100*time.Millisecond), f.cache.Path(rel))
				}
				return nil
			}},
		{Name: "the addon's placement (bosh instances --ps, bosh ssh)", Expects: placement,
			Do: func(r *Record) error {
				rows, err := f.instances(ctx, "--ps")
				if err != nil {
					return err
				}
				procs := map[string][]string{}
				state := map[string]string{}
				cur := ""
				for _, row := range rows {
					if row["instance"] != "" {
						cur = row["instance"]
						state[cur] = row["process_state"]
						if _, seen := procs[cur]; !seen {
							procs[cur] = nil // an instance with no process is listed too
						}
					}
					if p := row["process"]; p != "" && cur != "" {
						procs[cur] = append(procs[cur], p)
					}
				}
				var names []string
				for n := range procs {
					names = append(names, n)
				}
				sort.Strings(names)
				cells, others, running := 0, 0, 0
				cellsWith, othersWith := 0, 0
				r.Say("   bosh instances --ps: instance, state, monit processes")
				for _, n := range names {
					r.Say("      %s %s %s", n, state[n], strings.Join(procs[n], " "))
					has := strings.Contains(" "+strings.Join(procs[n], " ")+" ", " cellguard-watch ")
					if state[n] == "running" && strings.HasPrefix(n, "cell/") {
						running++
					}
					switch {
					case strings.HasPrefix(n, "cell/"):
						cells++
						if has {
							cellsWith++
						}
					case strings.HasPrefix(n, "other/"):
						others++
						if has {
							othersWith++
						}
					}
				}
				// other has no job, so no process state ("" in --json).
				r.Expect("fleet-running", cells == f.cells && others == f.others && running == f.cells, "%d cell and %d other instances, %d cells running", cells, others, running)
				r.Expect("addon-on-every-cell", cells == f.cells && cellsWith == f.cells, "cellguard-watch (the addon's monit process) on %d of %d cells", cellsWith, cells)
				if f.others > 0 {
					r.Expect("addon-not-on-other", others == f.others && othersWith == 0, "cellguard-watch on %d of %d other instances (include.jobs: garden only)", othersWith, others)
				}
				// bosh ssh reaches each VM on its lab IP: the jobs each one has.
				rows2, res, err := f.ssh(ctx, "", "ls /var/vcap/jobs | tr '\\n' ' '")
				if err != nil {
					return err
				}
				ok := res.ExitCode == 0 && len(rows2) == f.cells+f.others
				for _, row := range rows2 {
					has := strings.Contains(" "+row.Stdout+" ", " cellguard ")
					if strings.HasPrefix(row.Instance, "cell/") != has {
						ok = false
					}
					r.Say("      bosh ssh %s: /var/vcap/jobs: %s", row.Instance, strings.TrimSpace(row.Stdout))
				}
				r.Expect("ssh-shows-placement", ok, "bosh ssh -c 'ls /var/vcap/jobs' exited %d on %d instances: cellguard exactly on the cells (log %s)", res.ExitCode, len(rows2), res.Log)
				return nil
			}},
		{Name: "bosh run-errand cellguard-validate, and cellguard fleet-summary of its output", Expects: []string{"errand-every-cell", "fleet-summary-every-cell"},
			Do: func(r *Record) error {
				rows, res, err := f.errand(ctx)
				if err != nil {
					return err
				}
				cells, ok := 0, 0
				for _, row := range rows {
					if strings.HasPrefix(row.Instance, "cell/") {
						cells++
					}
					if row.ExitCode == "0" {
						ok++
					}
					r.Say("      %s exit %s: %s", row.Instance, row.ExitCode, reportLine(row.Stdout))
				}
				r.Expect("errand-every-cell", res.ExitCode == 0 && cells == f.cells && len(rows) == f.cells && ok == f.cells,
					"the errand ran on %d instances, %d cells, %d exited 0; bosh exit %d after %s", len(rows), cells, ok, res.ExitCode, res.Took.Round(100*time.Millisecond))
				// The operator's one screen of it: cellguard fleet-summary
				// reads what bosh-cli printed.
				human, herr := f.fleetSummary(ctx, res.Stdout, false)
				r.Say("   bosh --json run-errand cellguard-validate | cellguard fleet-summary:")
				for _, l := range strings.Split(strings.TrimRight(human, "\n"), "\n") {
					r.Say("      %s", l)
				}
				js, jerr := f.fleetSummary(ctx, res.Stdout, true)
				var sum struct {
					Cells []struct {
						Instance string `json:"instance"`
						Verdict  string `json:"verdict"`
					} `json:"cells"`
				}
				okCells := 0
				if json.Unmarshal([]byte(js), &sum) == nil {
					for _, c := range sum.Cells {
						if strings.HasPrefix(c.Instance, "cell/") && c.Verdict == "ok" {
							okCells++
						}
					}
				}
				r.Expect("fleet-summary-every-cell", herr == nil && jerr == nil && len(sum.Cells) == f.cells && okCells == f.cells,
					"fleet-summary: %d instances, %d cells ok (exit: %v, --json: %v)", len(sum.Cells), okCells, herr, jerr)
				// The director's own account of the errand's task, timings
				// included (kept in the run's logs for the perf model).
				if m := regexp.MustCompile(`Task (\d+)`).FindStringSubmatch(res.Output); m != nil {
					if d, err := f.bosh.Run(ctx, "task", m[1], "--debug"); err == nil {
						r.Say("   bosh task %s --debug: %s", m[1], d.Log)
					}
				}
				return nil
			}},
	}}
	if f.shape.qemu {
		s.Steps = append(s.Steps, f.realKernelSteps(ctx)...)
	}
	return s
}

// instanceRow is one instance's result in bosh-cli's --json table of
// run-errand and of ssh --results.
type instanceRow struct {
	Instance string `json:"instance"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode string `json:"exit_code"`
}

// instanceRows runs bosh-cli with --json and args, and returns its first
// table's rows; a non-zero exit is the Result's, an output without a table
// the error.
func (f *fleet) instanceRows(ctx context.Context, args ...string) ([]instanceRow, boshlab.Result, error) {
	res, err := f.bosh.Run(ctx, append([]string{"--json", "-d", f.dep}, args...)...)
	if err != nil {
		return nil, res, err
	}
	var out struct {
		Tables []struct {
			Rows []instanceRow `json:"Rows"`
		} `json:"Tables"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil || len(out.Tables) == 0 {
		return nil, res, fmt.Errorf("bosh %s exited %d without a result table: %s (log %s)", strings.Join(args, " "), res.ExitCode, boshlab.LastLines(res.Output, 4), res.Log)
	}
	return out.Tables[0].Rows, res, nil
}

// reportLine is an errand's stdout in one line: what its JSON report (the
// errand's default format) holds, else its first line.
func reportLine(stdout string) string {
	var rep struct {
		Phase   string            `json:"phase"`
		Blocked bool              `json:"blocked"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.NewDecoder(strings.NewReader(stdout)).Decode(&rep); err != nil {
		return firstLine(stdout)
	}
	return fmt.Sprintf("validate's JSON report: phase %s, %d checks, blocked %t", rep.Phase, len(rep.Results), rep.Blocked)
}

// fleetSummary runs this tree's `cellguard fleet-summary` (--json when
// asJSON) on the errand's output; its exit 1 (some cell not ok) is an error.
func (f *fleet) fleetSummary(ctx context.Context, errandOut string, asJSON bool) (string, error) {
	args := []string{"fleet-summary"}
	if asJSON {
		args = append(args, "--json")
	}
	cmd := exec.CommandContext(ctx, f.summary, args...)
	cmd.Stdin = strings.NewReader(errandOut)
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("cellguard fleet-summary: %w", err)
	}
	return string(out), nil
}

// errand runs bosh run-errand cellguard-validate. Its --json form: without
// a TTY bosh-cli prints the plain table data-only, no "Instance" line.
func (f *fleet) errand(ctx context.Context) ([]instanceRow, boshlab.Result, error) {
	return f.instanceRows(ctx, "run-errand", "cellguard-validate")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// standinReady waits (up to 2 minutes) until the Garden stand-in on vm has
// made its containers.
func standinReady(ctx context.Context, vm VM) {
	for i := 0; i < 240; i++ {
		if _, err := vm.Exec(ctx, "test", "-e", "/var/vcap/sys/run/garden/ready"); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// trigger starts the seed-000 trigger unit in a cell's VM, once the Garden
// stand-in has made its containers. Only the first realization on a VM moves
// anything: a restart on a cell triggered before realizes nothing anew.
func (f *fleet) trigger(ctx context.Context, name string) (VM, error) {
	vm, err := f.vm(name)
	if err != nil {
		return vm, err
	}
	standinReady(ctx, vm)
	// The trigger as this VM's systemd reads it (the old directive names
	// before 232: xenial), which must be the shape's.
	out, err := vm.Exec(ctx, "systemctl", "--version")
	if err != nil {
		return vm, err
	}
	version, err := systemd.ParseVersion(out)
	if err != nil {
		return vm, err
	}
	if version != f.shape.systemd {
		return vm, fmt.Errorf("%s runs systemd %d; the %s shape has %d", name, version, f.shape.name, f.shape.systemd)
	}
	return vm, f.fireTrigger(ctx, vm, version)
}

// escape makes seed-000 escapes on a cell: the trigger unit starts in its
// VM, and cellguard's drain-phase validation there says BLOCKED.
func (f *fleet) escape(ctx context.Context, r *Record, name, id string) error {
	vm, err := f.trigger(ctx, name)
	if err != nil {
		return err
	}
	// Where the stand-in runs: the unit that holds monit.
	if pid, err := vm.Exec(ctx, "cat", "/var/vcap/sys/run/garden/garden.pid"); err == nil {
		cg, _ := vm.Exec(ctx, "cat", "/proc/"+strings.TrimSpace(pid)+"/cgroup")
		r.Say("   %s: the Garden stand-in (pid %s) runs in %s (the %s shape's supervisor: %s)", name, strings.TrimSpace(pid), systemdCgroup(cg), f.shape.name, f.shape.supervisor)
	}
	out, verr := validateDrain(ctx, vm)
	// With drain's heal on, validate --phase drain predicts it: the
	// escapes are cgroup-integrity's failures all the same, and the verdict
	// says drain would move them back instead of BLOCKED.
	blocked := strings.Contains(out, "[FAIL] cgroup-integrity") && strings.Contains(out, "escaped in") &&
		((verr != nil && strings.Contains(out, "BLOCKED")) || strings.Contains(out, "drain would move"))
	r.Say("   %s (%s, %s): the seed-000 trigger started; cellguard validate --phase drain there:", name, vm.CID, vm.IP)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, "BLOCKED") || strings.Contains(l, "escaped") || strings.Contains(l, "drain would move") {
			r.Say("      %s", l)
		}
	}
	if !blocked {
		r.Say("   validate's whole output (err %v):", verr)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			r.Say("      %s", l)
		}
	}
	r.Expect(id, blocked, "validate --phase drain on %s names the escapes (cgroup-integrity FAIL) and blocks, or predicts drain's heal: %t", name, blocked)
	return nil
}

// validateDrain runs cellguard validate --phase drain in the VM, as the
// test's hand. It runs in the agent's net_cls cgroup (nats-api-access): its
// leaked-netns scan duplicates every socket with pidfd_getfd, and the
// kernel re-tags a received socket with the receiver's classid, so run
// from outside it would cut the agent's NATS socket off by the agent's
// own firewall (fleet.to-lead.md; netns's owner has it). The test's hand
// must not be what breaks the agent.
func validateDrain(ctx context.Context, vm VM) (string, error) {
	return vm.Exec(ctx, "sh", "-c", `echo $$ >/sys/fs/cgroup/net_cls/nats-api-access/cgroup.procs && exec "$@"`, "sh",
		cellguardBin, "validate", "--phase", "drain", "--config", cellguardConfig, "--log-file", "/dev/null")
}

// blockedScenario: escapes on the cell at position pos of the update order,
// then a runtime-config change (log level) deployed: the deploy stops at that
// cell's drain, the cells before it run the new config, it and the cells
// after it the old one.
func (f *fleet) blockedScenario(ctx context.Context, st *rollout, name string, pos int, level string) Scenario {
	var unsafe string
	var before map[string]string
	var res boshlab.Result
	return Scenario{Name: name, Steps: []Step{
		{Name: "escapes on one cell", Expects: []string{"escapes-made"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				st.order = order
				if pos >= len(order) {
					return fmt.Errorf("no cell at position %d of %v", pos, order)
				}
				unsafe = order[pos]
				st.unsafe = append(st.unsafe, unsafe)
				r.Say("   the director's update order (bootstrap first, then by uuid): %s; unsafe: %s", strings.Join(order, " "), unsafe)
				return f.escape(ctx, r, unsafe, "escapes-made")
			}},
		{Name: "bosh deploy with the changed runtime config (log level " + level + ")",
			Expects: []string{"deploy-blocked", "stopped-at-unsafe-drain", "cells-before-updated", "unsafe-cell-old", "cells-after-untouched"},
			Do: func(r *Record) error {
				f.showInstances(ctx, r, "before")
				before = f.levels(ctx, st.order)
				r.Say("   log level per cell before: %v", before)
				var err error
				if res, err = f.rollOut(ctx, r, addon{Level: level}); err != nil {
					return err
				}
				up := updated(res.Output)
				r.Expect("deploy-blocked", res.ExitCode != 0, "bosh deploy exited %d", res.ExitCode)
				last := ""
				if len(up) > 0 {
					last = up[len(up)-1]
				}
				drainErr := regexp.MustCompile(`(?i)drain`).MatchString(strings.Join(taskLines(res.Output), "\n"))
				r.Expect("stopped-at-unsafe-drain", last == unsafe && drainErr,
					"the task updated %v and failed at %s (unsafe: %s) with a drain error: %t", up, last, unsafe, drainErr)
				after := f.levels(ctx, st.order)
				r.Say("   log level per cell after: %v", after)
				i := indexOf(st.order, unsafe)
				okBefore, okAfter := true, true
				done := map[string]bool{}
				for _, m := range completedRE.FindAllStringSubmatch(res.Output, -1) {
					done[m[1]] = true
				}
				for _, c := range st.order[:i] {
					okBefore = okBefore && after[c] == level && done[c]
				}
				for _, c := range st.order[i+1:] {
					okAfter = okAfter && after[c] == before[c] && indexOf(up, c) < 0
				}
				r.Expect("cells-before-updated", okBefore, "cells before %s finished their update (%v) and run log level %s: %v", unsafe, done, level, subset(after, st.order[:i]))
				r.Expect("unsafe-cell-old", after[unsafe] == before[unsafe], "%s still runs %s (was %s)", unsafe, after[unsafe], before[unsafe])
				r.Expect("cells-after-untouched", okAfter, "cells after %s not updated, still %v", unsafe, subset(after, st.order[i+1:]))
				f.showInstances(ctx, r, "after")
				return nil
			}},
	}}
}

// wayOutScenario: over bosh ssh, each unsafe cell's report and `cellguard
// drain lift`; then the remedy (validator.fix) deployed to completion.
func (f *fleet) wayOutScenario(ctx context.Context, st *rollout) Scenario {
	return Scenario{Name: "the operator's way out", Steps: []Step{
		{Name: "the drain's report and cellguard drain lift over bosh ssh", Expects: []string{"ssh-report-names-escapes", "drain-lifted"},
			Do: func(r *Record) error {
				if len(st.unsafe) == 0 {
					return errors.New("no unsafe cell from the scenarios before")
				}
				reported, lifted := 0, 0
				for _, c := range st.unsafe {
					// What the failed drain said, where the job logs it. (Not a
					// fresh validate: run from an ssh session it would cut the
					// agent off, fleet.to-lead.md.)
					rows, _, err := f.ssh(ctx, c, "sudo tail -n 60 /var/vcap/sys/log/cellguard/drain.log")
					if err != nil {
						return err
					}
					for _, row := range rows {
						if strings.Contains(row.Stdout, "BLOCKED") && strings.Contains(row.Stdout, "cgroup-integrity") {
							reported++
						}
						r.Say("   bosh ssh %s -c 'sudo tail /var/vcap/sys/log/cellguard/drain.log' (exit %s):", row.Instance, row.ExitCode)
						for _, l := range strings.Split(row.Stdout, "\n") {
							if strings.Contains(l, "BLOCKED") || strings.Contains(l, "escaped") || strings.Contains(l, "cgroup-integrity") {
								r.Say("      %s", strings.TrimSpace(l))
							}
						}
					}
					rows, _, err = f.ssh(ctx, c, "sudo "+cellguardBin+" drain lift --by fleet-test --for 20m --reason 'escapes known; the remedy deploy fixes them'")
					if err != nil {
						return err
					}
					for _, row := range rows {
						r.Say("   bosh ssh %s -c 'sudo cellguard drain lift ...' (exit %s): %s", row.Instance, row.ExitCode, strings.TrimSpace(row.Stdout+row.Stderr))
						if row.ExitCode == "0" {
							lifted++
						}
					}
				}
				r.Expect("ssh-report-names-escapes", reported == len(st.unsafe), "%d of %d unsafe cells' drain.log says BLOCKED by cgroup-integrity (read over bosh ssh)", reported, len(st.unsafe))
				r.Expect("drain-lifted", lifted == len(st.unsafe), "cellguard drain lift on %d of %d unsafe cells", lifted, len(st.unsafe))
				return nil
			}},
		{Name: "the remedy deploy (validator.fix)", Expects: []string{"remedy-completes", "every-cell-updated"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "debug", Fix: true})
				if err != nil {
					return err
				}
				r.Expect("remedy-completes", res.ExitCode == 0, "bosh deploy with validator.fix exited %d", res.ExitCode)
				after := f.levels(ctx, st.order)
				ok := len(after) == 3
				for _, l := range after {
					ok = ok && l == "debug"
				}
				r.Expect("every-cell-updated", ok, "log level per cell: %v", after)
				f.showInstances(ctx, r, "after the remedy")
				return nil
			}},
	}}
}

// leavingScenario (long for the same reason as deployScenario): on its
// lane's own cell, bosh recreate with escapes; delete-deployment (its drain
// is job_shutdown, which cellguard lets go) leaves no VM of the lane; a
// deploy after it is warm: the director compiled every package once per
// stemcell and compiles nothing.
func (f *fleet) leavingScenario(ctx context.Context) Scenario {
	return Scenario{Name: "leaving and a warm deploy", Steps: []Step{
		f.laneDeployStep(ctx, "leaving-deployed", addon{Level: "info"}),
		{Name: "bosh recreate with escapes drain cannot heal on a cell (job_shutdown lets go)",
			Expects: []string{"escapes-before-recreate", "leaving-blkio-removed", "recreate-completes", "every-vm-recreated", "shutdown-let-go-naming-why"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				// A cell no trigger ran on: restarting the trigger realizes
				// nothing anew, so it would move nothing (runs 5 and 6 when
				// every scenario shared one deployment: no escape found).
				unsafe := order[len(order)-1]
				if err := f.escape(ctx, r, unsafe, "escapes-before-recreate"); err != nil {
					return err
				}
				// drain heals on job_shutdown too (cellguard.drain.heal, on):
				// what this shows is a shutdown let go with escapes left.
				vm, err := f.vm(unsafe)
				if err != nil {
					return err
				}
				if err := f.unhealable(ctx, r, vm, unsafe, "leaving-blkio-removed"); err != nil {
					return err
				}
				before, err := f.laneVMs()
				if err != nil {
					return err
				}
				res, err := f.bosh.Run(ctx, "-d", f.dep, "recreate")
				if err != nil {
					return err
				}
				sayTask(r, "bosh recreate", res)
				r.Expect("recreate-completes", res.ExitCode == 0, "bosh recreate exited %d", res.ExitCode)
				after, err := f.laneVMs()
				if err != nil {
					return err
				}
				old := map[string]string{}
				for _, vm := range before {
					if vm.Name != "" {
						old[vm.Name] = vm.CID
					}
				}
				renewed, instances := 0, 0
				for _, vm := range after {
					if vm.Job != "cell" && vm.Job != "other" {
						continue
					}
					instances++
					if o, ok := old[vm.Name]; ok && o != vm.CID {
						renewed++
					}
				}
				want := f.cells + f.others
				r.Expect("every-vm-recreated", instances == want && renewed == want, "%d of %d instances on a new VM", renewed, instances)
				// The unsafe cell's drain, from its deleted VM's logs (the CPI keeps them).
				var decided *drainEntry
				if cid := old[unsafe]; cid != "" {
					b, _ := os.ReadFile(filepath.Join(f.cpiState, "deleted", cid, "sys-log", "cellguard", "drain.log"))
					r.Say("   %s's drain (drain.log): %s", unsafe, boshlab.LastLines(string(b), 3))
					if decided, _ = lastDrain(string(b)); decided != nil {
						r.Say("   its decision: %s: %s", decided.Data.Outcome, decided.Data.Reason)
					}
				}
				r.Expect("shutdown-let-go-naming-why", decided != nil && decided.Data.Outcome == "released_on_shutdown" &&
					strings.Contains(decided.Data.Reason, "drain could not heal"),
					"%s's last drain decided %s (the reason above)", unsafe, outcomeOf(decided))
				return nil
			}},
		{Name: "bosh delete-deployment", Expects: []string{"delete-succeeds", "no-instance-vm-left"},
			Do: func(r *Record) error {
				res, err := f.bosh.Run(ctx, "-d", f.dep, "delete-deployment")
				if err != nil {
					return err
				}
				r.Say("   bosh delete-deployment exited %d after %s (log %s)", res.ExitCode, res.Took.Round(100*time.Millisecond), res.Log)
				r.Expect("delete-succeeds", res.ExitCode == 0, "bosh delete-deployment exited %d", res.ExitCode)
				vms, err := f.laneVMs()
				if err != nil {
					return err
				}
				var left []string
				for _, vm := range vms {
					if vm.Job == "cell" || vm.Job == "other" {
						left = append(left, vm.Name)
					}
				}
				r.Expect("no-instance-vm-left", len(left) == 0, "instance VMs left in the CPI's state: %v", left)
				return nil
			}},
		{Name: "bosh deploy (warm: compiled packages reused)", Expects: []string{"warm-deploy-succeeds", "nothing-compiled"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "info"})
				if err != nil {
					return err
				}
				r.Expect("warm-deploy-succeeds", res.ExitCode == 0, "bosh deploy exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				n := len(compileRE.FindAllString(res.Output, -1))
				r.Expect("nothing-compiled", n == 0, "%d packages compiled on the warm deploy", n)
				return nil
			}},
	}}
}

// systemdCgroup is the name=systemd line's path of a /proc/<pid>/cgroup
// (the unit a process is in), or "?".
func systemdCgroup(procCgroup string) string {
	for _, l := range strings.Split(procCgroup, "\n") {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 && parts[1] == "name=systemd" {
			return parts[2]
		}
	}
	return "?"
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func subset(m map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// sayPreStartFailure: when a deploy failed in cellguard's pre-start, the
// cells' pre-start output, read before teardown deletes the VMs (the
// director keeps only "1 of 1 pre-start scripts failed"; make cell noble
// run 5 said nothing more).
func (f *fleet) sayPreStartFailure(ctx context.Context, r *Record, res boshlab.Result) {
	if res.ExitCode == 0 || !strings.Contains(res.Output, "pre-start scripts failed") {
		return
	}
	rows, _, err := f.ssh(ctx, "cell", "sudo tail -n 40 /var/vcap/sys/log/cellguard/pre-start.stdout.log /var/vcap/sys/log/cellguard/pre-start.stderr.log")
	if err != nil {
		r.Say("   pre-start's output could not be read: %v", err)
		return
	}
	for _, row := range rows {
		r.Say("   %s pre-start output (exit %s):", row.Instance, row.ExitCode)
		for _, l := range strings.Split(strings.TrimSpace(row.Stdout+"\n"+row.Stderr), "\n") {
			r.Say("      %s", l)
		}
	}
}

// ssh runs command over bosh ssh on target (an instance, a group, or "" for
// every instance) and returns each instance's result; a command that fails
// on an instance is a row, not an error.
func (f *fleet) ssh(ctx context.Context, target, command string) ([]instanceRow, boshlab.Result, error) {
	args := []string{"ssh"}
	if target != "" {
		args = append(args, target)
	}
	rows, res, err := f.instanceRows(ctx, append(args, "-c", command, "--results")...)
	// The remote end's terminal ends bosh ssh's lines with \r\n.
	for i := range rows {
		rows[i].Stdout = strings.ReplaceAll(rows[i].Stdout, "\r\n", "\n")
	}
	return rows, res, err
}
