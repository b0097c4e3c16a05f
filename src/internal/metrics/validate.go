package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// ValidateTextfile renders one validator run as the textfile
// `validate --prometheus-textfile` writes: the per-check families plus
// cellguard_validate_blocked and cellguard_validate_timestamp_seconds,
// labelled with the run's phase.
func ValidateTextfile(rep validator.Report, now time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	NewChecks(reg).Observe(rep.Phase, rep.Results)
	blocked := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_validate_blocked",
		Help: "1 when the validator blocked the rollout (exit 1)."}, []string{"phase"})
	ts := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_validate_timestamp_seconds",
		Help: "Unix time the validator ran."}, []string{"phase"})
	reg.MustRegister(blocked, ts)
	blocked.WithLabelValues(string(rep.Phase)).Set(boolValue(rep.Blocked))
	ts.WithLabelValues(string(rep.Phase)).Set(float64(now.Unix()))
	return reg
}

// WriteValidateTextfile writes a validator run's textfile atomically.
func WriteValidateTextfile(path string, rep validator.Report, now time.Time) error {
	return WriteTextfile(path, ValidateTextfile(rep, now))
}
