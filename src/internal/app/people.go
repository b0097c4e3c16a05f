package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/report"
)

// Errorf writes "cellguard: error: ..." for people, escaped: the text may
// carry what tenants named. The caller logs the same fact when it has a
// logger.
func Errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "cellguard: error: %s\n", report.Escape(fmt.Sprintf(format, args...)))
}

// Hintf writes "cellguard: hint: ..." after an error.
func Hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "cellguard: hint: %s\n", report.Escape(fmt.Sprintf(format, args...)))
}

// CouldNotRun is why a use case could not run at all (the config, /proc,
// a flag), with a hint for people; never a finding.
type CouldNotRun struct {
	Err  error
	Hint string
}

func (c *CouldNotRun) Error() string { return c.Err.Error() }
func (c *CouldNotRun) Unwrap() error { return c.Err }

// Print writes the error and its hint for people.
func (c *CouldNotRun) Print(w io.Writer) {
	Errorf(w, "%v", c.Err)
	if c.Hint != "" {
		Hintf(w, "%s", c.Hint)
	}
}

// PrintErr writes err for people: a *config.Error a line per problem,
// anything else one line (Errorf).
func PrintErr(w io.Writer, err error) {
	var cerr *config.Error
	if errors.As(err, &cerr) {
		for _, l := range cerr.Lines() {
			fmt.Fprintf(w, "cellguard: error: %s\n", report.Escape(l))
		}
		return
	}
	Errorf(w, "%v", err)
}

// Escape makes text a tenant may have named safe for a terminal.
func Escape(s string) string { return report.Escape(s) }

// EscapeJSON is Escape for a JSON document.
func EscapeJSON(b []byte) []byte { return report.EscapeJSON(b) }
