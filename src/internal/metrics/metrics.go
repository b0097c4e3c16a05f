// Package metrics is cellguard's one home for Prometheus metrics: the
// families `validate` and `drain` write to node_exporter's textfile and `watch` serves
// on /metrics and writes to its own textfile, defined once and encoded by
// client_golang. It knows the framework's results (validator.Result) and
// nothing of the host.
package metrics

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Prefix starts every family cellguard defines.
const Prefix = "cellguard_"

// StatusValue is the cellguard_check_status value of a status: 0 pass,
// 1 warn, 2 fail, 3 error. A skipped check passes (0): nothing to check.
func StatusValue(s validator.Status) float64 {
	switch s {
	case validator.Warn:
		return 1
	case validator.Fail:
		return 2
	case validator.Error:
		return 3
	}
	return 0
}

// Checks are the per-check families, labelled {check, phase}. validate
// sets them for its phase; watch for phase "watch".
type Checks struct {
	Status, Findings, Blocking, Duration *prometheus.GaugeVec
}

// NewChecks registers the per-check families on reg.
func NewChecks(reg prometheus.Registerer) *Checks {
	labels := []string{"check", "phase"}
	c := &Checks{
		Status: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_check_status",
			Help: "Outcome of a cellguard validator check: 0 pass, 1 warn, 2 fail, 3 error."}, labels),
		Findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_check_findings",
			Help: "Problem findings (fail, warn, error) a check reported."}, labels),
		Blocking: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_check_blocking",
			Help: "1 when this check's result blocks the rollout (blocking severity, failed or errored, not ignored)."}, labels),
		Duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cellguard_check_duration_seconds",
			Help: "How long a check ran."}, labels),
	}
	reg.MustRegister(c.Status, c.Findings, c.Blocking, c.Duration)
	return c
}

// Observe sets each result's gauges; checks not in results keep theirs
// (watch runs some checks only on its period).
func (c *Checks) Observe(phase validator.Phase, results []validator.Result) {
	for _, r := range results {
		l := prometheus.Labels{"check": r.ID, "phase": string(phase)}
		c.Status.With(l).Set(StatusValue(r.Status))
		c.Findings.With(l).Set(float64(r.Count()))
		c.Blocking.With(l).Set(boolValue(r.Blocking))
		c.Duration.With(l).Set(r.Duration)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Encode renders what g gathers in the text exposition format, families
// sorted by name. Only families named with Prefix are kept when ownOnly
// is set: node_exporter's textfile collector refuses a family it exports
// itself (process_*, go_*).
func Encode(g prometheus.Gatherer, ownOnly bool) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if ownOnly && !strings.HasPrefix(mf.GetName(), Prefix) {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
	}
	return b.Bytes(), nil
}

// WriteTextfile writes cellguard's families gathered from g to path for
// node_exporter's textfile collector, atomically: node_exporter may read
// it at any moment and must never see half a file. The file is named
// *.prom by the caller; the collector reads only those.
func WriteTextfile(path string, g prometheus.Gatherer) error {
	b, err := Encode(g, true)
	if err != nil {
		return fmt.Errorf("write prometheus textfile: %w", err)
	}
	if _, err := safefile.WriteFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("write prometheus textfile: %w", err)
	}
	return nil
}
