package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/benchcycle"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// benchCtl is a BOSH-style ctl script: start execs the daemon, which wrote
// its pidfile first; stop kills it by pidfile. Nothing else, so the numbers
// are the supervisors' overhead, not a daemon's startup.
const benchCtl = `#!/bin/bash
run=/var/vcap/sys/run/bench
case $1 in
  start) mkdir -p $run; echo $$ > $run/bench.pid; exec sleep infinity ;;
  stop)  pid=$(cat $run/bench.pid 2>/dev/null) && kill "$pid"; rm -f $run/bench.pid ;;
esac
`

const (
	ctlPath   = "/var/vcap/jobs/bench/bin/bench_ctl"
	pidfile   = "/var/vcap/sys/run/bench/bench.pid"
	cfgPath   = "/var/vcap/jobs/cellguard/config/cellguard.json"
	unitName  = "cellguard-bench.service"
	cycleRuns = 60
)

func config(startArgs string) string {
	return fmt.Sprintf(`{"daemons": [{"name": "bench", "start": "%s start%s", "stop": "%s stop", "pidfile": "%s",
  "start_timeout": "20s", "stop_timeout": "20s"}]}`, ctlPath, startArgs, ctlPath, pidfile)
}

// BenchmarkStartStop boots a real systemd (sdbox) and times, inside it,
// starting and stopping a daemon: its ctl script run directly (what monit
// did before cellguard), `systemctl start/stop` of the delegated unit, and
// `cellguard start/stop` (monit's start/stop programs now: the unit made
// current and read back as delegated, the job over D-Bus, the wait for the
// pidfile's process). Then
// the idempotent pre-start: `cellguard unit install` with nothing to
// change, timed, with systemd's Reloading signals counted on a bus
// connection of our own: none may come (a Fatal, not a timing). Times are
// reported, never asserted.
//
// CELLGUARD_BENCH_START_BASELINE names another cellguard binary (built
// from the revision to compare, CGO_ENABLED=0): it runs as a fourth
// variant, "baseline", round-robin with the others, so before and after
// share one box and one load (docs/performance.md).
//
//	go test -run '^$' -bench StartStop -benchtime 1x ./src/tests/perf
func BenchmarkStartStop(b *testing.B) {
	sdbox.RequireRoot(b)
	box := bootPerfBox(b, "perf")
	cellguard := box.InstallCellguard(b)
	if err := box.CopyIn(buildCellbench(b), "/usr/local/bin/cellbench", 0o755); err != nil {
		b.Fatal(err)
	}
	for path, content := range map[string]string{ctlPath: benchCtl, cfgPath: config("")} {
		if err := box.WriteFile(path, []byte(content), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	cfg := "--config=" + cfgPath
	box.Run(b, cellguard, "unit", "install", "bench", cfg)
	reloads := sdbox.WatchReloads(b, box.SystemBusAddress)
	names := []string{"ctl script", "systemctl", "cellguard"}
	var baseline []Variant
	if bin := os.Getenv("CELLGUARD_BENCH_START_BASELINE"); bin != "" {
		const dst = "/usr/local/bin/cellguard-baseline"
		if err := box.CopyIn(bin, dst, 0o755); err != nil {
			b.Fatal(err)
		}
		baseline = []Variant{{Name: "baseline", Start: []string{dst, "start", "bench", cfg}, Stop: []string{dst, "stop", "bench", cfg}, Wait: true}}
		names = append(names, "baseline")
	}

	for b.Loop() {
		before := reloads.Settle(b)
		res := runCycle(b, box, CycleSpec{Runs: cycleRuns, PIDFile: pidfile, Variants: append([]Variant{
			{Name: "ctl script", Start: []string{ctlPath, "start"}, Stop: []string{ctlPath, "stop"}, Detach: true, Wait: true},
			{Name: "systemctl", Start: []string{"systemctl", "start", unitName}, Stop: []string{"systemctl", "stop", unitName}, Wait: true},
			{Name: "cellguard", Start: []string{cellguard, "start", "bench", cfg}, Stop: []string{cellguard, "stop", "bench", cfg}, Wait: true},
		}, baseline...)})
		if n := reloads.Settle(b) - before; n != 0 {
			b.Fatalf("%d systemd reloads during %d cellguard starts with an unchanged unit", n, cycleRuns)
		}
		b.Logf("start/stop latency inside the box, %d runs each, round-robin (ms: median / p95 / max):", cycleRuns)
		for _, v := range names {
			r := res[v]
			b.Logf("  %-23s start %s   stop %s", v, stats(r.Start), stats(r.Stop))
			name := strings.NewReplacer(", ", "-", " ", "-").Replace(v)
			metric(b, r.Start, name+"-start")
			metric(b, r.Stop, name+"-stop")
		}

		// Idempotent pre-start: nothing to change, so no write and no Reload.
		before = reloads.Settle(b)
		res = runCycle(b, box, CycleSpec{Runs: cycleRuns, Variants: []Variant{
			{Name: "install", Start: []string{cellguard, "unit", "install", "bench", cfg}},
		}})
		n := reloads.Settle(b) - before
		if n != 0 {
			b.Fatalf("%d systemd reloads during %d unchanged installs", n, cycleRuns)
		}
		// The counter must see a reload when there is one, or zero proves nothing.
		if err := box.WriteFile(cfgPath, []byte(config(" --changed")), 0o644); err != nil {
			b.Fatal(err)
		}
		box.Run(b, cellguard, "unit", "install", "bench", cfg)
		changed := reloads.Settle(b) - before
		if changed < 1 {
			b.Fatalf("changed unit installed but no Reloading signal seen: the counter is blind")
		}
		if err := box.WriteFile(cfgPath, []byte(config("")), 0o644); err != nil {
			b.Fatal(err)
		}
		box.Run(b, cellguard, "unit", "install", "bench", cfg)
		b.Logf("unchanged `cellguard unit install`: %s ms (median / p95 / max of %d); Reloading signals: %d (a changed unit: %d)",
			stats(res["install"].Start), cycleRuns, n, changed)
		metric(b, res["install"].Start, "unchanged-install")
	}
}

type (
	CycleSpec   = benchcycle.Spec
	Variant     = benchcycle.Variant
	cycleResult = benchcycle.Result
)

func runCycle(b *testing.B, box *sdbox.Box, spec CycleSpec) cycleResult {
	b.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := box.Command(ctx, "cellbench", "cycle", string(js))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("cellbench cycle: %v\n%s", err, stderr.String())
	}
	var res cycleResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("cellbench cycle output: %v\n%s", err, out)
	}
	return res
}

// buildCellbench builds the static cellbench that runs the cycles inside
// the box.
func buildCellbench(b *testing.B) string {
	b.Helper()
	root, err := sdbox.ModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "cellbench")
	gobin := sdbox.GoBinary()
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", bin, "./src/cmd/cellbench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build cellbench: %v\n%s", err, out)
	}
	return bin
}

func percentile(ns []int64, p float64) float64 {
	s := slices.Clone(ns)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i]) / 1e6
}

func stats(ns []int64) string {
	if len(ns) == 0 {
		return "-"
	}
	return fmt.Sprintf("%6.1f / %6.1f / %6.1f", percentile(ns, 0.5), percentile(ns, 0.95), percentile(ns, 1))
}

func metric(b *testing.B, ns []int64, name string) {
	if len(ns) > 0 {
		b.ReportMetric(percentile(ns, 0.5), name+"-p50-ms")
		b.ReportMetric(percentile(ns, 0.95), name+"-p95-ms")
	}
}
