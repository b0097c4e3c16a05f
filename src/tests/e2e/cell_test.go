package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/testkit/boshlab"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/sdbox"
)

// summary is cell.sh's --json output.
type summary struct {
	OK        bool       `json:"ok"`
	Tarball   string     `json:"release_tarball"`
	Version   string     `json:"cellguard_release_version"`
	Seconds   int        `json:"duration_seconds"`
	Scenarios []scenario `json:"scenarios"`
}

type scenario struct {
	Name         string          `json:"name"` // shape/scenario, e.g. jammy/without
	Shape        string          `json:"shape"`
	Scenario     string          `json:"scenario"`
	OK           bool            `json:"ok"`
	Expectations []expectation   `json:"expectations"`
	Facts        json.RawMessage `json:"facts"`
}

type expectation struct {
	ID     string `json:"id"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// declared is src/tests/cell/expectations.json: every expectation each
// scenario records when it runs to the end, plus each shape's own. cell.sh's
// summary fails a scenario that did not record one; this test checks the
// same list against the summary, so neither can pass with fewer checks.
type declared struct {
	Shapes    map[string][]string `json:"shapes"`
	Scenarios map[string][]string `json:"scenarios"`
}

func loadDeclared(t *testing.T, repo string) declared {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "src/tests/cell/expectations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d declared
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("parse expectations.json: %v", err)
	}
	if len(d.Scenarios) == 0 {
		t.Fatal("expectations.json declares no scenario")
	}
	return d
}

// monitVersion is what `monit -V` must say on each stemcell shape: the
// stemcell builder builds 5.2.5 for both (src/tests/bosh/stemcell/build.sh
// says why noble does not get 5.29.0).
var monitVersion = map[string]string{"jammy": "5.2.5", "noble": "5.2.5"}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// TestLocalCell runs the local cell (cell.sh: bosh create-env onto the real
// bosh-agent and BOSH's monit) on the shapes in CELLGUARD_E2E_SHAPES (default
// jammy; make cell runs both) and checks the JSON summary: each required
// expectation present and held, and the facts they rest on (the agent's and
// monit's versions, the drain arguments the agent passed, which processes
// moved, the exit codes of bosh-cli and of the director-style update, the rc93
// finding) consistent with them.
func TestLocalCell(t *testing.T) {
	if os.Getenv(sdbox.SkipEnv) == "1" {
		t.Skipf("!!! NOT RUN: %s=1 (pure tests only) !!!", sdbox.SkipEnv)
	}
	sdbox.RequireRoot(t)
	repo := repoRoot(t)
	shapes := os.Getenv("CELLGUARD_E2E_SHAPES")
	if shapes == "" {
		shapes = "jammy"
	}

	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), dl.Add(-30*time.Second))
	}
	defer cancel()

	tarball := os.Getenv("CELLGUARD_CELL_TARBALL")
	if tarball == "" {
		var err error
		if tarball, err = boshlab.BuildRelease(ctx, repo, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}

	story := &bytes.Buffer{}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "src/tests/cell/cell.sh"), "--json", "--tarball", tarball, "--shapes", shapes)
	// Box names of their own, so a `make cell` running beside the test is not disturbed.
	cmd.Env = append(os.Environ(), fmt.Sprintf("CELL_BOX_PREFIX=e2e%d", os.Getpid()%100000))
	cmd.Stderr = story
	// On timeout, SIGTERM to cell.sh's own process group (only what it started):
	// its trap deletes its VMs and removes its files.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Minute
	out, err := cmd.Output()
	t.Logf("cell.sh story:\n%s", story)
	var s summary
	if jerr := json.Unmarshal(out, &s); jerr != nil {
		t.Fatalf("cell.sh (exit %v) printed no JSON summary: %v\nstdout:\n%s", err, jerr, out)
	}
	if err != nil && s.OK {
		t.Errorf("cell.sh exited %v but its summary says ok", err)
	}

	decl := loadDeclared(t, repo)
	byName := map[string]scenario{}
	for _, sc := range s.Scenarios {
		byName[sc.Name] = sc
		for _, e := range sc.Expectations {
			if !e.OK {
				t.Errorf("%s/%s failed: %s", sc.Name, e.ID, e.Detail)
			}
		}
	}
	for _, shape := range strings.Split(shapes, ",") {
		for kind, ids := range decl.Scenarios {
			ids = append(append([]string(nil), ids...), decl.Shapes[shape]...)
			name := shape + "/" + kind
			sc, ok := byName[name]
			if !ok {
				t.Errorf("scenario %s missing from the summary", name)
				continue
			}
			have := map[string]bool{}
			for _, e := range sc.Expectations {
				have[e.ID] = e.OK
			}
			for _, id := range ids {
				if ok, present := have[id]; !present {
					t.Errorf("%s: expectation %s was never checked", name, id)
				} else if !ok {
					t.Errorf("%s: expectation %s did not hold", name, id)
				}
			}
		}
		checkFacts(t, shape, byName)
	}
	if !s.OK {
		t.Errorf("summary ok=false")
	}
}

// facts are the raw observations cell.sh records per scenario.
type facts struct {
	AgentVersion     string `json:"agent_version"`
	MonitVersion     string `json:"monit_version"`
	CreateEnvExit    int    `json:"create_env_exit"`
	DeleteEnvExit    int    `json:"delete_env_exit"`
	UpdateExit       int    `json:"update_exit"`
	UpdateDrainArgs  string `json:"update_drain_args"`
	ShutdownArgs     string `json:"shutdown_drain_args"`
	DestroyedCleanly *bool  `json:"destroyed_cleanly"`
	Escaped          []struct {
		PID       int    `json:"pid"`
		Hierarchy string `json:"hierarchy"`
	} `json:"escaped"`
	Containers []struct {
		Runtime string `json:"runtime"`
		ID      string `json:"id"`
	} `json:"containers"`
	RC93Active           json.RawMessage `json:"rc93_finding_active"`
	RC93Lifted           json.RawMessage `json:"rc93_finding_lifted"`
	CPIMethods           []string        `json:"cpi_methods"`
	UpdateError          string          `json:"update_error"`
	LiftedDrainOutcome   string          `json:"lifted_drain_outcome"`
	ShutdownDrainOutcome string          `json:"shutdown_drain_outcome"`
	WatchEscaped         *int            `json:"watch_escaped_metric"`
	WatchHealedTotal     *int            `json:"watch_healed_metric"`
	WatchFindings        []struct {
		Subject string `json:"subject"`
	} `json:"watch_findings"`
	WatchHealed []struct {
		Subject string `json:"subject"`
		PID     string `json:"pid"`
		Scan    int    `json:"scan"`
	} `json:"watch_healed"`
}

// checkFacts re-derives the main verdicts from the raw facts, so a wrong
// expectation in the script cannot hide a wrong outcome.
func checkFacts(t *testing.T, shape string, sc map[string]scenario) {
	t.Helper()
	get := func(kind string) facts {
		var f facts
		decode(t, sc[shape+"/"+kind].Facts, &f)
		return f
	}
	for _, kind := range []string{"without", "protect", "start", "heal", "seed001"} {
		f := get(kind)
		if f.AgentVersion != "2.759.0" || !strings.Contains(f.MonitVersion, "version "+monitVersion[shape]) {
			t.Errorf("%s/%s: agent %q, monit %q; want bosh-agent 2.759.0 and monit %s", shape, kind, f.AgentVersion, f.MonitVersion, monitVersion[shape])
		}
		for _, m := range []string{"info", "create_stemcell", "create_vm", "set_vm_metadata"} {
			if !contains(f.CPIMethods, m) {
				t.Errorf("%s/%s: the CPI was never asked for %s (it saw %v)", shape, kind, m, f.CPIMethods)
			}
		}
	}
	without := get("without")
	// The drain contract: an update with escapes fails at drain with the agent's
	// error, a lift lets it past drain, delete-env (job_shutdown) lets the VM go.
	if without.CreateEnvExit != 0 || len(without.Escaped) == 0 || without.UpdateExit == 0 ||
		!strings.Contains(without.UpdateError, "drain scripts failed. Failed Jobs: cellguard") ||
		!strings.Contains(without.LiftedDrainOutcome, ": lifted: ") ||
		without.DeleteEnvExit != 0 || !strings.Contains(without.ShutdownDrainOutcome, "released_on_shutdown") {
		t.Errorf("%s/without: create-env exit %d, %d escaped pairs, update exit %d (%q), after the lift %q, delete-env exit %d (%q); want 0, some, blocked at drain, lifted, 0, released_on_shutdown",
			shape, without.CreateEnvExit, len(without.Escaped), without.UpdateExit, without.UpdateError, without.LiftedDrainOutcome,
			without.DeleteEnvExit, without.ShutdownDrainOutcome)
	}
	// watch (healing off) counted what cell.sh found outside, and logged it.
	if n := escapedPIDs(without); without.WatchEscaped == nil || *without.WatchEscaped != n || n == 0 || len(without.WatchFindings) == 0 {
		t.Errorf("%s/without: cellguard_escaped_processes %v, %d cgroup-integrity findings logged; cell.sh found %d processes outside",
			shape, show(without.WatchEscaped), len(without.WatchFindings), n)
	}
	heal := get("heal")
	// The counter counts a process once per scan that healed it; systemd
	// may move a process again after its heal, so heals are (scan, process).
	healedPIDs, heals := map[string]bool{}, map[string]bool{}
	for _, h := range heal.WatchHealed {
		healedPIDs[h.Subject+"/"+h.PID] = true
		heals[fmt.Sprintf("%d %s/%s", h.Scan, h.Subject, h.PID)] = true
	}
	if heal.CreateEnvExit != 0 || len(healedPIDs) == 0 || heal.WatchHealedTotal == nil || *heal.WatchHealedTotal != len(heals) ||
		len(heal.Escaped) != 0 || heal.DestroyedCleanly == nil || !*heal.DestroyedCleanly || heal.DeleteEnvExit != 0 {
		t.Errorf("%s/heal: create-env %d, healed %v in %d heals (cellguard_healed_processes_total %v), %d pairs still outside, destroyed cleanly %v, delete-env %d; want 0, some, as many, none, true, 0",
			shape, heal.CreateEnvExit, healedPIDs, len(heals), show(heal.WatchHealedTotal), len(heal.Escaped), show(heal.DestroyedCleanly), heal.DeleteEnvExit)
	}
	for _, kind := range []string{"protect", "start"} {
		f := get(kind)
		if f.WatchEscaped == nil || *f.WatchEscaped != 0 {
			t.Errorf("%s/%s: cellguard_escaped_processes %v after the trigger; want 0", shape, kind, show(f.WatchEscaped))
		}
		if f.CreateEnvExit != 0 || len(f.Escaped) != 0 || len(f.Containers) != 2 || f.UpdateExit != 0 || f.DeleteEnvExit != 0 ||
			f.DestroyedCleanly == nil || !*f.DestroyedCleanly {
			t.Errorf("%s/%s: create-env %d, %d escaped of %d containers, update %d, delete-env %d, destroyed cleanly %v; want 0, none of 2, 0, 0, true",
				shape, kind, f.CreateEnvExit, len(f.Escaped), len(f.Containers), f.UpdateExit, f.DeleteEnvExit, show(f.DestroyedCleanly))
		}
		if f.UpdateDrainArgs != "job_changed hash_changed" || f.ShutdownArgs != "job_shutdown hash_unchanged" {
			t.Errorf("%s/%s: drain arguments %q (update), %q (delete-env); want the agent's job_changed hash_changed, job_shutdown hash_unchanged",
				shape, kind, f.UpdateDrainArgs, f.ShutdownArgs)
		}
	}
	seed := get("seed001")
	var active, lifted struct {
		Status string            `json:"status"`
		Data   map[string]string `json:"data"`
	}
	decode(t, seed.RC93Active, &active)
	decode(t, seed.RC93Lifted, &lifted)
	if seed.CreateEnvExit == 0 || active.Status != "fail" || active.Data["condition_holds"] != "true" {
		t.Errorf("%s/seed001 with the limit active: create-env exit %d, rc93 finding %s (condition_holds %s); want blocked at pre-start, fail, true",
			shape, seed.CreateEnvExit, active.Status, active.Data["condition_holds"])
	}
	if lifted.Status != "warn" || lifted.Data["condition_holds"] != "false" {
		t.Errorf("%s/seed001 with the limit lifted: rc93 finding %s (condition_holds %s); want warn, false",
			shape, lifted.Status, lifted.Data["condition_holds"])
	}
}

// escapedPIDs counts the distinct processes among the escaped (pid, hierarchy) pairs.
func escapedPIDs(f facts) int {
	pids := map[int]bool{}
	for _, e := range f.Escaped {
		pids[e.PID] = true
	}
	return len(pids)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if len(raw) == 0 {
		t.Errorf("missing facts")
		return
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Errorf("decode facts %s: %v", raw, err)
	}
}

// show prints a fact cell.sh may not have recorded: its value, or "unrecorded"
// (%v of the pointer would print an address).
func show[T any](p *T) string {
	if p == nil {
		return "unrecorded"
	}
	return fmt.Sprint(*p)
}
