package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/escapes"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/sdbox"
)

const watchListen = "127.0.0.1:9323"

// watchProc is a `cellguard watch` running in the box.
type watchProc struct {
	box     *sdbox.Box
	log     string
	cancel  context.CancelFunc
	done    chan error
	offset  int // log lines already consumed by waitLog
	pidfile string
}

// startWatch runs cellguard watch in the box with args, logging to log.
func startWatch(t *testing.T, box *sdbox.Box, cellguard, log string, args ...string) *watchProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	argv := append([]string{cellguard, "watch", "--config", "/etc/cellguard-watch.json", "--listen", watchListen,
		"--runtime-root", escapes.RuncRoot, "--log-file", log, "--log-time-format", "rfc3339", "--log-level", "debug"}, args...)
	writeFile(t, box, "/etc/cellguard-watch.json", "{}", 0o644)
	// The shell records the box-side pid watch will have, then becomes it.
	pidfile := log + ".pid"
	cmd := box.Command(ctx, append([]string{"sh", "-c", `echo $$ > "$0"; exec "$@"`, pidfile}, argv...)...)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &watchProc{box: box, log: log, cancel: cancel, done: make(chan error, 1), pidfile: pidfile}
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(w.stop)
	return w
}

// stop ends watch with SIGTERM, as monit's stop program does.
func (w *watchProc) stop() {
	w.box.Output("sh", "-c", `kill -TERM "$(cat "$0")"`, w.pidfile) //nolint:errcheck // gone already is fine
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
	}
	w.cancel()
}

// logLine is one lager line of watch's log.
type logLine struct {
	Timestamp time.Time      `json:"timestamp"`
	Message   string         `json:"message"`
	Data      map[string]any `json:"data"`
}

func (w *watchProc) lines(t *testing.T) []logLine {
	t.Helper()
	b, err := w.box.ReadFile(w.log)
	if err != nil {
		return nil
	}
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			l.Message = strings.TrimPrefix(l.Message, "cellguard.watch.")
			out = append(out, l)
		}
	}
	return out
}

// waitLog waits for the next line (after those already consumed) with
// message msg for which match holds, and consumes up to it.
func (w *watchProc) waitLog(t *testing.T, msg string, match func(logLine) bool, within time.Duration) logLine {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ls := w.lines(t)
		for i := w.offset; i < len(ls); i++ {
			if ls[i].Message == msg && (match == nil || match(ls[i])) {
				w.offset = i + 1
				return ls[i]
			}
		}
		if time.Now().After(deadline) {
			var got []string
			for _, l := range ls[w.offset:] {
				got = append(got, l.Message)
			}
			t.Fatalf("no %q in watch's log within %s; since the last match: %v", msg, within, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric reads one sample from watch's /metrics in the box.
func metric(t *testing.T, box *sdbox.Box, name string, labels map[string]string) float64 {
	t.Helper()
	resp, err := box.HTTPClient().Get("http://" + watchListen + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	for _, m := range mf.GetMetric() {
		match := true
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if !match {
			continue
		}
		if g := m.GetGauge(); g != nil {
			return g.GetValue()
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
	}
	t.Fatalf("/metrics has no %s%v", name, labels)
	return 0
}

func waitMetric(t *testing.T, box *sdbox.Box, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for metric(t, box, name, labels) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, metric(t, box, name, labels), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isContainer(c string) func(logLine) bool {
	return func(l logLine) bool { return l.Data["check"] == "cgroup-integrity" && l.Data["subject"] == c }
}

// TestWatchDetectsHealsAndReconnects: a real runc container under a plain
// unit escapes when a unit with CPU and IO accounting starts (seed-000).
// watch logs the finding and /metrics counts it; once the process is back
// it logs the clear. With --heal it moves the next escape back itself and
// the process is in every recorded cgroup again. After `systemctl
// daemon-reexec`, and after D-Bus itself restarts, it still sees the next
// escape.
func TestWatchDetectsHealsAndReconnects(t *testing.T) {
	box := bootBoxMode(t, "watch", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kit, err := escapes.New(ctx, box)
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close()
	round := func(n int) (*escapes.Round, time.Time) {
		t.Helper()
		r, err := kit.Start(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kit.Remove(context.Background(), r) })
		at, err := kit.Trigger(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return r, at
	}

	// 1. Detection and the clear, healing off.
	w := startWatch(t, box, cellguard, "/var/log/watch.log")
	w.waitLog(t, "systemd-connected", nil, 30*time.Second)
	waitMetric(t, box, "cellguard_scans_total", map[string]string{"trigger": "start"}, 1)
	r1, at := round(1)
	moved, err := kit.Moved(r1)
	if err != nil || len(moved) == 0 {
		t.Fatalf("the trigger did not move c1 (%v, %v)", moved, err)
	}
	f := w.waitLog(t, "finding", isContainer("c1"), 15*time.Second)
	t.Logf("job finished -> %q logged after %v: %s", f.Message, f.Timestamp.Sub(at).Round(time.Millisecond), f.Data["detail"])
	waitMetric(t, box, "cellguard_escaped_processes", nil, 1)
	if got := metric(t, box, "cellguard_check_status", map[string]string{"check": "cgroup-integrity", "phase": "watch"}); got != 2 {
		t.Errorf("cellguard_check_status{cgroup-integrity} = %v, want 2 (fail)", got)
	}
	// Someone moves it back (validate --fix, the same code path); the next
	// systemd event makes watch look again.
	if out, err := box.Output(cellguard, "validate", "--phase", "pre-start", "--fix", "--runtime-root", escapes.RuncRoot,
		"--ignore", "all", "--config", "/etc/cellguard-watch.json", "--log-file", "/var/log/fix.log"); err != nil {
		t.Fatalf("validate --fix: %v\n%s", err, out)
	}
	if _, err := kit.StartUnit(ctx, "nudge.service", "system.slice", []string{"/bin/true"}, nil); err != nil {
		t.Fatal(err)
	}
	c := w.waitLog(t, "finding-cleared", isContainer("c1"), 15*time.Second)
	t.Logf("%s: %s", c.Message, c.Data["detail"])
	waitMetric(t, box, "cellguard_escaped_processes", nil, 0)
	w.stop()

	// 2. Healing on: watch moves the next escape back itself.
	w = startWatch(t, box, cellguard, "/var/log/watch-heal.log", "--heal")
	w.waitLog(t, "systemd-connected", nil, 30*time.Second)
	r2, at := round(2)
	h := w.waitLog(t, "healed", isContainer("c2"), 15*time.Second)
	t.Logf("job finished -> %q after %v: %s", h.Message, h.Timestamp.Sub(at).Round(time.Millisecond), h.Data["detail"])
	waitMetric(t, box, "cellguard_healed_processes_total", nil, 1)
	if moved, err := kit.Moved(r2); err != nil || len(moved) != 0 {
		t.Fatalf("after the heal c2's init is outside in %v (%v)", moved, err)
	}
	if got := metric(t, box, "cellguard_escaped_processes", nil); got != 0 {
		t.Errorf("cellguard_escaped_processes = %v after the heal", got)
	}

	// 3. systemd re-executes: watch notices and still sees the next escape.
	box.Run(t, "systemctl", "daemon-reexec")
	w.waitLog(t, "systemd-restarted", nil, 30*time.Second)
	_, at = round(3)
	h = w.waitLog(t, "healed", isContainer("c3"), 15*time.Second)
	t.Logf("after daemon-reexec: %q %v after the job", h.Message, h.Timestamp.Sub(at).Round(time.Millisecond))

	// 4. D-Bus itself goes away and comes back: watch reconnects with
	// backoff, says so, and sees the next escape.
	box.Run(t, "systemctl", "restart", "dbus.service")
	kit.Close() // the kit's own bus connection went too
	if kit, err = escapes.New(ctx, box); err != nil {
		t.Fatal(err)
	}
	w.waitLog(t, "systemd-connection-lost", nil, 30*time.Second)
	w.waitLog(t, "systemd-reconnected", nil, 60*time.Second)
	waitMetric(t, box, "cellguard_systemd_reconnects_total", nil, 1)
	r4, at := round(4)
	if moved, err := kit.Moved(r4); err != nil || len(moved) == 0 {
		t.Fatalf("after the D-Bus restart the trigger did not move c4 (%v, %v)", moved, err)
	}
	h = w.waitLog(t, "healed", isContainer("c4"), 15*time.Second)
	t.Logf("after a D-Bus restart: %q %v after the job", h.Message, h.Timestamp.Sub(at).Round(time.Millisecond))
	waitMetric(t, box, "cellguard_healed_processes_total", nil, 3)
	if got := metric(t, box, "cellguard_systemd_connected", nil); got != 1 {
		t.Errorf("cellguard_systemd_connected = %v", got)
	}
}

// TestWatchSurvivesFaults: the metrics port already in use, and a runtime
// root that appears and disappears, are each logged and shown in a metric
// while watch keeps scanning; once the port is free it serves /metrics.
func TestWatchSurvivesFaults(t *testing.T) {
	box := bootBoxMode(t, "watch-faults", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	// Something else holds the port.
	blocker := box.Command(context.Background(), "busybox", "httpd", "-f", "-p", watchListen)
	if err := blocker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-blocker.Process.Pid, syscall.SIGKILL); blocker.Wait() }) //nolint:errcheck
	box.Run(t, "rm", "-rf", "/run/extra-root")
	w := startWatch(t, box, cellguard, "/var/log/watch.log", "--period", "1s", "--runtime-root", "/run/extra-root", "--textfile", "/var/lib/cellguard.prom")
	l := w.waitLog(t, "metrics-listen-failed", nil, 30*time.Second)
	t.Logf("port in use: %v", l.Data["error"])
	w.waitLog(t, "scan", func(l logLine) bool { return l.Data["trigger"] == "period" }, 30*time.Second)
	tf, err := box.ReadFile("/var/lib/cellguard.prom")
	if err != nil || !strings.Contains(string(tf), "cellguard_metrics_listener_up 0\n") {
		t.Fatalf("textfile (%v):\n%s", err, tf)
	}
	box.Run(t, "mkdir", "-p", "/run/extra-root")
	w.waitLog(t, "runtime-root-present", func(l logLine) bool { return l.Data["root"] == "/run/extra-root" }, 30*time.Second)
	box.Run(t, "rmdir", "/run/extra-root")
	w.waitLog(t, "runtime-root-gone", func(l logLine) bool { return l.Data["root"] == "/run/extra-root" }, 30*time.Second)
	syscall.Kill(-blocker.Process.Pid, syscall.SIGKILL) //nolint:errcheck
	w.waitLog(t, "metrics-listening", nil, 90*time.Second)
	if got := metric(t, box, "cellguard_runtime_root_present", map[string]string{"root": "/run/extra-root"}); got != 0 {
		t.Errorf("cellguard_runtime_root_present{/run/extra-root} = %v", got)
	}
	if got := metric(t, box, "cellguard_metrics_listener_up", nil); got != 1 {
		t.Errorf("listener_up = %v", got)
	}
}
