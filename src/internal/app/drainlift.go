package app

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/drain"
)

// How long a lift holds: by default, and at most.
const (
	DefaultLiftFor = drain.DefaultLiftFor
	MaxLiftFor     = drain.MaxLiftFor
)

// LiftRequest is an operator's lift of this VM's drain block.
type LiftRequest struct {
	Reason string
	// By is who lifts (WhoLifts); SudoUser and SudoUID are sudo's, logged.
	By, SudoUser, SudoUID string
	For                   time.Duration
}

// Lift records r at path so the next drains let the VM go despite
// blocking findings until it expires. A lift drain would refuse (no
// reason, past the cap) is a *CouldNotRun: nothing is written.
func Lift(logger lager.Logger, path string, now time.Time, r LiftRequest) (drain.Lift, error) {
	l, err := drain.NewLift(r.Reason, r.By, now, r.For)
	if err != nil {
		return l, &CouldNotRun{Err: err, Hint: `cellguard drain lift --reason "INC-123: known escapes, recreating the VM" [--for 1h]`}
	}
	l.SudoUser, l.SudoUID = r.SudoUser, r.SudoUID
	if err := drain.WriteLift(path, l); err != nil {
		logger.Error("write-lift", err)
		return l, err
	}
	logger.Info("lift-written", lager.Data{"file": path, "by": l.By, "sudo_user": l.SudoUser, "uid": l.UID,
		"reason": l.Reason, "created": l.Created, "expires": l.Expires})
	return l, nil
}

// CancelLift removes the lift at path, saying whether there was one.
func CancelLift(logger lager.Logger, path, by string) (bool, error) {
	removed, err := drain.CancelLift(path)
	if err != nil {
		logger.Error("cancel-lift", err)
		return false, err
	}
	logger.Info("lift-cancelled", lager.Data{"file": path, "removed": removed, "by": by})
	return removed, nil
}

// LiftShown is the lift at a path as drain would judge it now.
type LiftShown struct {
	File string      `json:"file"`
	Lift *drain.Lift `json:"lift,omitempty"`
	// State is "none", or the lift's: "active", "expired" or "invalid".
	State string `json:"state"`
}

// ShowLift reads the lift at path; an error is a lift drain will not
// trust (it ignores it).
func ShowLift(path string, now time.Time) (LiftShown, error) {
	l, err := drain.ReadLift(path)
	switch {
	case errors.Is(err, drain.ErrNoLift):
		return LiftShown{File: path, State: "none"}, nil
	case err != nil:
		return LiftShown{File: path}, err
	}
	return LiftShown{File: path, State: l.State(now), Lift: &l}, nil
}

// WhoLifts is the first of who: --by, the user sudo ran for (bosh ssh's),
// the user, the login name.
func WhoLifts(who ...string) string {
	for _, v := range who {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// Write writes the lift for people: whether it holds, until when, by whom
// and why.
func (s LiftShown) Write(w io.Writer, now time.Time) {
	l := s.Lift
	switch s.State {
	case "none":
		fmt.Fprintf(w, "no lift (%s): drain blocks on blocking findings of an update\n", s.File)
	case "active":
		fmt.Fprintf(w, "lift active until %s (%v left), by %s: %s\n", l.Expires.Format(time.RFC3339), l.Expires.Sub(now).Round(time.Second), l.By, l.Reason)
	case "expired":
		fmt.Fprintf(w, "lift expired at %s (by %s: %s); drain no longer uses it\n", l.Expires.Format(time.RFC3339), l.By, l.Reason)
	default:
		fmt.Fprintf(w, "lift invalid (created %s, expires %s: not now, or longer than %v); drain does not use it\n",
			l.Created.Format(time.RFC3339), l.Expires.Format(time.RFC3339), drain.MaxLiftFor)
	}
}
