package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// WatchPhase labels the per-check families watch sets: the checks run
// with drain's severities (what the next drain would decide), but the
// result is watch's, not a drain's.
const WatchPhase = "watch"

// Watch holds the families `cellguard watch` exports.
type Watch struct {
	// Own holds cellguard's families: what the textfile carries.
	Own *prometheus.Registry
	// All adds the process collector (CPU, RSS, fds of watch itself) for
	// /metrics; node_exporter exports its own process_* families, so the
	// textfile leaves them out.
	All prometheus.Gatherers

	Checks             *Checks
	CouldNotJudge      *prometheus.GaugeVec
	Escaped            prometheus.Gauge
	Healed             prometheus.Counter
	HealFailed         prometheus.Counter
	HealRateLimited    prometheus.Counter
	Scans              *prometheus.CounterVec
	ScanDuration       prometheus.Histogram
	ScanCPU            prometheus.Counter
	LastScan           prometheus.Gauge
	SystemdConnected   prometheus.Gauge
	SystemdReconnects  prometheus.Counter
	ListenerUp         prometheus.Gauge
	TextfileWriteFails prometheus.Counter
	RuntimeRootPresent *prometheus.GaugeVec
}

// NewWatch registers watch's families; triggers are the scan trigger
// label values, set to 0 up front so rate() has a start.
func NewWatch(triggers []string) *Watch {
	own := prometheus.NewRegistry()
	w := &Watch{
		Own:    own,
		Checks: NewChecks(own),
		CouldNotJudge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_check_could_not_judge",
			Help: "1 while a check's last run in watch could not judge (an error, the host unreadable, past the scan's deadline): " +
				"its findings stay open and its gauges keep their last judged values."}, []string{"check"}),
		Escaped: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellguard_escaped_processes",
			Help: "Container processes outside a cgroup their runtime recorded, in the last scan that judged (after healing)."}),
		Healed: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellguard_healed_processes_total",
			Help: "Escaped container processes watch moved back into every recorded cgroup and verified there."}),
		HealFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellguard_heal_failures_total",
			Help: "Moves back that failed or did not take (the recorded cgroup is gone, the kernel refused)."}),
		HealRateLimited: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellguard_heal_rate_limited_total",
			Help: "Escapes left unhealed in a scan because the heal budget was spent."}),
		Scans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellguard_scans_total",
			Help: "Scans watch ran, by what triggered them."}, []string{"trigger"}),
		ScanDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellguard_scan_duration_seconds",
			Help:    "Wall time of a scan, including the waits that confirm a suspected escape.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
		ScanCPU: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellguard_scan_cpu_seconds_total",
			Help: "CPU time (user+system) watch spent in scans."}),
		LastScan: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellguard_last_scan_timestamp_seconds",
			Help: "Unix time the last scan finished."}),
		SystemdConnected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellguard_systemd_connected",
			Help: "1 while watch receives systemd's signals over D-Bus; 0 means periodic scans only."}),
		SystemdReconnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellguard_systemd_reconnects_total",
			Help: "Times watch connected to systemd again after losing the connection."}),
		ListenerUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellguard_metrics_listener_up",
			Help: "1 while /metrics is served; 0 while the address cannot be bound (seen in the textfile)."}),
		TextfileWriteFails: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellguard_textfile_write_failures_total",
			Help: "Failed writes of watch's node_exporter textfile."}),
		RuntimeRootPresent: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_runtime_root_present",
			Help: "1 when a runtime state root exists at the last scan."}, []string{"root"}),
	}
	own.MustRegister(w.CouldNotJudge, w.Escaped, w.Healed, w.HealFailed, w.HealRateLimited, w.Scans, w.ScanDuration, w.ScanCPU,
		w.LastScan, w.SystemdConnected, w.SystemdReconnects, w.ListenerUp, w.TextfileWriteFails, w.RuntimeRootPresent)
	for _, t := range triggers {
		w.Scans.WithLabelValues(t)
	}
	proc := prometheus.NewRegistry()
	proc.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	w.All = prometheus.Gatherers{own, proc}
	return w
}
