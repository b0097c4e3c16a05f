package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// jsonReport is the --format json document: the run plus when it ran.
type jsonReport struct {
	validator.Report
	GeneratedAt time.Time `json:"generated_at"`
}

// JSON writes the report as one indented JSON document.
func JSON(w io.Writer, rep validator.Report, now time.Time) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{Report: rep, GeneratedAt: now.UTC()})
}
