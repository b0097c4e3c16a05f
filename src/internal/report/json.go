package report

import (
	"bytes"
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

// JSON writes the report as one indented JSON document, safe to show in
// a terminal (EscapeJSON): the errand prints it.
func JSON(w io.Writer, rep validator.Report, now time.Time) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(jsonReport{Report: rep, GeneratedAt: now.UTC()}); err != nil {
		return err
	}
	_, err := w.Write(EscapeJSON(b.Bytes()))
	return err
}
