// Package watch is `cellguard watch`: a daemon that runs the validator's
// checks (the same registry, the same shared scan, the same validator.Run)
// whenever systemd may have moved processes or (on cgroup v2) anyone wrote
// a cgroup.subtree_control above a container, and on a period, and reports
// what changed: a log line when a finding appears and when it clears,
// Prometheus metrics on /metrics and in a node_exporter textfile, and,
// when asked, heals the escapes the checks confirmed (package heal) within
// its budget.
//
// Policy (which checks, severities, where to listen) comes from the
// caller (cli/watch.go); this package owns the loop, coalescing,
// reconnecting and the bookkeeping of what it already reported.
package watch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Triggers label cellguard_scans_total.
const (
	TriggerStart     = "start"
	TriggerPeriod    = "period"
	TriggerReconnect = "reconnect"
	// TriggerSettle is the scan a burst of events gets settleDelay after
	// its last event.
	TriggerSettle = "settle"
)

// Triggers are every trigger label value: start, period, reconnect,
// settle and each systemd event kind.
var Triggers = []string{TriggerStart, TriggerPeriod, TriggerReconnect, TriggerSettle,
	string(systemd.JobFinished), string(systemd.UnitNew), string(systemd.CgroupChanged),
	string(systemd.Reloaded), string(systemd.ManagerRestarted), string(SubtreeChanged)}

// Defaults.
const (
	DefaultPeriod = 60 * time.Second
	// DefaultDebounce gathers the signals one unit start sends (UnitNew,
	// PropertiesChanged, JobRemoved: within tens of ms) into one scan,
	// which starts once no event came for this long (schedule.go).
	DefaultDebounce = 20 * time.Millisecond
	// maxDebounce bounds that wait from a burst's first event: events
	// that never go quiet still get a scan this often (CPU permitting).
	maxDebounce = 200 * time.Millisecond
	// settleDelay is when a burst's settle scan runs, after its last
	// event. systemd 252 moved a neighbour's processes 0-76 ms after the
	// first signal of the start that caused it, usually before its
	// JobRemoved but sometimes after, with no signal of its own
	// (docs/performance.md, "When systemd moves"): 250 ms is three times
	// the longest gap measured and keeps a late move's detection (plus
	// ConfirmSchedule's 600 ms) under a second. Longer than the gap
	// between starts in a storm of 10 a second, so a storm's settle scans
	// are covered by its next bursts' scans and cost nothing extra.
	settleDelay = 250 * time.Millisecond
	// DefaultHealPerMinute is heal.DefaultPerMinute.
	DefaultHealPerMinute = heal.DefaultPerMinute
	// eventCPUShare bounds the CPU event-driven scans may take on average:
	// after a scan that used c of CPU, the next event scan waits until
	// c/eventCPUShare has passed since this one began. A storm of unit
	// starts then costs at most about a tenth of a core, however big the
	// cell (docs/performance.md).
	eventCPUShare = 0.1
	// DefaultScanTimeout bounds a scan's wait for its checks: a check that
	// overruns it could not judge in that scan, and the scan goes on
	// without it. A full scan of a large cell takes about a second
	// (docs/performance.md).
	DefaultScanTimeout = 30 * time.Second
	// textfileEvery is how often an unchanged state is written to the
	// textfile again (node_exporter is scraped every 15-60s); a change is
	// written at once.
	textfileEvery = 10 * time.Second
)

// ConfirmSchedule is watch's wait before a suspected escape counts: 600ms
// in three re-reads, against the validator's 1.5s in four, so a finding
// is reported within a second of the job that caused it. A `runc exec`
// still joining is excused by its parent, the host's runc binary, within a
// grace (checks' runcvouch.go), never by its comm.
var ConfirmSchedule = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}

// Config is what the caller decides.
type Config struct {
	// Registry returns the checks bound to one scan's read of the host.
	Registry func(src *snapshot.Source) []validator.Check
	// Read reads the host for one scan; nil means snapshot.Read of Root
	// and RuntimeRoots.
	Read func() (*snapshot.Host, error)
	// OnEvent are the check ids run after systemd events; the period runs
	// them all.
	OnEvent []string
	// Options are validator.Run's: phase for severities, ignore, overrides.
	Options validator.Options
	Period  time.Duration
	// Debounce is how long events must be quiet before an event scan
	// starts (bounded by maxDebounce from the first).
	Debounce time.Duration
	// ScanTimeout bounds each scan (DefaultScanTimeout when 0): a check
	// still running then could not judge in that scan, and is not started
	// again until it ends.
	ScanTimeout time.Duration
	// Heal moves escaped processes back (validate --fix's heal), at most
	// HealPerMinute a minute.
	Heal          bool
	HealPerMinute int
	// HealLedger is the file of the host's shared heal record (drain heals
	// too, within the same cap); "" keeps the record in this process.
	HealLedger string
	// Healer heals; nil means heal.Mover.
	Healer heal.Healer
	// Systemd yields systemd's events; nil means none (periodic scans
	// only, e.g. systemd is not init here).
	Systemd Source
	// Listen is the /metrics address; empty serves nothing.
	Listen string
	// TLS, when set, serves /metrics over mutual TLS.
	TLS *TLSFiles
	// Textfile is the node_exporter textfile path; empty writes none.
	Textfile string
	// Root and RuntimeRoots: which runtime roots to report present.
	Root         string
	RuntimeRoots []string
	// Once runs one full scan and returns.
	Once   bool
	Logger lager.Logger
}

// TLSFiles are PEM files for mutual TLS on /metrics: the server's
// certificate and key, and the CA that signs scrapers' client
// certificates (CF's metric_scraper_ca).
type TLSFiles struct {
	Cert, Key, CA string
}

// Watcher is one running daemon.
type Watcher struct {
	cfg     Config
	log     lager.Logger
	m       *metrics.Watch
	open    map[string]openFinding
	roots   map[string]bool
	budget  *heal.Budget
	lastTF  time.Time
	tfBad   bool
	changed bool // the open findings changed since the textfile was written
	// scans numbers the scans since start; a healed line carries its
	// scan's, so the heals cellguard_healed_processes_total counts (one per
	// process and scan) can be read back from the log.
	scans uint64
	// judged is each check's last result that judged (not an error), and
	// escaped the processes each check last judged escaped: what a check
	// that could not judge keeps showing (made on first use).
	judged  map[string]validator.Result
	escaped map[string]map[string]bool
	// running is the checks and the host read of earlier scans that
	// outlived their deadline.
	running inflight
	// subtree watches the v2 cgroup.subtree_control files above the
	// containers read last (nil: not watching).
	subtree      *subtreeWatch
	subtreeShown int // the count of watched files last logged
}

// New builds a watcher; Run starts it.
func New(cfg Config) *Watcher {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	if cfg.ScanTimeout <= 0 {
		cfg.ScanTimeout = DefaultScanTimeout
	}
	if cfg.HealPerMinute <= 0 {
		cfg.HealPerMinute = DefaultHealPerMinute
	}
	return &Watcher{
		cfg:    cfg,
		log:    cfg.Logger,
		m:      metrics.NewWatch(Triggers),
		open:   map[string]openFinding{},
		roots:  map[string]bool{},
		budget: heal.NewSharedBudget(cfg.HealPerMinute, cfg.HealLedger, nil),
	}
}

// Metrics are the watcher's families (for --once and tests).
func (w *Watcher) Metrics() *metrics.Watch { return w.m }

// Run scans at start, after systemd events and on the period until ctx
// ends. It returns only then: faults (systemd gone, a port in use, an
// unreadable /proc) are logged, counted and retried, never fatal.
func (w *Watcher) Run(ctx context.Context) {
	w.log.Info("watching", lager.Data{"period": w.cfg.Period.String(), "heal": w.cfg.Heal,
		"on_event": w.cfg.OnEvent, "listen": w.cfg.Listen, "tls": w.cfg.TLS != nil, "textfile": w.cfg.Textfile})
	if w.cfg.Once {
		w.scan(ctx, TriggerStart, true)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if w.cfg.Listen != "" {
		go w.serve(ctx)
	}
	events := make(chan systemd.Event, systemd.EventBuffer)
	if w.cfg.Systemd != nil {
		go w.follow(ctx, events)
	} else {
		w.log.Info("no-systemd-events", lager.Data{"reason": "systemd is not init here: periodic scans only"})
	}
	w.watchSubtrees(ctx, events)
	w.scan(ctx, TriggerStart, true)

	period := time.NewTicker(w.cfg.Period)
	defer period.Stop()
	sch := &schedule{quiet: w.cfg.Debounce, maxWait: maxDebounce, settle: settleDelay, share: eventCPUShare}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var fire <-chan time.Time // nil while no event scan is due
	arm := func() {
		timer.Stop()
		fire = nil
		if at, ok := sch.due(); ok {
			timer.Reset(time.Until(at))
			fire = timer.C
		}
	}
	arm()
	for {
		select {
		case <-ctx.Done():
			w.log.Info("stopping")
			return
		case <-period.C:
			sch.covered(time.Now())
			w.scan(ctx, TriggerPeriod, true)
			arm()
		case e := <-events:
			at := e.At
			if at.IsZero() {
				at = time.Now()
			}
			sch.event(at, string(e.Kind))
			arm()
		case <-fire:
			start := time.Now()
			trig, last := sch.begin(start)
			cpu := w.scan(ctx, trig, false)
			sch.done(start, cpu, last)
			arm()
		}
	}
}

// scan runs the checks once and reports; it returns the CPU time it took.
func (w *Watcher) scan(ctx context.Context, trigger string, full bool) time.Duration {
	cpu0 := processCPU()
	start := time.Now()
	healing := w.cfg.Heal
	src := snapshot.From(w.guardedRead)
	registry := w.cfg.Registry(src)
	if !full {
		registry = subset(registry, w.cfg.OnEvent)
	}
	// Every scan ends: a check still running at the deadline could not
	// judge in this scan, and is not started again while it runs.
	sctx, cancel := context.WithTimeout(ctx, w.cfg.ScanTimeout)
	rep := validator.Run(sctx, w.guard(registry), w.cfg.Options)
	cancel()
	if ctx.Err() != nil {
		return 0
	}
	if healing {
		heal.ReportWithin(&rep, src, w.healer(), w.budget)
	}
	end := time.Now()
	w.scans++
	w.report(rep, trigger)
	w.checkRoots()
	cpu := processCPU() - cpu0
	w.m.Scans.WithLabelValues(trigger).Inc()
	w.m.ScanDuration.Observe(end.Sub(start).Seconds())
	w.m.ScanCPU.Add(cpu.Seconds())
	w.m.LastScan.Set(float64(end.UnixNano()) / 1e9)
	w.log.Debug("scan", lager.Data{"trigger": trigger, "checks": len(registry), "heal": healing,
		"duration": end.Sub(start).Seconds(), "cpu": cpu.Seconds()})
	w.writeTextfile(end)
	return cpu
}

// read reads the host for one scan.
func (w *Watcher) read() (*snapshot.Host, error) {
	if w.cfg.Read != nil {
		return w.cfg.Read()
	}
	return snapshot.Read(snapshot.Spec{Root: w.cfg.Root, RuntimeRoots: w.cfg.RuntimeRoots})
}

func (w *Watcher) healer() heal.Healer {
	if w.cfg.Healer != nil {
		return w.cfg.Healer
	}
	return heal.Mover{}
}

func subset(registry []validator.Check, ids []string) []validator.Check {
	var out []validator.Check
	for _, c := range registry {
		if slices.Contains(ids, c.Meta().ID) {
			out = append(out, c)
		}
	}
	return out
}

// checkRoots reports runtime roots appearing and disappearing.
func (w *Watcher) checkRoots() {
	for _, r := range w.cfg.RuntimeRoots {
		fi, err := os.Stat(filepath.Join(w.root(), r))
		present := err == nil && fi.IsDir()
		was, seen := w.roots[r]
		w.roots[r] = present
		w.m.RuntimeRootPresent.WithLabelValues(r).Set(boolFloat(present))
		switch {
		case seen && was == present:
		case present:
			w.log.Info("runtime-root-present", lager.Data{"root": r})
		case seen:
			w.log.Info("runtime-root-gone", lager.Data{"root": r})
		}
	}
}

func (w *Watcher) root() string {
	if w.cfg.Root == "" {
		return "/"
	}
	return w.cfg.Root
}

// writeTextfile writes the textfile when the reported state changed or
// textfileEvery passed; a failure is logged when it starts and when it
// ends, and counted each time.
func (w *Watcher) writeTextfile(now time.Time) {
	if w.cfg.Textfile == "" {
		return
	}
	if !w.changed && now.Sub(w.lastTF) < textfileEvery && !w.tfBad {
		return
	}
	w.changed = false
	if err := metrics.WriteTextfile(w.cfg.Textfile, w.m.Own); err != nil {
		w.m.TextfileWriteFails.Inc()
		if !w.tfBad {
			w.log.Error("textfile-write-failed", err, lager.Data{"path": w.cfg.Textfile,
				"hint": "the job's pre-start creates the directory; watch retries after every scan"})
		}
		w.tfBad = true
		return
	}
	if w.tfBad {
		w.log.Info("textfile-written-again", lager.Data{"path": w.cfg.Textfile})
	}
	w.tfBad = false
	w.lastTF = now
}

// processCPU is the user+system time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
