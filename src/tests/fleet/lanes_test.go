package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// A lane is one deployment of the fleet's manifest on the shape's director,
// with its own name, instance counts and named runtime config. Lanes run at
// once, their scenarios in order within each: a run waits on the director's
// serial updates (canaries 1, max_in_flight 1) far more than it computes,
// and the scenarios of different lanes share nothing but the director, the
// stemcell and the releases.

// laneSpec is one lane of a shape's run, as data: fleetLanes lists them,
// pick plans from that list, and both the director's worker count (one per
// planned lane, plus one) and runFleet read the plan.
type laneSpec struct {
	dep           string
	cells, others int
	// qemuCells, when set, is cells on a qemu shape and qemuOthers its
	// other instances there: each VM is a TCG guest on the host's two
	// cores (make test ran 28 minutes with noble's four). Without other
	// the noble lane boots 2 guests, not 3: other's boot and idle agent
	// were CPU in make test's busiest stretch, and which VMs the runtime
	// config places the addon on is the director's doing, the same on
	// every shape (the box shapes check it).
	qemuCells, qemuOthers int
	// gates: this lane's first scenario deploys first and, cold, compiles
	// every package once; the other lanes wait for it and reuse what it
	// compiled (compiled-once). It exports the releases the cache lacked.
	gates bool
	// garden: this lane exports the real Garden releases the cache lacked,
	// and the releases too when no lane gates. realGarden: it deploys
	// cellguard-test-garden (real Garden) instead of the stand-in.
	garden, realGarden bool
	// cellOnly: make cell's lane, which make test leaves out (pick).
	cellOnly bool
	// healOff: the lane's story is an operator who turned drain's heal off
	// (cellguard.drain.heal: false in every runtime config it sets), so its
	// escapes block drain as they did before drain healed; the job's
	// default (on) everywhere else.
	healOff bool
	// on: the shapes the lane exists on; nil, every shape.
	on func(shape) bool
	// scenarios in order: each starts from what the one before left.
	scenarios []scenarioRow
}

// scenarioRow is one scenario of a lane: the name of its subtest
// (TestFleet/<shape>/<name>, stable: docs and -run name it) and how to make
// it. st is what the lane's scenarios pass on (the rollout lane's).
type scenarioRow struct {
	name string
	make func(f *fleet, ctx context.Context, st *rollout) Scenario
	// box: the scenario's own hand reaches into its VMs with nsenter
	// (VM.Exec: the seed-000 trigger, escapes, files read in place), which
	// needs an nspawn box; it does not run on a qemu shape.
	box bool
	// vm: the scenario is about a VM that boots its own kernel (a reboot,
	// a recreate that must leave no qemu behind, Ubuntu's cgroup v2 under
	// today's Garden); it runs on qemu shapes only.
	vm bool
	// cellOnly: make cell's scenario, which make test leaves out (pick).
	cellOnly bool
}

// on says whether the scenario exists on shape sh.
func (row scenarioRow) on(sh shape) bool {
	return !(row.box && sh.qemu) && !(row.vm && !sh.qemu)
}

// fleetLanes is every scenario of the fleet, by lane. The rollout lane is
// the fleet issue 21 describes (3 cells and other); each remedy, and
// leaving, gets a lane of 1 cell; real Garden lanes of their own, 3 cells
// as the rollout lane (other where the scenario puts its control there).
var fleetLanes = []laneSpec{
	// The rollout lane: blocked rollouts and the way out (a lift, then
	// validator.fix), with drain's heal off.
	{dep: "fleet", cells: 3, qemuCells: 2, others: 1, qemuOthers: 0, gates: true, healOff: true, scenarios: []scenarioRow{
		{name: "deploy", make: func(f *fleet, ctx context.Context, st *rollout) Scenario { return f.deployScenario(ctx, st) }},
		{name: "blocked_later_cell", box: true, make: func(f *fleet, ctx context.Context, st *rollout) Scenario {
			return f.blockedScenario(ctx, st, "blocked rollout at a later cell", 1, "debug")
		}},
		{name: "blocked_canary", box: true, make: func(f *fleet, ctx context.Context, st *rollout) Scenario {
			return f.blockedScenario(ctx, st, "blocked rollout at the canary", 0, "error")
		}},
		{name: "way_out", box: true, make: func(f *fleet, ctx context.Context, st *rollout) Scenario { return f.wayOutScenario(ctx, st) }},
		{name: "seed001_canary", make: func(f *fleet, ctx context.Context, st *rollout) Scenario { return f.seed001Scenario(ctx, st) }},
		// Seed 001's hazard itself, rc93's init stuck on the canary: a
		// real kernel's pipes, so QEMU VMs; two more deploys, make cell's.
		{name: "seed001_stuck_init", vm: true, cellOnly: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.stuckInitScenario(ctx) }},
		// Drift by hand and a reboot of a cell, then a recreate: 7 minutes
		// under TCG, so make cell's.
		{name: "reboot", vm: true, cellOnly: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.rebootScenario(ctx) }},
	}},
	{dep: "fleet-leaving", cells: 1, scenarios: one("leaving", (*fleet).leavingScenario)},
	{dep: "fleet-heal", cells: 1, scenarios: one("watch_heals", (*fleet).healScenario)},
	// Drain's heal as it ships: escapes healed and the update completes on
	// one cell, then an escape it cannot heal blocks on the other (the
	// trigger realizes once per VM: a cell each).
	{dep: "fleet-drain-heal", cells: 2, scenarios: []scenarioRow{
		{name: "drain_heals", box: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.drainHealsScenario(ctx) }},
		{name: "drain_unhealable", box: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.drainUnhealableScenario(ctx) }},
	}},
	{dep: "fleet-protect", cells: 1, scenarios: one("protect", (*fleet).protectScenario)},
	{dep: "fleet-start", cells: 1, scenarios: one("start", (*fleet).startScenario)},
	// The shipped runtime config (manifests/runtime-config.yml, nothing
	// ignored) with real runc at the shipped path: deployed, a hazard at
	// the canary and its remedy, a CVE that reports, then promoted.
	{dep: "fleet-shipped", cells: 1, on: shippedOn, scenarios: []scenarioRow{
		{name: "shipped", box: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.shippedScenario(ctx) }},
		{name: "hazard_canary", box: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.hazardScenario(ctx) }},
		{name: "cve_reports", box: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.cveScenario(ctx) }},
	}},
	// The shipped cf-deployment ops files, metrics over mutual TLS.
	{dep: "fleet-metrics-tls", cells: 1, on: shippedOn, scenarios: one("metrics_tls", (*fleet).metricsTLSScenario)},
	// Today's Garden where the stemcell has a containerd; the seed's era
	// (garden-seed) on systemd 229, where its destroy hangs.
	{dep: "fleet-garden", cells: 3, others: 1, garden: true, realGarden: true, cellOnly: true,
		on: func(sh shape) bool { return !sh.hostRuntime }, scenarios: one("garden", (*fleet).gardenScenario)},
	// Today's Garden on cgroup v2 (guardian c2d9348) where the cells boot
	// Ubuntu's own kernel: one cell, every hand over bosh ssh.
	{dep: "fleet-garden-v2", cells: 1, garden: true, realGarden: true, cellOnly: true,
		on: func(sh shape) bool { return sh.qemu }, scenarios: []scenarioRow{
			{name: "garden_v2", vm: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return f.gardenV2Scenario(ctx) }},
		}},
	// Seed 000 as it happened and as it was measured: the next deploy stops
	// at the cell's drain, which drain's heal off keeps (what heal does with
	// the 2020-01 Garden is not measured here).
	{dep: "fleet-garden-seed", cells: 3, garden: true, realGarden: true, cellOnly: true, healOff: true,
		on: func(sh shape) bool { return sh.systemd == 229 }, scenarios: one("garden_seed000", (*fleet).gardenSeedScenario)},
	// Its protected run needs VMs the trigger never ran on: 2 cells (it
	// fires on the second), at once with the first.
	{dep: "fleet-garden-seed-protected", cells: 2, realGarden: true, cellOnly: true,
		on:        func(sh shape) bool { return sh.systemd == 229 },
		scenarios: one("garden_seed000_protected", (*fleet).gardenSeedProtectedScenario)},
}

// one is a lane of a single scenario; each of these reaches into its
// cell's box (the trigger, escapes), so it is box.
func one(name string, s func(*fleet, context.Context) Scenario) []scenarioRow {
	return []scenarioRow{{name: name, box: true, make: func(f *fleet, ctx context.Context, _ *rollout) Scenario { return s(f, ctx) }}}
}

// pick is what a TestFleet run picks, from go test's own -run and -skip
// and CELLGUARD_FLEET_SCENARIOS. make test runs `go test ./...`, and make
// cell's extra lanes and scenarios are too heavy for it, so they need one
// of: all (CELLGUARD_FLEET_SCENARIOS=all, make cell), or a -run that names
// them (-run 'TestFleet/jammy/^garden$' picks real Garden on jammy,
// -run TestFleet/noble/reboot noble's reboot).
type pick struct {
	run, skip runPattern
	all       bool
}

// plannedLane is a lane that runs, with the scenarios it runs in order:
// those picked (subtests) and, before them, those a picked one starts from
// (run first, outside any subtest: a prerequisite is set-up).
type plannedLane struct {
	laneSpec
	run []plannedScenario
}

type plannedScenario struct {
	scenarioRow
	picked bool
}

// shapePicked says whether shape sh runs at all, and why not.
func (p pick) shapePicked(sh shape) (bool, string) {
	name := []string{"TestFleet", sh.name}
	if ok, _ := p.run.match(name); !ok || p.skip.skips(name) {
		return false, "not picked by -run/-skip"
	}
	return true, ""
}

// plan is the lanes that run on shape sh: each lane with a picked
// scenario, its scenarios up to the last picked one. left names the
// scenarios -run matched that make test's tier left out.
func (p pick) plan(sh shape) (plan []plannedLane, left []string) {
	if ok, _ := p.shapePicked(sh); !ok {
		return nil, nil
	}
	for _, l := range fleetLanes {
		if l.on != nil && !l.on(sh) {
			continue
		}
		pl, last := plannedLane{laneSpec: l}, -1
		for _, row := range l.scenarios {
			if !row.on(sh) {
				continue
			}
			name := []string{"TestFleet", sh.name, row.name}
			ok, reach := p.run.match(name)
			picked := ok && !p.skip.skips(name)
			if picked && (l.cellOnly || row.cellOnly) && !p.all && reach < 3 {
				picked = false
				left = append(left, row.name)
			}
			if picked {
				last = len(pl.run)
			}
			pl.run = append(pl.run, plannedScenario{row, picked})
		}
		if last >= 0 {
			pl.run = pl.run[:last+1]
			plan = append(plan, pl)
		}
	}
	return plan, left
}

// planSummary is a plan as text: lane: scenarios, a prerequisite in
// parentheses ("fleet: (deploy) way_out").
func planSummary(plan []plannedLane) string {
	var lanes []string
	for _, l := range plan {
		var names []string
		for _, s := range l.run {
			if s.picked {
				names = append(names, s.name)
			} else {
				names = append(names, "("+s.name+")")
			}
		}
		lanes = append(lanes, l.dep+": "+strings.Join(names, " "))
	}
	return strings.Join(lanes, "; ")
}

// uses says what the plan deploys: the stand-in's test release, real
// Garden's release.
func uses(plan []plannedLane) (standIn, realGarden bool) {
	for _, l := range plan {
		standIn = standIn || !l.realGarden
		realGarden = realGarden || l.realGarden
	}
	return standIn, realGarden
}

// laneRuns makes the plan's lanes of this shape's fleet.
func (f *fleet) laneRuns(ctx context.Context, plan []plannedLane) []laneRun {
	// Cold (a release not in the compiled cache): the lanes wait for the
	// gating lane's first scenario.
	gated := false
	for _, spec := range plan {
		gated = gated || spec.gates
	}
	var compiled chan struct{}
	if gated && len(f.toStore) > 0 {
		compiled = make(chan struct{})
	}
	var runs []laneRun
	for _, spec := range plan {
		cells, others := spec.cells, spec.others
		if f.shape.qemu && spec.qemuCells > 0 {
			cells, others = spec.qemuCells, spec.qemuOthers
		}
		l := f.lane(spec.dep, cells, others)
		l.healOff = spec.healOff
		run := laneRun{f: l, waitFor: compiled}
		switch {
		case spec.gates:
			l.toStore, run.first, run.waitFor = f.toStore, compiled, nil
		case spec.garden:
			if !gated {
				l.toStore = f.toStore // cellguard: no gating lane exports it
			}
			l.gardenToStore, f.gardenToStore = f.gardenToStore, false
		}
		st := &rollout{}
		for _, s := range spec.run {
			run.scenarios = append(run.scenarios, s.make(l, ctx, st))
			run.names = append(run.names, s.name)
			run.picked = append(run.picked, s.picked)
		}
		runs = append(runs, run)
	}
	return runs
}

// lane is a copy of the shape's fleet that deploys as dep with cells and
// others instances; its story lines say its name after the shape's.
func (f *fleet) lane(dep string, cells, others int) *fleet {
	l := &fleet{
		t: f.t, repo: f.repo, work: f.work, cpiState: f.cpiState, env: f.env, bosh: f.bosh,
		shape: f.shape, summary: f.summary, cache: f.cache, releases: f.releases, runcs: f.runcs,
		gardenRel: f.gardenRel, gardenJob: testReleaseName, ctx: f.ctx, cancel: f.cancel,
		dep: dep, cells: cells, others: others,
	}
	l.vars = append(append([]string{}, f.vars...),
		"-v", "deployment="+dep, "-v", fmt.Sprintf("cells=%d", cells), "-v", fmt.Sprintf("others=%d", others))
	l.story = func(s string) { f.story(dep + " | " + s) }
	f.mu.Lock()
	f.lanes = append(f.lanes, dep)
	f.mu.Unlock()
	return l
}

// deleteLanes deletes every lane's deployment at once (delete-deployment
// drains with job_shutdown, which cellguard lets go); what the director
// leaves, deleteLeftoverVMs deletes after it.
func (f *fleet) deleteLanes() {
	if f.bosh == nil {
		return
	}
	f.mu.Lock()
	deps := append([]string{}, f.lanes...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, d := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := f.bosh.Run(context.Background(), "-d", d, "delete-deployment", "--force"); err != nil || r.ExitCode != 0 {
				f.t.Logf("cleanup: delete-deployment %s: %v exit %d (log %s)", d, err, r.ExitCode, r.Log)
			}
		}()
	}
	wg.Wait()
}

// laneRun is a lane and the scenarios it runs in order, each with its
// subtest's name and whether it was picked (else it runs as a picked one's
// prerequisite). first, when set, is closed once its first scenario ended;
// waitFor, when set, is waited on before its own first one (runFleet: a
// cold run's compiles).
type laneRun struct {
	f              *fleet
	scenarios      []Scenario
	names          []string
	picked         []bool
	first, waitFor chan struct{}
}

// runLanes runs every lane at once, each lane's scenarios in order by do.
// A scenario's do returns why the lane cannot go on ("" when it can: a
// picked scenario that failed does not stop the next, whose own
// expectations say what it found); the lane's later scenarios get that
// reason as blocked, and do reports them without running them.
func runLanes(lanes []laneRun, do func(l laneRun, j int, blocked string) (stop string)) {
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.waitFor != nil {
				select {
				case <-l.waitFor:
				case <-l.f.ctx.Done():
				}
			}
			t0 := time.Now()
			blocked := ""
			for j := range l.scenarios {
				if stop := do(l, j, blocked); blocked == "" {
					blocked = stop
				}
				if j == 0 && l.first != nil {
					close(l.first)
				}
			}
			l.f.story(fmt.Sprintf("lane %s: its scenarios took %s", l.f.dep, time.Since(t0).Round(time.Second)))
		}()
	}
	wg.Wait()
}

// laneVMs are the CPI's VMs of this lane's deployment.
func (f *fleet) laneVMs() ([]VM, error) {
	all, err := VMs(f.cpiState)
	if err != nil {
		return nil, err
	}
	var mine []VM
	for _, vm := range all {
		if vm.Deployment == f.dep {
			mine = append(mine, vm)
		}
	}
	return mine, nil
}

// laneDeployStep is a lane's first deploy, addon a on new VMs, which must
// complete (id).
func (f *fleet) laneDeployStep(ctx context.Context, id string, a addon) Step {
	return Step{Name: fmt.Sprintf("bosh deploy of %s (%d cell, new VMs)", f.dep, f.cells), Expects: []string{id},
		Do: func(r *Record) error { return f.rollOutEverywhere(ctx, r, id, a) }}
}
