package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boxwatch"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/escapes"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// Knobs, from the environment so `make bench` runs the full numbers and a
// developer a quick pass.
var (
	// CELLGUARD_BENCH_WATCH_ROUNDS escapes per measurement (detection, heal).
	watchRounds = envInt("CELLGUARD_BENCH_WATCH_ROUNDS", 50)
	// CELLGUARD_BENCH_WATCH_IDLE is the idle window on the synthetic cell.
	watchIdle = envDuration("CELLGUARD_BENCH_WATCH_IDLE", 10*time.Minute)
	// CELLGUARD_BENCH_WATCH_STORM is how long 10 unit starts a second run.
	watchStorm = envDuration("CELLGUARD_BENCH_WATCH_STORM", time.Minute)
)

// BenchmarkWatch measures `cellguard watch` on a real systemd (sdbox) and
// prints each number next to the validator's one-shot cost from the same
// run:
//
//   - time to detection: a unit with CPU and IO accounting starts and moves
//     a real runc container's cpu and blkio (seed-000); from the trigger's
//     JobRemoved on the bus to the finding in watch's log and in /metrics;
//   - time to heal with --heal: from JobRemoved to the process back in
//     every recorded cgroup (read from /proc);
//   - idle cost on the synthetic 250x20 cell at the default period (CPU of
//     one core over the window, and RSS), watch subscribed to an idle
//     box's systemd;
//   - a storm of 10 unit starts a second: watch's CPU meanwhile, and the
//     detection of escapes made during it.
//
// Times and shares are reported, never asserted.
//
//	go test -run '^$' -bench Watch -benchtime 1x -timeout 60m ./src/tests/perf
//	CELLGUARD_BENCH_WATCH_ROUNDS=10 CELLGUARD_BENCH_WATCH_IDLE=1m CELLGUARD_BENCH_WATCH_STORM=20s ... (quick)
func BenchmarkWatch(b *testing.B) {
	sdbox.RequireRoot(b)
	b.Logf("load at start: %s", loadavg())
	cellguardHost := sdbox.BuildCellguard(b)

	// The idle measurement runs beside the others, on a box of its own
	// (no events reach it) and the synthetic cell on this host.
	var idle idleResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); idle = measureIdle(b, cellguardHost) }()

	box := bootPerfBox(b, "perf-watch")
	cellguard := box.InstallCellguard(b)
	_, kit := newKit(b, box, 45*time.Minute)
	if err := box.WriteFile(boxwatch.Config, []byte("{}"), 0o644); err != nil {
		b.Fatal(err)
	}
	oneShot := validateInBox(b, box, cellguard, 11)

	n := 0
	det := watchRun(b, box, cellguard, "/var/log/watch-detect.log")
	detection := det.rounds(b, kit, &n, watchRounds, "finding")
	det.Stop()
	heal := watchRun(b, box, cellguard, "/var/log/watch-heal.log", "--heal")
	healing := heal.rounds(b, kit, &n, watchRounds, "healed")
	heal.Stop()
	st := watchRun(b, box, cellguard, "/var/log/watch-storm.log")
	storm := st.storm(b, kit, &n)
	st.Stop()
	wg.Wait()

	b.Logf("load at end: %s", loadavg())
	b.Logf("validator one-shot (cellguard validate --phase drain, in the box, %d runs): wall %s ms, CPU %s ms (median / p95)",
		len(oneShot.wall), stats(oneShot.wall), stats(oneShot.cpu))
	b.Logf("time to detection (JobRemoved -> finding), %d escapes: log %s ms, /metrics %s ms, both %s ms (median / p95 / max)",
		len(detection.both), stats(detection.log), stats(detection.metric), stats(detection.both))
	b.Logf("time to heal (JobRemoved -> back in every recorded cgroup), %d escapes: %s ms; \"healed\" logged %s ms",
		len(healing.back), stats(healing.back), stats(healing.log))
	b.Logf("idle on the synthetic 250x20 cell (%d processes), period 60s, over %s: %.3f%% of one core (%.2f s CPU), RSS %.1f MB (peak %.1f MB); one full scan there costs %s ms CPU, validate one-shot %s ms wall / %s ms CPU",
		idle.procs, idle.window, idle.cpuShare*100, idle.cpu.Seconds(), idle.rssMB, idle.peakMB,
		stats(idle.scanCPU), stats(idle.validateWall), stats(idle.validateCPU))
	b.Logf("storm: %d unit starts in %s (%.1f/s): watch used %.2f%% of one core, %d scans; detection of %d escapes during it: %s ms",
		storm.starts, storm.window.Round(time.Second), float64(storm.starts)/storm.window.Seconds(), storm.cpuShare*100,
		storm.scans, len(storm.detection), stats(storm.detection))
}

func bootPerfBox(b *testing.B, name string) *sdbox.Box {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	box, err := sdbox.Start(ctx, name)
	cancel()
	if err != nil {
		b.Fatalf("boot systemd box: %v", err)
	}
	b.Cleanup(func() {
		if err := box.Stop(); err != nil {
			b.Errorf("stop box: %v", err)
		}
	})
	return box
}

type oneShotResult struct{ wall, cpu []int64 }

// validateInBox times `cellguard validate --phase drain` in the box, wall
// and CPU (user+system of the process tree, from wait4).
func validateInBox(b *testing.B, box *sdbox.Box, cellguard string, runs int) oneShotResult {
	var r oneShotResult
	for i := 0; i < runs; i++ {
		cmd := box.Command(context.Background(), cellguard, "validate", "--phase", "drain", "--runtime-root", escapes.RuncRoot,
			"--config", boxwatch.Config, "--log-file", "/dev/null")
		start := time.Now()
		cmd.Run() //nolint:errcheck // the verdict does not matter here
		r.wall = append(r.wall, int64(time.Since(start)))
		r.cpu = append(r.cpu, int64(cpuOf(cmd.ProcessState)))
	}
	return r
}

func cpuOf(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// benchWatch is a watch in the box on the kit's runc root.
type benchWatch struct{ *boxwatch.Watch }

func watchRun(b *testing.B, box *sdbox.Box, cellguard, log string, args ...string) benchWatch {
	w := boxwatch.Start(b, box, cellguard, log, append([]string{"--runtime-root", escapes.RuncRoot}, args...)...)
	w.MustLog(b, "systemd-connected", nil, 30*time.Second)
	return benchWatch{w}
}

// boxMetric reads one unlabelled sample from /metrics in the box.
func boxMetric(box *sdbox.Box, name string) (float64, error) { return boxwatch.Metric(box, name, nil) }

type roundsResult struct {
	log, metric, both []int64 // detection
	back              []int64 // heal: the process back in every cgroup
}

// rounds makes count escapes one after another and times each.
func (w benchWatch) rounds(b *testing.B, kit *escapes.Kit, n *int, count int, msg string) roundsResult {
	ctx := context.Background()
	var res roundsResult
	metricName := "cellguard_escaped_processes"
	if msg == "healed" {
		metricName = "cellguard_healed_processes_total"
	}
	for i := 0; i < count; i++ {
		*n++
		r, err := kit.Start(ctx, *n)
		if err != nil {
			b.Fatal(err)
		}
		// Let the container's own start events (and the last round's
		// removal) be scanned first, so the trigger meets an idle watcher
		// and no escape is left open.
		time.Sleep(300 * time.Millisecond)
		before, err := boxMetric(kit.Box(), metricName)
		for wait := time.Now().Add(5 * time.Second); err == nil && msg != "healed" && before != 0 && time.Now().Before(wait); {
			time.Sleep(50 * time.Millisecond)
			before, err = boxMetric(kit.Box(), metricName)
		}
		if err != nil {
			b.Fatal(err)
		}
		t0, err := kit.Trigger(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		// The log (read from here, free for watch) every 5ms; /metrics, which
		// watch must encode, every 25ms: a finer poll was watch's biggest
		// cost in the storm.
		var metricAt, backAt time.Time
		deadline := t0.Add(10 * time.Second)
		lastMetric := time.Time{}
		for time.Now().Before(deadline) && (metricAt.IsZero() || (msg == "healed" && backAt.IsZero())) {
			if metricAt.IsZero() && time.Since(lastMetric) >= 25*time.Millisecond {
				lastMetric = time.Now()
				if v, err := boxMetric(kit.Box(), metricName); err == nil && v > before {
					metricAt = time.Now()
				}
			}
			if msg == "healed" && backAt.IsZero() {
				if moved, err := kit.Moved(r); err == nil && len(moved) == 0 {
					backAt = time.Now()
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		l, ok := w.WaitLog(msg, func(l boxwatch.Line) bool { return l.Data["subject"] == r.Container }, 10*time.Second)
		if !ok || metricAt.IsZero() {
			b.Errorf("round %d: escape not seen (log %v, metric %v)", *n, ok, !metricAt.IsZero())
		} else {
			logD, metD := l.Timestamp.Sub(t0), metricAt.Sub(t0)
			res.log = append(res.log, int64(logD))
			res.metric = append(res.metric, int64(metD))
			res.both = append(res.both, int64(max(logD, metD)))
			if msg == "healed" {
				if backAt.IsZero() {
					b.Errorf("round %d: healed logged, but the process is not back in every cgroup", *n)
				} else {
					res.back = append(res.back, int64(backAt.Sub(t0)))
				}
			}
		}
		if os.Getenv("CELLGUARD_BENCH_DEBUG") != "" {
			for _, l := range w.Lines() {
				if l.Timestamp.After(t0.Add(-2 * time.Second)) {
					b.Logf("%+.3f %s %v", l.Timestamp.Sub(t0).Seconds(), l.Message, l.Data["trigger"])
				}
			}
		}
		kit.Remove(ctx, r)
	}
	return res
}

type stormResult struct {
	starts    int
	window    time.Duration
	cpuShare  float64
	scans     int
	detection []int64
}

// storm starts 10 transient units a second for watchStorm (each runs
// /bin/true in a slice of its own, so none moves a container) while
// escape rounds run one after another, and reads watch's CPU from
// /proc/<pid>/stat in the box before and after.
func (w benchWatch) storm(b *testing.B, kit *escapes.Kit, n *int) stormResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := w.PID(b)
	cpu0, scans0 := procCPU(b, kit.Box(), pid), w.scans()
	start := time.Now()
	stop := startStorm(ctx, kit, "storm", "storm.slice")
	var res stormResult
	for time.Since(start) < watchStorm-3*time.Second {
		r := w.rounds(b, kit, n, 1, "finding")
		res.detection = append(res.detection, r.both...)
	}
	time.Sleep(time.Until(start.Add(watchStorm)))
	starts := stop()
	res.window = time.Since(start)
	res.cpuShare = (procCPU(b, kit.Box(), pid) - cpu0).Seconds() / res.window.Seconds()
	res.scans = w.scans() - scans0
	res.starts = starts
	return res
}

func (w benchWatch) scans() int {
	n := 0
	for _, l := range w.Lines() {
		if l.Message == "scan" {
			n++
		}
	}
	return n
}

// procCPU is utime+stime of pid in the box (its /proc, seen from here).
func procCPU(b *testing.B, box *sdbox.Box, pid int) time.Duration {
	bs, err := os.ReadFile(filepath.Join(box.Root, "proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	return statCPU(b, bs)
}

// statCPU reads fields 14 and 15 (utime, stime, in clock ticks of 1/100 s).
func statCPU(b *testing.B, stat []byte) time.Duration {
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse stat %q", s)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

type idleResult struct {
	procs                              int
	window                             time.Duration
	cpu                                time.Duration
	cpuShare                           float64
	rssMB, peakMB                      float64
	scanCPU, validateWall, validateCPU []int64
}

// measureIdle runs watch on the host against the synthetic 250x20 cell,
// subscribed to an idle box's systemd, at the default period, and reads
// its CPU and RSS after the window. The one-shot validator runs on the
// same cell for comparison.
func measureIdle(b *testing.B, cellguard string) idleResult {
	var res idleResult
	box := bootPerfBox(b, "perf-idle")
	dir := b.TempDir()
	spec := fakehost.Cell(1)
	if _, err := fakehost.Generate(dir, spec); err != nil {
		b.Error(err)
		return res
	}
	res.procs = spec.Processes()
	for i := 0; i < 11; i++ {
		cmd := exec.Command(cellguard, "validate", "--phase", "drain", "--root", dir, "--format", "json", "--log-file", "/dev/null")
		cmd.Stdout = io.Discard
		start := time.Now()
		cmd.Run() //nolint:errcheck
		res.validateWall = append(res.validateWall, int64(time.Since(start)))
		res.validateCPU = append(res.validateCPU, int64(cpuOf(cmd.ProcessState)))
	}
	log := filepath.Join(dir, "watch.log")
	cmd := exec.Command(cellguard, "watch", "--root", dir, "--systemd-address", box.SystemBusAddress,
		"--log-file", log, "--log-level", "debug", "--config", filepath.Join(dir, "none.json"))
	if err := os.WriteFile(filepath.Join(dir, "none.json"), []byte("{}"), 0o600); err != nil {
		b.Error(err)
		return res
	}
	// measureIdle runs in a goroutine of its own: when the benchmark fails
	// elsewhere (b.Fatal), the test binary exits without running this
	// function's defer, and bench N left this watch running (by PID 1, 2
	// minutes later). The kernel ends it with the test process. Pdeathsig
	// fires when the forking thread exits, not the process, and Go ends
	// threads (one a netns dial locked and left): this goroutine keeps
	// its thread until the watch is reaped, or the watch died within
	// seconds and the window measured a zombie (0.000 % of a core, RSS 0).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Error(err)
		return res
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }() //nolint:errcheck
	// The window starts after the start scan, as a watch that has run for
	// a while: the start-up is not idling.
	time.Sleep(5 * time.Second)
	stat := func() []byte {
		bs, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			b.Error(err)
		}
		return bs
	}
	cpu0, t0 := statCPU(b, stat()), time.Now()
	time.Sleep(watchIdle)
	res.window = time.Since(t0)
	end := stat()
	if st, err := procfs.ParseStat(end); err != nil || (st.State != 'S' && st.State != 'R' && st.State != 'D') {
		logb, _ := os.ReadFile(log)
		b.Errorf("the idle watch is not running at the end of the window (state %q, %v): nothing was measured; its log:\n%s", st.State, err, logb)
		return res
	}
	res.cpu = statCPU(b, end) - cpu0
	res.cpuShare = res.cpu.Seconds() / res.window.Seconds()
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	for _, l := range strings.Split(string(status), "\n") {
		var kb float64
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			fmt.Sscan(v, &kb)
			res.rssMB = kb / 1024
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Sscan(v, &kb)
			res.peakMB = kb / 1024
		}
	}
	logb, _ := os.ReadFile(log)
	sc := bufio.NewScanner(bytes.NewReader(logb))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "cellguard.watch.scan" {
			if c, ok := l.Data["cpu"].(float64); ok {
				res.scanCPU = append(res.scanCPU, int64(c*float64(time.Second)))
			}
		}
	}
	return res
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// newKit makes an escapes kit on box for a benchmark that takes at most
// within; both end with it.
func newKit(b *testing.B, box *sdbox.Box, within time.Duration) (context.Context, *escapes.Kit) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	b.Cleanup(cancel)
	kit, err := escapes.New(ctx, box)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(kit.Close)
	return ctx, kit
}

// startStorm starts a transient unit running /bin/true in slice every
// 100 ms (10 a second), named prefix<i>.service, each with ctx, until
// stop: stop ends the ticking, waits for the starts under way and says how
// many succeeded.
func startStorm(ctx context.Context, kit *escapes.Kit, prefix, slice string) (stop func() int) {
	var (
		starts int
		mu     sync.Mutex
		wg     sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-tick.C:
			case <-done:
				return
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if _, err := kit.StartUnit(ctx, fmt.Sprintf("%s%d.service", prefix, i), slice, []string{"/bin/true"}, nil); err == nil {
					mu.Lock()
					starts++
					mu.Unlock()
				}
			}(i)
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return starts
	}
}
