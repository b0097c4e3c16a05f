package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// Key results in an apply.
const (
	ResultChanged    = "changed"     // written and read back
	ResultUnchanged  = "unchanged"   // already had the wanted value (or, for a floor, at least it)
	ResultInvalid    = "invalid"     // refused before anything was written
	ResultRejected   = "rejected"    // the kernel refused the value (EINVAL)
	ResultFailed     = "failed"      // the write failed for another reason
	ResultUnverified = "unverified"  // written, but the kernel holds something else
	ResultRolledBack = "rolled-back" // written, then restored because another key was rejected
	ResultSkipped    = "skipped"     // not attempted because the input was invalid
)

// KeyResult is one key of an apply.
type KeyResult struct {
	Key    string `json:"key"`
	Before string `json:"before"`
	Wanted string `json:"wanted"`
	// Mode is ModeExact or ModeAtLeast (Wanted is a floor).
	Mode    Mode   `json:"mode"`
	After   string `json:"after"`
	Changed bool   `json:"changed"`
	Result  string `json:"result"`
	Error   string `json:"error,omitempty"`
	// Persisted is the value the file holds for the key once written (empty
	// when it was not); for a floor it may be above Wanted (see Apply).
	Persisted string `json:"persisted,omitempty"`
	// Note explains a floor left alone or persisted above Wanted.
	Note string `json:"note,omitempty"`
	// BootNote warns that the boot configuration will not keep this value
	// (another file wins); check reports the same as boot drift.
	BootNote string `json:"boot_note,omitempty"`
}

// ApplyReport is the result of Apply.
type ApplyReport struct {
	Profile string `json:"profile"`
	File    string `json:"file"`
	// Persisted is true when File holds this profile after the run;
	// FileChanged when this run rewrote it.
	Persisted   bool `json:"persisted"`
	FileChanged bool `json:"file_changed"`
	// Removed: the profile wants nothing (profile none, nothing set), so
	// the file an earlier profile persisted was removed (see RemoveFile).
	Removed bool `json:"removed,omitempty"`
	// FileNote says why File was left alone when it should have gone.
	FileNote string `json:"file_note,omitempty"`
	// RemovedTemps counts the temp files a killed write left beside File,
	// removed by this run.
	RemovedTemps int         `json:"removed_temps,omitempty"`
	Changed      int         `json:"changed"` // keys written
	Keys         []KeyResult `json:"keys"`
}

// Apply is Host{Root: root}.Apply(p).
func Apply(root string, p Profile) (ApplyReport, error) { return Host{Root: root}.Apply(p) }

// Apply makes the profile true now and after a reboot, in this order:
//
//  1. validate every entry against the running kernel without writing
//     (unknown, read-only or write-only keys, non-numeric values for
//     numeric keys); any failure stops here with ErrInvalid;
//  2. write each value that differs (for a floor: each value below it;
//     a higher one is left alone); if the kernel rejects one (EINVAL),
//     restore every key written so far and stop with ErrInvalid: the
//     persisted file is only replaced when every entry is valid;
//  3. read every written key back;
//  4. persist the file atomically (its content is deterministic, so an
//     unchanged profile leaves it untouched);
//  5. note, per key, another sysctl.d file that will undo it at boot.
//
// Each step is a function below; entries carry their parsed Key and Mode
// through all of them.
//
// A floor is persisted as max(floor, B), where B is what the other
// sysctl.d files leave the key at boot, or, when none sets it, the live
// value after this run. Writing the bare floor would lower at boot what
// the host has: the kernel's own default (user.max_user_namespaces is half
// of threads-max, often above 63359) or an earlier file's higher value.
// Taking B from the other files rather than the live value keeps this file
// from fighting them: when an operator lowers their own file, the next
// apply follows it instead of holding a snapshot of the old value; a file
// read after ours that sets the key lower still wins, and check names it.
// Live, kernel or runtime values are kept because nothing else brings them
// back after a reboot. The result depends only on the host's files and
// live values, so a second run writes the same file.
//
// Failures that are not the input's fault (EPERM, a value the kernel
// stores differently, an unwritable file) return ErrNotApplied with the
// report filled in. A second run changes nothing: Changed is 0 and
// FileChanged false.
func (h Host) Apply(p Profile) (ApplyReport, error) {
	rep := ApplyReport{Profile: p.Name, File: p.File}
	if err := validateFile(p.File); err != nil {
		return rep, err
	}
	live := h.live()
	keys, err := validate(live, p, &rep)
	if err != nil {
		return rep, err
	}
	written, failures, err := writeLive(live, keys)
	if err != nil {
		return rep, err
	}
	failures = append(failures, readBack(live, keys, written, &rep)...)
	if err := h.persist(p, keys, &rep); err != nil {
		failures = append(failures, err)
	}
	h.noteBoot(p, keys)
	if len(failures) > 0 {
		return rep, fmt.Errorf("apply sysctls: %w: %w", errors.Join(failures...), ErrNotApplied)
	}
	return rep, nil
}

// applyKey is one entry on its way through Apply: its key parsed once,
// and the result reported for it.
type applyKey struct {
	key Key
	res *KeyResult
}

// validate is step 1: every entry against the running kernel, nothing
// written. Any failure stops Apply with ErrInvalid.
func validate(live Live, p Profile, rep *ApplyReport) ([]applyKey, error) {
	rep.Keys = make([]KeyResult, len(p.Entries))
	keys := make([]applyKey, len(p.Entries))
	var invalid []error
	for i, e := range p.Entries {
		kr := &rep.Keys[i]
		*kr = KeyResult{Key: e.Key, Wanted: e.Value, Mode: e.Mode.OrExact(), Result: ResultSkipped}
		keys[i].res = kr
		k, err := ParseKey(e.Key)
		var before string
		if err == nil {
			keys[i].key = k
			before, err = checkLive(live, k, e)
		}
		kr.Before = NormalizeValue(before)
		if err != nil {
			kr.Result, kr.Error = ResultInvalid, err.Error()
			invalid = append(invalid, err)
		}
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("apply sysctls: nothing written: %w", errors.Join(invalid...))
	}
	return keys, nil
}

// writeLive is step 2: write each value that differs (for a floor: each
// value below it). When the kernel rejects one, every key written so far
// is restored and the error (ErrInvalid) stops Apply; other write
// failures are returned to report.
func writeLive(live Live, keys []applyKey) (written []applyKey, failures []error, err error) {
	var rejections []error
	for _, ak := range keys {
		kr := ak.res
		if satisfies(kr.Mode, kr.Before, kr.Wanted) {
			kr.Result, kr.After = ResultUnchanged, kr.Before
			if kr.Before != kr.Wanted {
				kr.Note = fmt.Sprintf("already at least %s (%s), left alone", kr.Wanted, kr.Before)
			}
			continue
		}
		err := live.Write(ak.key, kr.Wanted)
		switch {
		case err == nil:
			written = append(written, ak)
			kr.Result = ResultChanged
		case rejected(err):
			kr.Result = ResultRejected
			kr.Error = fmt.Sprintf("%s: the kernel rejected %q: %v", ak.key, kr.Wanted, err)
			rejections = append(rejections, &inputError{msg: kr.Error, err: err})
		default:
			kr.Result, kr.Error = ResultFailed, err.Error()
			failures = append(failures, err)
		}
	}
	if len(rejections) == 0 {
		return written, failures, nil
	}
	rejections = append(rejections, rollback(live, written)...)
	for _, ak := range keys {
		if kr := ak.res; kr.Result != ResultRejected && kr.Result != ResultFailed {
			readAfter(live, ak)
		}
	}
	return nil, nil, fmt.Errorf("apply sysctls: file not written, live changes rolled back: %w", errors.Join(rejections...))
}

// rollback puts back what this run changed, newest first.
func rollback(live Live, written []applyKey) []error {
	var errs []error
	for j := len(written) - 1; j >= 0; j-- {
		ak := written[j]
		kr := ak.res
		if err := live.Write(ak.key, kr.Before); err != nil {
			kr.Result = ResultFailed
			kr.Error = fmt.Sprintf("rollback to %q failed: %v", kr.Before, err)
			errs = append(errs, fmt.Errorf("%s: rollback to %q: %w", ak.key, kr.Before, err))
			continue
		}
		kr.Result = ResultRolledBack
	}
	return errs
}

// readAfter records what the kernel holds for a key now, when it can say.
func readAfter(live Live, ak applyKey) {
	if v, err := live.Read(ak.key); err == nil {
		ak.res.After = NormalizeValue(v)
	}
}

// readBack is step 3: read every written key back; a floor is met by a
// kernel that rounds up (pipe sizes), an exact value must come back as
// written.
func readBack(live Live, keys, written []applyKey, rep *ApplyReport) []error {
	var failures []error
	for _, ak := range written {
		kr := ak.res
		v, err := live.Read(ak.key)
		if err != nil {
			kr.Result, kr.Error = ResultUnverified, err.Error()
			failures = append(failures, err)
			continue
		}
		kr.After = NormalizeValue(v)
		kr.Changed = kr.After != kr.Before
		if kr.Changed {
			rep.Changed++
		}
		if !satisfies(kr.Mode, kr.After, kr.Wanted) {
			kr.Result = ResultUnverified
			kr.Error = fmt.Sprintf("%s: wrote %q, the kernel holds %q%s (it clamps or rounds this key; use the value it holds)",
				ak.key, kr.Wanted, kr.After, floorText(kr.Mode, kr.Wanted))
			failures = append(failures, errors.New(kr.Error))
		}
	}
	for _, ak := range keys {
		if ak.res.Result == ResultFailed {
			readAfter(live, ak)
		}
	}
	return failures
}

// persist is step 4: write the file atomically. Every value is valid
// here, so the file is right for boot even if some key could not be
// written live (EPERM in a container).
func (h Host) persist(p Profile, keys []applyKey, rep *ApplyReport) error {
	// A write killed before its rename leaves .NAME.tmp-N beside the file;
	// pre-start is where that converges (one a minute old is no writer's).
	base := filepath.Base(p.File)
	temps, err := safefile.RemoveStaleTemps(filepath.Dir(hostroot.Join(h.Root, p.File)),
		func(t string) bool { return t == base }, time.Minute, time.Now())
	if err != nil {
		return fmt.Errorf("persist %s: %w", p.File, err)
	}
	rep.RemovedTemps = len(temps)
	if len(p.Entries) == 0 {
		removed, err := h.RemoveFile(p.File)
		if errors.Is(err, ErrNotOurs) {
			rep.FileNote = err.Error()
			return nil
		}
		rep.Removed = removed
		return err
	}
	over := h.persistFloors(p, keys)
	target := hostroot.Join(h.Root, p.File)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p.File), err)
	}
	res, err := safefile.WriteFileAtomic(target, render(p, over), 0o644)
	if err != nil {
		return fmt.Errorf("persist %s: %w", p.File, err)
	}
	rep.Persisted, rep.FileChanged = true, res.Changed
	for _, ak := range keys {
		kr := ak.res
		kr.Persisted = kr.Wanted
		if o, ok := over[kr.Key]; ok && o.Value != kr.Wanted {
			kr.Persisted = o.Value
			kr.Note = joinNote(kr.Note, fmt.Sprintf("%s keeps %s so a reboot does not lower it: %s",
				filepath.Base(p.File), o.Value, o.Why))
		}
	}
	return nil
}

// noteBoot is step 5: warn now about files that will undo us at boot;
// check reports the same as boot drift.
func (h Host) noteBoot(p Profile, keys []applyKey) {
	boot, err := LoadBoot(h.Root)
	if err != nil {
		return
	}
	for _, ak := range keys {
		kr := ak.res
		win := boot.Winner(ak.key)
		if win != nil && satisfies(kr.Mode, win.Value, kr.Wanted) {
			continue
		}
		kr.BootNote = explainBoot(boot, p.File, filepath.Base(p.File), ak.key, kr.Mode, kr.Wanted, win, boot.lastIn(p.File, ak.key))
	}
}

// persistFloors decides the persisted value of each at-least key (see
// Apply): max(floor, what the other files set at boot), or max(floor, the
// live value) when no other file sets it.
func (h Host) persistFloors(p Profile, keys []applyKey) map[string]persisted {
	boot, err := LoadBoot(h.Root)
	var others *BootConfig
	if err == nil {
		others = boot.without(p.File)
	}
	over := map[string]persisted{}
	for _, ak := range keys {
		kr := ak.res
		if kr.Mode != ModeAtLeast {
			continue
		}
		if others != nil {
			if w := others.Winner(ak.key); w != nil && decimal(w.Value) == nil {
				over[kr.Key] = persisted{
					Value: maxDecimal(kr.Wanted, w.Value),
					Why:   fmt.Sprintf("what %s sets", where(others, *w)),
				}
				continue
			}
		}
		live := kr.After
		if live == "" {
			live = kr.Before
		}
		over[kr.Key] = persisted{
			Value: maxDecimal(kr.Wanted, live),
			Why:   "the live value when cellguard applied it (no other sysctl.d file sets the key)",
		}
	}
	return over
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Summary is a one-line account of an apply, for humans and logs.
func (r ApplyReport) Summary() string {
	count := map[string]int{}
	for _, k := range r.Keys {
		count[k.Result]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keys: ", len(r.Keys))
	switch {
	case count[ResultInvalid] > 0:
		fmt.Fprintf(&b, "%d invalid, nothing written", count[ResultInvalid])
	case count[ResultRejected] > 0:
		fmt.Fprintf(&b, "the kernel rejected %d, %d change(s) rolled back", count[ResultRejected], count[ResultRolledBack])
	case r.Changed == 0 && count[ResultUnchanged] == len(r.Keys):
		b.WriteString("nothing changed, all already set")
	default:
		fmt.Fprintf(&b, "%d changed, %d already set", r.Changed, count[ResultUnchanged])
		if bad := count[ResultFailed] + count[ResultUnverified]; bad > 0 {
			fmt.Fprintf(&b, ", %d not applied", bad)
		}
	}
	if r.RemovedTemps > 0 {
		fmt.Fprintf(&b, "; %d temp file(s) a killed write left beside %s removed", r.RemovedTemps, filepath.Base(r.File))
	}
	switch {
	case r.Removed:
		fmt.Fprintf(&b, "; %s removed (nothing to persist; live values are left as they are)", r.File)
	case r.FileNote != "":
		fmt.Fprintf(&b, "; %s", r.FileNote)
	case len(r.Keys) == 0 && !r.Persisted:
		fmt.Fprintf(&b, "; nothing to persist, no %s", r.File)
	case !r.Persisted:
		fmt.Fprintf(&b, "; %s not written", r.File)
	case r.FileChanged:
		fmt.Fprintf(&b, "; %s written", r.File)
	default:
		fmt.Fprintf(&b, "; %s unchanged", r.File)
	}
	return b.String()
}
