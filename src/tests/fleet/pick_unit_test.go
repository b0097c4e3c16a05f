package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPick: what a TestFleet run brings up, from -run, -skip and
// CELLGUARD_FLEET_SCENARIOS, over the real table (fleetLanes), without a
// director: one scenario by -run is its lane alone (with the scenarios of
// its lane it starts from), and the full runs keep make test's and make
// cell's coverage.
func TestPick(t *testing.T) {
	const (
		rollout   = "fleet: deploy blocked_later_cell blocked_canary way_out seed001_canary"
		drainHeal = "fleet-drain-heal: drain_heals drain_unhealable"
		defaults  = rollout + "; fleet-leaving: leaving; fleet-heal: watch_heals; " + drainHeal + "; fleet-protect: protect; fleet-start: start"
		shipped   = "; fleet-shipped: shipped hazard_canary cve_reports; fleet-metrics-tls: metrics_tls"
		garden    = "fleet-garden: garden"
		// noble's VMs are QEMU machines: only the scenarios that reach
		// them as an operator does (bosh-cli) run there (scenarioRow.box),
		// and make cell adds the stuck init, the reboot (scenarioRow.vm,
		// cellOnly) and today's Garden on v2 (a lane of its own).
		onVMs     = "fleet: deploy seed001_canary"
		onVMsCell = onVMs + " seed001_stuck_init reboot; fleet-garden-v2: garden_v2"
		seed      = "fleet-garden-seed: garden_seed000; fleet-garden-seed-protected: garden_seed000_protected"
	)
	testCases := []struct {
		name, run, skip string
		all             bool
		want            map[string]string // shape: planSummary; absent, nothing runs there
	}{
		{name: "make test (go test ./...)", want: map[string]string{"jammy": defaults + shipped, "noble": onVMs, "xenial": defaults}},
		{name: "make cell", run: "^TestFleet$", all: true,
			want: map[string]string{"jammy": defaults + shipped + "; " + garden, "noble": onVMsCell, "xenial": defaults + "; " + seed}},
		{name: "the README's -run TestFleet", run: "TestFleet", want: map[string]string{"jammy": defaults + shipped, "noble": onVMs, "xenial": defaults}},
		{name: "one scenario alone", run: "TestFleet/jammy/watch_heals", want: map[string]string{"jammy": "fleet-heal: watch_heals"}},
		{name: "one scenario, anchored", run: "^TestFleet$/^jammy$/^watch_heals$", want: map[string]string{"jammy": "fleet-heal: watch_heals"}},
		{name: "a later scenario of the rollout lane brings up what it starts from", run: "TestFleet/xenial/way_out",
			want: map[string]string{"xenial": "fleet: (deploy) (blocked_later_cell) (blocked_canary) way_out"}},
		{name: "the first scenario of the rollout lane alone", run: "TestFleet/jammy/deploy", want: map[string]string{"jammy": "fleet: deploy"}},
		{name: "a shape named runs make test's scenarios there", run: "TestFleet/noble", want: map[string]string{"noble": onVMs}},
		{name: "noble's reboot named runs, after what it starts from", run: "TestFleet/noble/reboot", want: map[string]string{"noble": "fleet: (deploy) (seed001_canary) (seed001_stuck_init) reboot"}},
		{name: "no reboot scenario on a box", run: "TestFleet/jammy/reboot", want: map[string]string{}},
		{name: "a make cell scenario named runs", run: "TestFleet/jammy/^garden$", want: map[string]string{"jammy": garden}},
		{name: "a scenario that needs a box runs nowhere on QEMU VMs", run: "TestFleet/noble/^garden$", want: map[string]string{}},
		{name: "today's Garden on v2 named runs on QEMU VMs only", run: "TestFleet/.*/garden_v2", want: map[string]string{"noble": "fleet-garden-v2: garden_v2"}},
		{name: "noble's deploy on QEMU VMs", run: "TestFleet/noble/deploy", want: map[string]string{"noble": "fleet: deploy"}},
		{name: "garden on a shape without it runs nothing", run: "TestFleet/xenial/^garden$", want: map[string]string{}},
		{name: "both seed lanes by an unanchored name", run: "TestFleet/xenial/garden", want: map[string]string{"xenial": seed}},
		{name: "one scenario on every shape it exists on", run: "TestFleet/.*/seed001_canary",
			want: map[string]string{"jammy": "fleet: (deploy) (blocked_later_cell) (blocked_canary) (way_out) seed001_canary",
				"noble": "fleet: (deploy) seed001_canary", "xenial": "fleet: (deploy) (blocked_later_cell) (blocked_canary) (way_out) seed001_canary"}},
		{name: "a box's scenario on every shape", run: "TestFleet/.*/watch_heals",
			want: map[string]string{"jammy": "fleet-heal: watch_heals", "xenial": "fleet-heal: watch_heals"}},
		{name: "alternatives", run: "TestFleet/jammy/watch_heals|TestFleet/xenial/leaving",
			want: map[string]string{"jammy": "fleet-heal: watch_heals", "xenial": "fleet-leaving: leaving"}},
		{name: "a shape by -run and make cell's lanes by all", run: "TestFleet/jammy", all: true, want: map[string]string{"jammy": defaults + shipped + "; " + garden}},
		{name: "-skip a shape", skip: "TestFleet/xenial", want: map[string]string{"jammy": defaults + shipped, "noble": onVMs}},
		{name: "-skip the rollout lane's last scenario", run: "TestFleet/jammy", skip: "TestFleet/jammy/seed001",
			want: map[string]string{"jammy": "fleet: deploy blocked_later_cell blocked_canary way_out; fleet-leaving: leaving; fleet-heal: watch_heals; " + drainHeal + "; fleet-protect: protect; fleet-start: start" + shipped}},
		{name: "the drain-heal lane's second scenario starts from its first", run: "TestFleet/jammy/drain_unhealable",
			want: map[string]string{"jammy": "fleet-drain-heal: (drain_heals) drain_unhealable"}},
		{name: "drain's heal alone", run: "TestFleet/jammy/drain_heals", want: map[string]string{"jammy": "fleet-drain-heal: drain_heals"}},
		{name: "the scenarios drain's heal changed, by one -run (make cell CELL_RUN)",
			run:  "TestFleet/jammy/(blocked_later_cell|blocked_canary|way_out|leaving|drain_heals|drain_unhealable)",
			want: map[string]string{"jammy": "fleet: (deploy) blocked_later_cell blocked_canary way_out; fleet-leaving: leaving; " + drainHeal}},
		{name: "-skip a prerequisite: the later one still starts from it", run: "TestFleet/jammy/(deploy|way_out)", skip: "TestFleet/jammy/deploy",
			want: map[string]string{"jammy": "fleet: (deploy) (blocked_later_cell) (blocked_canary) way_out"}},
		{name: "the shipped lane's last scenario starts from the two before it", run: "TestFleet/jammy/cve_reports",
			want: map[string]string{"jammy": "fleet-shipped: (shipped) (hazard_canary) cve_reports"}},
		{name: "the shipped scenarios and TLS metrics, by one -run (make cell CELL_RUN)", run: "TestFleet/jammy/(shipped|hazard_canary|cve_reports|metrics_tls)",
			want: map[string]string{"jammy": "fleet-shipped: shipped hazard_canary cve_reports; fleet-metrics-tls: metrics_tls"}},
		{name: "no shipped lane on xenial (the shipped addon includes jammy and noble stemcells)", run: "TestFleet/xenial/metrics_tls", want: map[string]string{}},
		{name: "another test", run: "TestPick", want: map[string]string{}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := parseRunPattern(tc.run)
			if err != nil {
				t.Fatal(err)
			}
			skip, err := parseRunPattern(tc.skip)
			if err != nil {
				t.Fatal(err)
			}
			p := pick{run: run, skip: skip, all: tc.all}
			for _, name := range shapeOrder {
				plan, _ := p.plan(shapes[name])
				if got, want := planSummary(plan), tc.want[name]; got != want {
					t.Errorf("%s: -run %q -skip %q all %t\n got %q\nwant %q", name, tc.run, tc.skip, tc.all, got, want)
				}
				if ok, _ := p.shapePicked(shapes[name]); !ok && len(plan) > 0 {
					t.Errorf("%s: a plan on a shape not picked", name)
				}
			}
		})
	}
}

// TestPickLeftOut: a shape picked without naming make cell's lanes says
// which it left out, so a reader knows how to ask for them.
func TestPickLeftOut(t *testing.T) {
	run, _ := parseRunPattern("TestFleet/jammy")
	if _, left := (pick{run: run}).plan(shapes["jammy"]); !slices.Equal(left, []string{"garden"}) {
		t.Errorf("left out on jammy: %v; want garden", left)
	}
	run, _ = parseRunPattern("TestFleet/noble")
	if _, left := (pick{run: run}).plan(shapes["noble"]); !slices.Equal(left, []string{"seed001_stuck_init", "reboot", "garden_v2"}) {
		t.Errorf("left out on noble: %v; want seed001_stuck_init, reboot, garden_v2", left)
	}
}

// TestLaneTable: every subtest name is unique on its shape, a word -run
// can name without quoting, and every lane has a deployment of its own
// (two lanes of one name would deploy over each other); on every shape
// make cell has exactly one gating lane, and make test six lanes (the
// eleven scenarios) on xenial, eight (fifteen: the shipped manifests')
// on jammy, one (two) on noble; and no other test is named
// TestFleet<something>.
func TestLaneTable(t *testing.T) {
	word := regexp.MustCompile(`^[a-z0-9_]+$`)
	for _, name := range shapeOrder {
		plan, _ := pick{all: true}.plan(shapes[name])
		deps, names, gates := map[string]bool{}, map[string]bool{}, 0
		for _, l := range plan {
			if deps[l.dep] {
				t.Errorf("%s: two lanes deploy %s", name, l.dep)
			}
			deps[l.dep] = true
			if l.gates {
				gates++
			}
			if l.cells < 1 || len(l.run) == 0 {
				t.Errorf("%s: lane %s has %d cells, %d scenarios", name, l.dep, l.cells, len(l.run))
			}
			for _, s := range l.run {
				if names[s.name] || !word.MatchString(s.name) || !s.picked || s.make == nil {
					t.Errorf("%s: scenario %q: a duplicate, not a plain word, not picked by make cell, or no maker", name, s.name)
				}
				names[s.name] = true
			}
		}
		if gates != 1 {
			t.Errorf("%s: %d lanes gate, want 1", name, gates)
		}
	}
	// -run TestFleet/... is unanchored at the top: another test named
	// TestFleet<something> would run beside the scenario picked.
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`(?m)^func (TestFleet\w+)\(`).FindSubmatch(b); m != nil {
			t.Errorf("%s: %s would run beside every -run TestFleet/...; name it otherwise", f, m[1])
		}
	}
	for name, want := range map[string][2]int{"jammy": {8, 15}, "noble": {1, 2}, "xenial": {6, 11}} {
		plan, _ := pick{}.plan(shapes[name])
		n := 0
		for _, l := range plan {
			n += len(l.run)
		}
		if len(plan) != want[0] || n != want[1] {
			t.Errorf("make test on %s: %d lanes, %d scenarios; want %d and %d", name, len(plan), n, want[0], want[1])
		}
	}
}

// TestRunPattern: -run and -skip read as go test reads them (go1.26
// src/testing/match.go), levels split at '/' outside brackets and
// parentheses, alternatives at a top-level '|'.
func TestRunPattern(t *testing.T) {
	testCases := []struct {
		pattern, name string
		ok            bool
		reach         int
		skips         bool
	}{
		{"", "TestFleet/jammy/deploy", true, 0, false},
		{"TestFleet", "TestFleet/jammy/deploy", true, 1, true},
		{"TestFleet/jammy", "TestFleet/jammy", true, 2, true},
		{"TestFleet/jammy/x", "TestFleet/jammy", true, 3, false}, // partial: -skip waits for the deeper level
		{"TestFleet/xenial", "TestFleet/jammy", false, 0, false},
		{"TestFleet/[a-z/]+y", "TestFleet/jammy", true, 2, true}, // '/' inside brackets is no level
		{"TestFleet/(jammy|noble)", "TestFleet/noble", true, 2, true},
		{"TestFleet/jammy|TestFleet/noble/deploy", "TestFleet/noble/deploy", true, 3, true},
		{"TestFleet/jammy|TestFleet/noble/deploy", "TestFleet/noble/way_out", false, 0, false},
		{"TestFleet/watch heals", "TestFleet/watch_heals", true, 2, true}, // a space stands for '_'
	}
	for _, tc := range testCases {
		t.Run(fmt.Sprintf("%s on %s", tc.pattern, tc.name), func(t *testing.T) {
			p, err := parseRunPattern(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.Split(tc.name, "/")
			ok, reach := p.match(name)
			if ok != tc.ok || (ok && reach != tc.reach) {
				t.Errorf("match = %t, reach %d; want %t, %d", ok, reach, tc.ok, tc.reach)
			}
			if got := p.skips(name); got != tc.skips {
				t.Errorf("skips = %t; want %t", got, tc.skips)
			}
		})
	}
	if _, err := parseRunPattern("TestFleet/(jammy"); err == nil {
		t.Error("an invalid regexp parsed")
	}
}

// TestPickAgreesWithGoTest runs this test binary again with each -run and
// -skip below on TestSubtestNames, a tree of the fleet's subtest names with
// empty bodies, and compares what go test ran with what pick picks (all:
// make test's tier is pick's own rule on top of go test's).
func TestPickAgreesWithGoTest(t *testing.T) {
	for _, c := range [][2]string{
		{"", ""}, {"TOP/jammy/watch_heals", ""}, {"TOP/xenial/way_out", ""}, {"TOP/.*/garden", ""},
		{"TOP/jammy|TOP/noble/^garden$", "TOP/jammy/blocked"}, {"TOP/[jx]/de(p|x)loy", ""}, {"TOP", "TOP/xenial/garden_seed000$"},
	} {
		cmd := exec.Command(os.Args[0], "-test.v", "-test.run", strings.ReplaceAll(c[0], "TOP", "^TestSubtestNames$"), "-test.skip", strings.ReplaceAll(c[1], "TOP", "^TestSubtestNames$"))
		if c[0] == "" {
			cmd.Args[3] = "^TestSubtestNames$"
		}
		cmd.Env = append(os.Environ(), "CELLGUARD_FLEET_NAMES=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
		var ran []string
		for _, m := range regexp.MustCompile(`(?m)^=== RUN\s+TestSubtestNames/(\w+/\w+)$`).FindAllStringSubmatch(string(out), -1) {
			ran = append(ran, m[1])
		}
		run, _ := parseRunPattern(strings.ReplaceAll(c[0], "TOP", "TestFleet"))
		skip, _ := parseRunPattern(strings.ReplaceAll(c[1], "TOP", "TestFleet"))
		var picked []string
		for _, sh := range shapeOrder {
			plan, _ := pick{run: run, skip: skip, all: true}.plan(shapes[sh])
			for _, l := range plan {
				for _, s := range l.run {
					if s.picked {
						picked = append(picked, sh+"/"+s.name)
					}
				}
			}
		}
		slices.Sort(ran)
		slices.Sort(picked)
		if !slices.Equal(ran, picked) {
			t.Errorf("-run %q -skip %q:\ngo test ran %v\n  pick took %v", c[0], c[1], ran, picked)
		}
	}
}

// TestSubtestNames is TestPickAgreesWithGoTest's helper: TestFleet's tree of
// names, every scenario on every shape it exists on, with nothing in it.
func TestSubtestNames(t *testing.T) {
	if os.Getenv("CELLGUARD_FLEET_NAMES") == "" {
		t.Skip("TestPickAgreesWithGoTest's helper")
	}
	for _, name := range shapeOrder {
		t.Run(name, func(t *testing.T) {
			for _, l := range fleetLanes {
				if l.on == nil || l.on(shapes[name]) {
					for _, s := range l.scenarios {
						if !s.on(shapes[name]) {
							continue
						}
						t.Run(s.name, func(*testing.T) {})
					}
				}
			}
		})
	}
}
