package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A lane is one deployment of the fleet's manifest on the shape's director,
// with its own name, instance counts and named runtime config. Lanes run at
// once, their scenarios in order within each: a run waits on the director's
// serial updates (canaries 1, max_in_flight 1) far more than it computes,
// and the scenarios of different lanes share nothing but the director, the
// stemcell and the releases.

// laneSpec is one lane of a shape's run, as data: selection.plan lists
// them, and both the director's worker count (one per lane, plus one) and
// runFleet read that one list.
type laneSpec struct {
	dep           string
	cells, others int
	// gates: this lane's first scenario deploys first and, cold, compiles
	// every package once; the other lanes wait for it and reuse what it
	// compiled (compiled-once). It exports the releases the cache lacked.
	gates bool
	// garden: this lane exports the real Garden releases the cache lacked,
	// and the releases too when no lane gates.
	garden    bool
	scenarios func(l *fleet, ctx context.Context) []Scenario
}

// plan is the lanes the selection runs at once on a shape.
func (s selection) plan() []laneSpec {
	var p []laneSpec
	if s.Default {
		// The rollout lane is the fleet issue 21 describes (3 cells and
		// other); each remedy, and leaving, gets a lane of 1 cell.
		p = append(p, laneSpec{dep: "fleet", cells: 3, others: 1, gates: true, scenarios: (*fleet).rolloutScenarios},
			laneSpec{dep: "fleet-leaving", cells: 1, scenarios: one((*fleet).leavingScenario)},
			laneSpec{dep: "fleet-heal", cells: 1, scenarios: one((*fleet).healScenario)},
			laneSpec{dep: "fleet-protect", cells: 1, scenarios: one((*fleet).protectScenario)},
			laneSpec{dep: "fleet-start", cells: 1, scenarios: one((*fleet).startScenario)})
	}
	// Real Garden in lanes of their own, 3 cells as the rollout lane
	// (other where the scenario puts its control there).
	if s.Garden {
		p = append(p, laneSpec{dep: "fleet-garden", cells: 3, others: 1, garden: true, scenarios: one((*fleet).gardenScenario)})
	}
	if s.GardenSeed {
		p = append(p, laneSpec{dep: "fleet-garden-seed", cells: 3, garden: true, scenarios: one((*fleet).gardenSeedScenario)},
			// Its protected run needs VMs the trigger never ran on: 2
			// cells (it fires on the second), at once with the first.
			laneSpec{dep: "fleet-garden-seed-protected", cells: 2, scenarios: one((*fleet).gardenSeedProtectedScenario)})
	}
	return p
}

// one is a lane of a single scenario.
func one(s func(*fleet, context.Context) Scenario) func(*fleet, context.Context) []Scenario {
	return func(f *fleet, ctx context.Context) []Scenario { return []Scenario{s(f, ctx)} }
}

// rolloutScenarios are the rollout lane's, in order: each starts from what
// the one before left (st).
func (f *fleet) rolloutScenarios(ctx context.Context) []Scenario {
	st := &rollout{}
	return []Scenario{
		f.deployScenario(ctx, st),
		f.blockedScenario(ctx, st, "blocked rollout at a later cell", 1, "debug"),
		f.blockedScenario(ctx, st, "blocked rollout at the canary", 0, "error"),
		f.wayOutScenario(ctx, st),
		f.seed001Scenario(ctx, st),
	}
}

// laneRuns makes the plan's lanes of this shape's fleet.
func (f *fleet) laneRuns(ctx context.Context, plan []laneSpec) []laneRun {
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
		l := f.lane(spec.dep, spec.cells, spec.others)
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
		run.scenarios = spec.scenarios(l, ctx)
		runs = append(runs, run)
	}
	return runs
}

// lane is a copy of the shape's fleet that deploys as dep with cells and
// others instances; its story lines say its name after the shape's.
func (f *fleet) lane(dep string, cells, others int) *fleet {
	l := &fleet{
		t: f.t, repo: f.repo, work: f.work, cpiState: f.cpiState, env: f.env, bosh: f.bosh,
		shape: f.shape, summary: f.summary, cache: f.cache, releases: f.releases, selected: f.selected,
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

// laneRun is a lane and the scenarios it runs in order. first, when set,
// is closed once its first scenario ended; waitFor, when set, is waited on
// before its own first one (runFleet: a cold run's compiles).
type laneRun struct {
	f              *fleet
	scenarios      []Scenario
	first, waitFor chan struct{}
}

// runLanes runs every lane at once and returns each scenario's outcome in
// the order of lanes and their scenarios.
func runLanes(lanes []laneRun) []Outcome {
	out := make([][]Outcome, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		out[i] = make([]Outcome, len(l.scenarios))
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
			for j, s := range l.scenarios {
				out[i][j] = Run(s, l.f.story)
				if j == 0 && l.first != nil {
					close(l.first)
				}
			}
			l.f.story(fmt.Sprintf("lane %s: its scenarios took %s", l.f.dep, time.Since(t0).Round(time.Second)))
		}()
	}
	wg.Wait()
	var all []Outcome
	for _, o := range out {
		all = append(all, o...)
	}
	return all
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
