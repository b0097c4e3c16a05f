package integration

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boxwatch"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/escapes"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// metric reads one sample of watch's /metrics in the box.
func metric(t *testing.T, box *sdbox.Box, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := boxwatch.Metric(box, name, labels)
	if err != nil {
		t.Fatal(err)
	}
	return v
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

// startWatch runs watch on the kit's runc root.
func startWatch(t *testing.T, box *sdbox.Box, cellguard, log string, args ...string) *boxwatch.Watch {
	return boxwatch.Start(t, box, cellguard, log, append([]string{"--runtime-root", escapes.RuncRoot}, args...)...)
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
		t.Cleanup(func() {
			if t.Failed() {
				// Whether systemd moved it at all, for a missed detection.
				m, err := kit.Moved(r)
				t.Logf("c%d's init at the end: outside its recorded cgroup in %v (%v)", n, m, err)
			}
			kit.Remove(context.Background(), r)
		})
		at, err := kit.Trigger(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return r, at
	}

	// 1. Detection and the clear, healing off.
	w := startWatch(t, box, cellguard, "/var/log/watch.log")
	w.MustLog(t, "systemd-connected", nil, 30*time.Second)
	waitMetric(t, box, "cellguard_scans_total", map[string]string{"trigger": "start"}, 1)
	r1, at := round(1)
	moved, err := kit.Moved(r1)
	if err != nil || len(moved) == 0 {
		t.Fatalf("the trigger did not move c1 (%v, %v)", moved, err)
	}
	f := w.MustLog(t, "finding", boxwatch.Subject("c1"), 15*time.Second)
	t.Logf("job finished -> %q logged after %v: %s", f.Message, f.Timestamp.Sub(at).Round(time.Millisecond), f.Data["detail"])
	waitMetric(t, box, "cellguard_escaped_processes", nil, 1)
	if got := metric(t, box, "cellguard_check_status", map[string]string{"check": "cgroup-integrity", "phase": "watch"}); got != 2 {
		t.Errorf("cellguard_check_status{cgroup-integrity} = %v, want 2 (fail)", got)
	}
	// Someone moves it back (validate --fix, the same code path); the next
	// systemd event makes watch look again.
	if out, err := box.Output(cellguard, "validate", "--phase", "pre-start", "--fix", "--runtime-root", escapes.RuncRoot,
		"--ignore", "all", "--config", boxwatch.Config, "--log-file", "/var/log/fix.log"); err != nil {
		t.Fatalf("validate --fix: %v\n%s", err, out)
	}
	if _, err := kit.StartUnit(ctx, "nudge.service", "system.slice", []string{"/bin/true"}, nil); err != nil {
		t.Fatal(err)
	}
	c := w.MustLog(t, "finding-cleared", boxwatch.Subject("c1"), 15*time.Second)
	t.Logf("%s: %s", c.Message, c.Data["detail"])
	waitMetric(t, box, "cellguard_escaped_processes", nil, 0)
	w.Stop()

	// 2. Healing on: watch moves the next escape back itself.
	w = startWatch(t, box, cellguard, "/var/log/watch-heal.log", "--heal")
	w.MustLog(t, "systemd-connected", nil, 30*time.Second)
	r2, at := round(2)
	h := w.MustLog(t, "healed", boxwatch.Subject("c2"), 15*time.Second)
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
	w.MustLog(t, "systemd-restarted", nil, 30*time.Second)
	_, at = round(3)
	h = w.MustLog(t, "healed", boxwatch.Subject("c3"), 15*time.Second)
	t.Logf("after daemon-reexec: %q %v after the job", h.Message, h.Timestamp.Sub(at).Round(time.Millisecond))

	// 4. D-Bus itself goes away and comes back: watch reconnects with
	// backoff, says so, and sees the next escape.
	box.Run(t, "systemctl", "restart", "dbus.service")
	kit.Close() // the kit's own bus connection went too
	if kit, err = escapes.New(ctx, box); err != nil {
		t.Fatal(err)
	}
	w.MustLog(t, "systemd-connection-lost", nil, 30*time.Second)
	w.MustLog(t, "systemd-reconnected", nil, 60*time.Second)
	waitMetric(t, box, "cellguard_systemd_reconnects_total", nil, 1)
	// No look at c4's cgroups here: on a loaded machine the trigger's job
	// can end after watch, woken by the trigger's UnitNew, has already
	// healed it; the healed line below is the proof of the move.
	_, at = round(4)
	h = w.MustLog(t, "healed", boxwatch.Subject("c4"), 15*time.Second)
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
	blocker := box.Command(context.Background(), "busybox", "httpd", "-f", "-p", boxwatch.Listen)
	if err := blocker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-blocker.Process.Pid, syscall.SIGKILL); blocker.Wait() }) //nolint:errcheck
	waitListening(t, box, boxwatch.Listen)
	box.Run(t, "rm", "-rf", "/run/extra-root")
	w := startWatch(t, box, cellguard, "/var/log/watch.log", "--period", "1s", "--runtime-root", "/run/extra-root", "--textfile", "/var/lib/cellguard.prom")
	l := w.MustLog(t, "metrics-listen-failed", nil, 30*time.Second)
	t.Logf("port in use: %v", l.Data["error"])
	w.MustLog(t, "scan", func(l boxwatch.Line) bool { return l.Data["trigger"] == "period" }, 30*time.Second)
	tf, err := box.ReadFile("/var/lib/cellguard.prom")
	if err != nil || !strings.Contains(string(tf), "cellguard_metrics_listener_up 0\n") {
		t.Fatalf("textfile (%v):\n%s", err, tf)
	}
	box.Run(t, "mkdir", "-p", "/run/extra-root")
	w.MustLog(t, "runtime-root-present", func(l boxwatch.Line) bool { return l.Data["root"] == "/run/extra-root" }, 30*time.Second)
	box.Run(t, "rmdir", "/run/extra-root")
	w.MustLog(t, "runtime-root-gone", func(l boxwatch.Line) bool { return l.Data["root"] == "/run/extra-root" }, 30*time.Second)
	syscall.Kill(-blocker.Process.Pid, syscall.SIGKILL) //nolint:errcheck
	w.MustLog(t, "metrics-listening", nil, 90*time.Second)
	if got := metric(t, box, "cellguard_runtime_root_present", map[string]string{"root": "/run/extra-root"}); got != 0 {
		t.Errorf("cellguard_runtime_root_present{/run/extra-root} = %v", got)
	}
	if got := metric(t, box, "cellguard_metrics_listener_up", nil); got != 1 {
		t.Errorf("listener_up = %v", got)
	}
}

// waitListening returns once something listens on addr (127.0.0.1:port) in
// the box's network namespace. Starting the blocker does not mean it has
// bound: under load (CI, load ~20) watch once started first and took the
// port itself, so "metrics-listen-failed" never came.
func waitListening(t *testing.T, box *sdbox.Box, addr string) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("0100007F:%04X", p) // /proc/net/tcp: 127.0.0.1, port in hex
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := box.Output("cat", "/proc/net/tcp")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); err == nil && len(f) > 3 && f[1] == want && f[3] == "0A" { // 0A: LISTEN
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s in the box within 30 s (%v)", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
