package drain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// Lift lets the VM go despite blocking findings, on this VM only, until
// it expires. The agent runs the drain of the job already on the VM, so a
// manifest change cannot lift a block in time; an operator runs `cellguard
// drain lift` over bosh ssh instead, and the lift says who and why.
type Lift struct {
	Reason string `json:"reason"`
	// By is who lifted: --by, else the user sudo ran for, else the user.
	By string `json:"by"`
	// SudoUser and SudoUID are what sudo recorded (bosh ssh's user).
	SudoUser string `json:"sudo_user,omitempty"`
	SudoUID  string `json:"sudo_uid,omitempty"`
	// UID is the real uid that wrote the lift (0 under sudo).
	UID     int       `json:"uid"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// DefaultLiftFor and MaxLiftFor bound a lift's life: long enough for one
// deploy to pass this VM, never a permanent override.
const (
	DefaultLiftFor = time.Hour
	MaxLiftFor     = 24 * time.Hour
)

const timeLayout = time.RFC3339

// ErrNoLift means no lift file exists.
var ErrNoLift = errors.New("no lift")

// NewLift builds a lift from now for d.
func NewLift(reason, by string, now time.Time, d time.Duration) (Lift, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return Lift{}, errors.New("lift: a reason is required (say why this VM may go despite its findings)")
	case d <= 0:
		return Lift{}, fmt.Errorf("lift: duration %v: must be above zero", d)
	case d > MaxLiftFor:
		return Lift{}, fmt.Errorf("lift: duration %v: at most %v (a lift is for one deploy, not a standing override)", d, MaxLiftFor)
	case strings.TrimSpace(by) == "":
		return Lift{}, errors.New("lift: who lifts is unknown; pass --by NAME")
	}
	now = now.UTC().Truncate(time.Second)
	return Lift{Reason: reason, By: by, UID: os.Getuid(), Created: now, Expires: now.Add(d)}, nil
}

// ActiveAt reports whether the lift holds at now: created at or before
// now, not yet expired, and no longer-lived than MaxLiftFor (a file edited
// by hand to last a year holds for none of it).
func (l Lift) ActiveAt(now time.Time) bool {
	return !now.Before(l.Created) && now.Before(l.Expires) && l.Expires.Sub(l.Created) <= MaxLiftFor
}

// State names the lift's state at now: "active", "expired" or "invalid".
func (l Lift) State(now time.Time) string {
	switch {
	case l.ActiveAt(now):
		return "active"
	case !now.Before(l.Expires) && l.Expires.Sub(l.Created) <= MaxLiftFor:
		return "expired"
	}
	return "invalid"
}

// WriteLift writes the lift atomically, readable by root alone, in a
// directory only root can enter: the lift's own, made 0700 here whoever
// made it first (a mkdir -p leaves it 0755), and refused when it is not a
// directory of ours.
func WriteLift(path string, l Lift) error {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write lift: %w", err)
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("write lift: %w", err)
	}
	if _, err := safefile.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write lift: %w", err)
	}
	return nil
}

// privateDir makes dir, or finds it, as a directory of ours with mode 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: directory %s is owned by uid %d, not root; fix: remove it, the lift makes it again",
			safefile.ErrUntrusted, dir, st.Uid)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	return nil
}

// ReadLift reads the lift at path through safefile.OpenTrusted: a file
// someone other than root could have written, or pointed a link at, is
// refused (safefile.ErrUntrusted): whoever can write it can let a VM with
// escaped containers go. ErrNoLift when there is none.
func ReadLift(path string) (Lift, error) {
	f, err := safefile.OpenTrusted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Lift{}, ErrNoLift
	} else if err != nil {
		return Lift{}, fmt.Errorf("read lift: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return Lift{}, fmt.Errorf("read lift: %w", err)
	}
	var l Lift
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Lift{}, fmt.Errorf("read lift %s: %w", path, err)
	}
	if l.Reason == "" || l.By == "" || l.Created.IsZero() || l.Expires.IsZero() {
		return Lift{}, fmt.Errorf("read lift %s: reason, by, created and expires are required", path)
	}
	return l, nil
}

// CancelLift removes the lift; it reports whether there was one.
func CancelLift(path string) (bool, error) {
	removed, err := safefile.RemoveIfExists(path)
	if err != nil {
		return removed, fmt.Errorf("cancel lift: %w", err)
	}
	return removed, nil
}
