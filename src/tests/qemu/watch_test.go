package qemu

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// CELLGUARD_BEFORE_REV=e18d83e (the commit before watch ran
// limits-intact on events and watched cgroup.subtree_control: its watch
// names a lost limit on its period only) also runs that commit's watch a
// few times, for comparison.

// Guest paths of TestNobleWatchLimits.
const (
	watchLog = "/root/watch.log"
	watchPID = "/root/watch.pid"
)

// stripTimeout is how long a strip may take to be named: generous, so
// that a loaded host never flakes the test; the latencies are reported,
// not asserted.
const stripTimeout = 40 * time.Second

// TestNobleWatchLimits is issue 37 item 6 on a real noble VM: `cellguard
// watch` runs, containers with recorded limits sit at /system.slice/cx
// and /garden/cy, and each repetition restores their limits, waits until
// watch has cleared every limits-intact finding, then causes one strip:
// `systemctl daemon-reload` (systemd writes `-cpuset -cpu -io` into
// system.slice's subtree_control), `echo -memory` into /garden's (no
// systemd signal at all), or (when measuring) the same just after three
// transient units started (their event scans spend watch's CPU budget).
// Each strip must be named by a `finding` line of limits-intact for that
// container; the time to the line from the action and from the strip
// itself is reported as p50/p95/max, never asserted (a loaded host must
// not flake it). Then the watch before this change does a third as many
// of the same, for comparison. CELLGUARD_WATCH_REPS sets the repetitions:
// make test runs 3 (each strip named); the measurement takes 12-20.
func TestNobleWatchLimits(t *testing.T) {
	t.Parallel()
	qemuvm.RequireImage(t)
	reps, measuring := 3, false
	if s := os.Getenv("CELLGUARD_WATCH_REPS"); s != "" {
		measuring = true
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CELLGUARD_WATCH_REPS=%q", s)
		}
		reps = n
	}
	g, before := bootWithCellguard(t)
	g.bundle()
	g.run("cx", "/system.slice/cx")
	g.run("cy", "/garden/cy")
	g.state("cx", "cy")

	type watchRun struct {
		name, bin string
		reps      int
	}
	runs := []watchRun{{"this tree", guestBin, reps}}
	if before {
		runs = append(runs, watchRun{"before (" + beforeRev() + ")", guestBefore, max(2, reps/3)})
	}
	for _, run := range runs {
		w := g.startWatch(run.bin)
		for _, s := range strips {
			if s.measureOnly && !measuring {
				continue
			}
			var lat, took, after []time.Duration
			triggers := map[string]int{}
			for i := range run.reps {
				w.restore()
				d, a, since, trig := w.strip(s)
				lat, took, after = append(lat, d), append(took, a), append(after, since)
				triggers[trig]++
				if i == 0 {
					g.state(s.container)
				}
			}
			t.Logf("%s: %s: %d strips named, the strip to the finding: %s; action to finding: %s; the action itself took %s; by trigger %v; event scans so far: cpu %s, duration %s",
				run.name, s.name, len(lat), summary(after), summary(lat), summary(took), triggers, summary(w.scanCPU), summary(w.scanTime))
		}
		w.stop()
	}
}

// strip is one way to lose a container's limits on v2.
type strip struct {
	name, container string
	// action causes it; restore undoes it and writes the recorded values
	// back (what `runc update` would).
	action, restore string
	// The strip itself is dated by polling file every 50 ms during the
	// action for the moment controller leaves it: under TCG a
	// daemon-reload takes seconds, and the strip is somewhere inside it.
	// The poll reads with the shell's builtin read, one fork (sleep) per
	// round: a grep every 10 ms slowed the guest's reload by half and its
	// scans by more (2026-12-07).
	file, controller string
	// measureOnly strips run only when CELLGUARD_WATCH_REPS is set.
	measureOnly bool
}

// memoryRestore undoes a -memory on /garden and writes cy's recorded
// values back.
const memoryRestore = `cd /sys/fs/cgroup
echo +memory > garden/cgroup.subtree_control
echo 134217728 > garden/cy/memory.max
echo 67108864 > garden/cy/memory.swap.max`

var strips = []strip{
	{name: "daemon-reload, container at /system.slice/cx", container: "cx",
		action: "systemctl daemon-reload",
		file:   "/sys/fs/cgroup/system.slice/cgroup.subtree_control", controller: "cpu",
		restore: `cd /sys/fs/cgroup
echo '+cpu +io' > cgroup.subtree_control
echo '+cpu +io' > system.slice/cgroup.subtree_control
echo 59 > system.slice/cx/cpu.weight
echo '50000 100000' > system.slice/cx/cpu.max
if [ -e system.slice/cx/io.bfq.weight ]; then echo 300 > system.slice/cx/io.bfq.weight; else echo 'default 2930' > system.slice/cx/io.weight; fi`},
	{name: "-memory into /garden's subtree_control, container at /garden/cy", container: "cy",
		action: "echo -memory > /sys/fs/cgroup/garden/cgroup.subtree_control",
		file:   "/sys/fs/cgroup/garden/cgroup.subtree_control", controller: "memory",
		restore: memoryRestore},
	// As on a cell where an operator's `bosh ssh` login started units
	// just before the operator's write: each start makes an event scan, whose
	// CPU the budget counts (TestFleet/noble/garden_v2 named such a strip
	// 1.0-1.7 s after the write). Measured only (CELLGUARD_WATCH_REPS).
	{name: "-memory into /garden's subtree_control just after three unit starts, container at /garden/cy", container: "cy",
		action: "for i in 1 2 3; do systemd-run --wait --quiet --collect true; done; echo -memory > /sys/fs/cgroup/garden/cgroup.subtree_control",
		file:   "/sys/fs/cgroup/garden/cgroup.subtree_control", controller: "memory",
		restore: memoryRestore, measureOnly: true},
}

// watcher is a `cellguard watch` running in the guest, and what its log
// said so far.
type watcher struct {
	g     *guest
	lines int               // log lines read
	open  map[string]string // limits-intact findings open: subject+detail -> subject
	// scanCPU and scanTime are the CPU and wall time of each event scan.
	scanCPU, scanTime []time.Duration
}

func (g *guest) startWatch(bin string) *watcher {
	g.t.Helper()
	g.sh(fmt.Sprintf("rm -f %[2]s; nohup %[1]s watch --runtime-root %[4]s --period 20s --log-level debug >%[2]s 2>&1 </dev/null & echo $! >%[3]s", bin, watchLog, watchPID, g.runtimeRoot()))
	w := &watcher{g: g, open: map[string]string{}}
	w.until(stripTimeout, "the first scan", func(l logLine) bool { return l.msg("scan") && l.Data["trigger"] == "start" })
	return w
}

func (w *watcher) stop() {
	w.g.t.Helper()
	w.g.sh("kill $(cat " + watchPID + "); sleep 0.5; grep -c . " + watchLog + " || true")
}

// quiet is the pause between watch clearing the findings and the next
// action: the restore's writes made event scans, whose CPU delays the next
// event scan (watch's CPU budget: a tenth of a core); a strip on a cell
// that was quiet before is what is measured (the unit starts of the third
// strip are its own).
const quiet = 4 * time.Second

// restore undoes every strip, waits until watch has no limits-intact
// finding open, then for quiet.
func (w *watcher) restore() {
	w.g.t.Helper()
	for _, s := range strips {
		w.g.sh(s.restore)
	}
	w.until(stripTimeout, "every limits-intact finding cleared", func(logLine) bool { return len(w.open) == 0 })
	time.Sleep(quiet)
}

// strip causes s and returns, by the guest's clock, the time from the
// action's start to watch's finding on s.container, how long the action
// took (a daemon-reload strips during it), the time from the strip itself
// (as the poller dated it, up to 50 ms late) to the finding, and the scan's
// trigger.
func (w *watcher) strip(s strip) (fromAction, action, fromStrip time.Duration, trigger string) {
	w.g.t.Helper()
	// The poller dates the strip; the action waits for it (bounded).
	script := fmt.Sprintf(`rm -f /root/stripped.at
( i=0; while read -r l < %[1]s && [ $i -lt 1200 ]; do case " $l " in *" %[2]s "*) ;; *) break ;; esac; sleep 0.05; i=$((i+1)); done
  date +%%s.%%N > /root/stripped.at ) &
poller=$!
date +%%s.%%N; %[3]s; date +%%s.%%N
wait $poller; cat /root/stripped.at`, s.file, s.controller, s.action)
	out := strings.Fields(w.g.sh(script))
	if len(out) < 3 {
		w.g.t.Fatalf("action %q printed %q", s.action, out)
	}
	t0, err0 := strconv.ParseFloat(out[0], 64)
	t1, err1 := strconv.ParseFloat(out[len(out)-2], 64)
	ts, err2 := strconv.ParseFloat(out[len(out)-1], 64)
	if err0 != nil || err1 != nil || err2 != nil {
		w.g.t.Fatalf("date: %q", out)
	}
	var hit logLine
	w.until(stripTimeout, s.name+" named", func(l logLine) bool {
		if l.msg("finding") && l.Data["check"] == "limits-intact" && l.Data["subject"] == s.container {
			hit = l
			return true
		}
		return false
	})
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	return sec(hit.at() - t0), sec(t1 - t0), sec(hit.at() - ts), fmt.Sprint(hit.Data["trigger"])
}

// logLine is one lager line.
type logLine struct {
	Timestamp string         `json:"timestamp"`
	Message   string         `json:"message"`
	Data      map[string]any `json:"data"`
}

func (l logLine) msg(m string) bool { return strings.HasSuffix(l.Message, "."+m) }

func (l logLine) at() float64 {
	f, _ := strconv.ParseFloat(l.Timestamp, 64)
	return f
}

// until reads watch's new log lines, keeping the open limits-intact
// findings, until match says yes; it fails the test after timeout.
func (w *watcher) until(timeout time.Duration, what string, match func(logLine) bool) {
	w.g.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := w.g.sh(fmt.Sprintf("tail -n +%d %s", w.lines+1, watchLog))
		lines := strings.SplitAfter(out, "\n")
		for _, raw := range lines {
			if !strings.HasSuffix(raw, "\n") {
				break // a line still being written: read it again next time
			}
			w.lines++
			var l logLine
			if json.Unmarshal([]byte(raw), &l) != nil {
				continue
			}
			w.note(l)
			if match(l) {
				return
			}
		}
		if match(logLine{}) {
			return
		}
		if time.Now().After(deadline) {
			w.g.t.Fatalf("watch: no %s within %v; open limits-intact findings %v; log:\n%s", what, timeout, w.open,
				w.g.sh("tail -n 40 "+watchLog))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *watcher) note(l logLine) {
	if l.msg("scan") && l.Data["trigger"] != "period" && l.Data["trigger"] != "start" {
		cpu, _ := l.Data["cpu"].(float64)
		d, _ := l.Data["duration"].(float64)
		w.scanCPU = append(w.scanCPU, time.Duration(cpu*float64(time.Second)))
		w.scanTime = append(w.scanTime, time.Duration(d*float64(time.Second)))
	}
	if l.Data["check"] != "limits-intact" {
		return
	}
	k := fmt.Sprint(l.Data["subject"], "\x00", l.Data["detail"])
	switch {
	case l.msg("finding"):
		w.open[k] = fmt.Sprint(l.Data["subject"])
	case l.msg("finding-cleared"):
		delete(w.open, k)
	}
}

// summary is "p50 X, p95 Y, max Z" of ds (nearest rank).
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return fmt.Sprintf("p50 %v, p95 %v, max %v", rank(0.50).Round(time.Millisecond), rank(0.95).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
