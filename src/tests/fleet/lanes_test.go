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

// oneCellLanes are the default scenarios' lanes beside the rollout lane
// (runFleet), one cell each: leaving, and one per remedy.
var oneCellLanes = []struct {
	dep      string
	scenario func(*fleet, context.Context) Scenario
}{
	{"fleet-leaving", (*fleet).leavingScenario},
	{"fleet-heal", (*fleet).healScenario},
	{"fleet-protect", (*fleet).protectScenario},
	{"fleet-start", (*fleet).startScenario},
}

// lanes is how many lanes the selection runs at once on a shape.
func (s selection) lanes() int {
	n := 0
	if s.Garden {
		n++
	}
	if s.GardenSeed {
		n += 2 // as it happened, and protected
	}
	if s.Default {
		n += 1 + len(oneCellLanes)
	}
	return n
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
