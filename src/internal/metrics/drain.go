package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// DrainTextfile is the textfile a drain writes: the validator's families of
// the run (none when it could not run) and what the drain did with them,
// labelled with the agent's event. cellguard_validate_blocked says whether
// the checks found something blocking; cellguard_drain_outcome says
// whether the drain then blocked the step or let the VM go, and why.
func DrainTextfile(rep *validator.Report, call drain.Call, d drain.Decision, now time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if rep != nil {
		reg = ValidateTextfile(*rep, now)
	}
	outcome := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_drain_outcome",
		Help: "What cellguard's drain did: 1 for the outcome of the last drain (pass, blocked, released_on_shutdown, lifted, budget_expired, could_not_run)."},
		[]string{"event", "outcome"})
	cantRun := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_drain_could_not_run",
		Help: "1 when cellguard's drain could not validate (bad config, unreadable /proc, a crash, killed): it let the VM go knowing nothing."},
		[]string{"event"})
	ts := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_drain_timestamp_seconds",
		Help: "Unix time of the last drain."}, []string{"event"})
	reg.MustRegister(outcome, cantRun, ts)
	event := string(call.Event)
	for _, o := range drain.Outcomes {
		outcome.WithLabelValues(event, string(o)).Set(boolValue(o == d.Outcome))
	}
	cantRun.WithLabelValues(event).Set(boolValue(d.Outcome == drain.CouldNotRun))
	ts.WithLabelValues(event).Set(float64(now.Unix()))
	return reg
}

// WriteDrainTextfile writes a drain's textfile atomically.
func WriteDrainTextfile(path string, rep *validator.Report, call drain.Call, d drain.Decision, now time.Time) error {
	return WriteTextfile(path, DrainTextfile(rep, call, d, now))
}
