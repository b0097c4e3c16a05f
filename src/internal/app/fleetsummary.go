package app

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cloudfoundry/cellguard/src/internal/fleetsummary"
)

// Fleet is one screen for the whole fleet, from what `bosh --json
// run-errand cellguard-validate` printed.
type Fleet struct {
	// Summary is the fleet's, as --json prints it.
	Summary fleetsummary.Summary
}

// FleetError is input that holds no run-errand result; Hint says what to
// give instead when the input was not what the errand prints.
type FleetError struct {
	Err  error
	Hint string
}

func (e *FleetError) Error() string { return e.Err.Error() }
func (e *FleetError) Unwrap() error { return e.Err }

// SummarizeFleet reads the errand's output. Its error is a *FleetError.
func SummarizeFleet(in []byte) (Fleet, error) {
	instances, err := fleetsummary.ParseErrand(in)
	if err == nil && len(instances) == 0 {
		err = fleetsummary.ErrNoErrandTable
	}
	if err != nil {
		fe := &FleetError{Err: err}
		if errors.Is(err, fleetsummary.ErrNoErrandTable) || errors.Is(err, fleetsummary.ErrNotJSON) {
			fe.Hint = "give it the whole output of bosh -d DEPLOYMENT --json run-errand cellguard-validate"
		}
		return Fleet{}, fe
	}
	return Fleet{Summary: fleetsummary.Summarize(instances)}, nil
}

// Healthy says every instance passed.
func (f Fleet) Healthy() bool { return f.Summary.Healthy() }

// Write writes the screen.
func (f Fleet) Write(w io.Writer) error { return fleetsummary.Write(w, f.Summary) }

// FleetInput reads the errand's output from FILE, or from stdin for ""
// and "-", and names where it came from.
func FleetInput(stdin io.Reader, path string) ([]byte, string, error) {
	if path == "" || path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, "", fmt.Errorf("read stdin: %w", err)
		}
		return b, "stdin", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read errand output: %w", err)
	}
	return b, path, nil
}
