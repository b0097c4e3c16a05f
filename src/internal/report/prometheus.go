package report

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// StatusValue is the cellguard_check_status value of a status: 0 pass,
// 1 warn, 2 fail, 3 error. A skipped check passes (0): nothing to check.
func StatusValue(s validator.Status) int {
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

// Prometheus renders the report in the text exposition format.
func Prometheus(rep validator.Report, now time.Time) []byte {
	var b bytes.Buffer
	phase := string(rep.Phase)
	family := func(name, help string, each func()) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		each()
	}
	family("cellguard_check_status", "Outcome of a cellguard validator check: 0 pass, 1 warn, 2 fail, 3 error.", func() {
		for _, r := range rep.Results {
			fmt.Fprintf(&b, "cellguard_check_status{check=%s,phase=%s} %d\n", quote(r.ID), quote(phase), StatusValue(r.Status))
		}
	})
	family("cellguard_check_findings", "Problem findings (fail, warn, error) a check reported.", func() {
		for _, r := range rep.Results {
			fmt.Fprintf(&b, "cellguard_check_findings{check=%s,phase=%s} %d\n", quote(r.ID), quote(phase), Count(r))
		}
	})
	family("cellguard_check_blocking", "1 when this check's result blocks the rollout (blocking severity, failed or errored, not ignored).", func() {
		for _, r := range rep.Results {
			v := 0
			if r.Blocking {
				v = 1
			}
			fmt.Fprintf(&b, "cellguard_check_blocking{check=%s,phase=%s} %d\n", quote(r.ID), quote(phase), v)
		}
	})
	family("cellguard_check_duration_seconds", "How long a check ran.", func() {
		for _, r := range rep.Results {
			fmt.Fprintf(&b, "cellguard_check_duration_seconds{check=%s,phase=%s} %g\n", quote(r.ID), quote(phase), r.Duration)
		}
	})
	family("cellguard_validate_blocked", "1 when the validator blocked the rollout (exit 1).", func() {
		v := 0
		if rep.Blocked {
			v = 1
		}
		fmt.Fprintf(&b, "cellguard_validate_blocked{phase=%s} %d\n", quote(phase), v)
	})
	family("cellguard_validate_timestamp_seconds", "Unix time the validator ran.", func() {
		fmt.Fprintf(&b, "cellguard_validate_timestamp_seconds{phase=%s} %d\n", quote(phase), now.Unix())
	})
	return b.Bytes()
}

// WritePrometheusFile writes the textfile atomically: node_exporter may
// read it at any moment and must never see half a file.
func WritePrometheusFile(path string, rep validator.Report, now time.Time) error {
	if _, err := safefile.WriteFileAtomic(path, Prometheus(rep, now), 0o644); err != nil {
		return fmt.Errorf("write prometheus textfile: %w", err)
	}
	return nil
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func quote(s string) string { return `"` + labelEscaper.Replace(s) + `"` }
