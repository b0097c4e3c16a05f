package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// PruneOptions say what the manifest still asks for; everything else of
// cellguard's in the unit directories goes, when nothing uses it.
type PruneOptions struct {
	// Keep names the daemons whose units stay (cellguard.daemons).
	Keep []string
	// KeepSupervisor keeps the supervisor's drop-in (supervisor.protect).
	KeepSupervisor bool
	// KeepDelegated names the units whose in-place drop-ins stay
	// (delegate_units); the supervisor's drop-in on one of them stays too.
	KeepDelegated []string
	// ForceSupervisorDropIn removes the drop-in of a running supervisor,
	// or of a running delegated unit, too (cellguard uninstall
	// --force-supervisor-drop-in): see SupervisorDropInKept for what that
	// does.
	ForceSupervisorDropIn bool
	// Uninstall: everything goes (cellguard uninstall), not what the
	// manifest stopped asking for (pre-start); it changes only the words.
	Uninstall bool
	// Now is the clock for temp files' age; zero means time.Now.
	Now time.Time
}

// PruneItem is one thing Prune found of cellguard's, and what it did.
type PruneItem struct {
	Path   string `json:"path"`
	Unit   string `json:"unit,omitempty"`
	Kind   string `json:"kind"`   // "unit", "supervisor-drop-in", "delegate-drop-in", "temp-file", "stamp"
	Action string `json:"action"` // "removed" or "kept"
	Why    string `json:"why"`
}

// Prune kinds and actions.
const (
	KindUnit             = "unit"
	KindSupervisorDropIn = "supervisor-drop-in"
	KindDelegateDropIn   = "delegate-drop-in"
	KindTempFile         = "temp-file"
	KindStamp            = "stamp"
	Removed              = "removed"
	Kept                 = "kept"
)

// PruneResult is what Prune did.
type PruneResult struct {
	Items    []PruneItem `json:"items"`
	Reloaded bool        `json:"reloaded"`
}

// Kept returns the items Prune kept.
func (r PruneResult) Kept() []PruneItem {
	var out []PruneItem
	for _, it := range r.Items {
		if it.Action == Kept {
			out = append(out, it)
		}
	}
	return out
}

// staleTempAge is how old a temp file must be before Prune calls it a
// crash's leftover: a writer in flight holds it for milliseconds.
const staleTempAge = time.Minute

// SupervisorDropInKept says why a running supervisor keeps its drop-in,
// from the measurement in docs/lifecycle.md (systemd 252, hybrid;
// src/tests/integration TestSupervisorDropInDecision): once no other unit
// of the slice needs cpu and blkio, the daemon-reload that drops the
// delegation moved a monit job's container child out of garden/<id> in cpu
// and blkio to the root, and in one layout a later unit with accounting
// moved them on into the supervisor's cgroup: the seed-000 escape, made by
// the removal itself.
const SupervisorDropInKept = "removing its Delegate= drop-in from a running unit lets systemd move the container " +
	"processes below it (monit's jobs' under the supervisor, a delegated unit's own) out of their cgroups (measured on systemd 252: cpu and blkio, to the root at the " +
	"daemon-reload, and at times on into the unit's cgroup at a later unit with accounting), the escape cellguard exists to " +
	"prevent; so it stays, and nothing is stopped or moved. A recreate removes it (the new VM starts from the " +
	"stemcell without it)"

// Prune removes what cellguard wrote into the unit directories and the
// manifest no longer asks for, when nothing uses it: the unit of a daemon
// no longer configured, once it is inactive with no process left in its
// cgroup; the supervisor's drop-in when protection is off, once the unit
// is not running (or with ForceSupervisorDropIn); and the temp files a
// killed write left. What is in use is kept, with why and how to finish.
// Nothing is ever stopped, signalled or moved. systemd reloads once, when
// something was removed. It reads (ownFiles, unitUse), decides
// (planPrune) and applies (applyPrune).
func (m *Manager) Prune(ctx context.Context, opts PruneOptions) (PruneResult, error) {
	var res PruneResult
	var conn systemdAPI
	if m.HasSystemd() {
		c, err := m.dial(ctx)
		if err != nil {
			return res, err
		}
		conn = c
	}
	files, err := m.ownFiles()
	errs := []error{err}
	var targets []ownFile
	uses := map[string]unitUse{}
	for _, f := range files {
		if opts.wants(f) {
			continue
		}
		if _, seen := uses[f.Unit]; !seen {
			use, err := m.unitUse(ctx, conn, f.Unit)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			uses[f.Unit] = use
		}
		targets = append(targets, f)
	}
	res, err = m.applyPrune(ctx, conn, planPrune(targets, uses, opts))
	errs = append(errs, err)

	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	temps, err := m.removeStaleTemps(now)
	res.Items = append(res.Items, temps...)
	errs = append(errs, err)
	for _, it := range res.Items {
		data := lager.Data{"path": it.Path, "kind": it.Kind, "why": it.Why}
		if it.Action == Kept {
			m.Logger.Info("kept", data)
		} else {
			m.Logger.Info("removed", data)
		}
	}
	return res, errors.Join(errs...)
}

// ownFile is a file of cellguard's in the unit directories.
type ownFile struct {
	Path string
	Unit string
	Kind string // KindUnit, KindSupervisorDropIn or KindDelegateDropIn
}

// wants reports whether the config still asks for f.
func (o PruneOptions) wants(f ownFile) bool {
	switch f.Kind {
	case KindUnit:
		daemon, _ := unitfile.DaemonOf(f.Unit)
		return slices.Contains(o.Keep, daemon)
	case KindDelegateDropIn:
		return slices.Contains(o.KeepDelegated, f.Unit)
	default:
		return o.KeepSupervisor || slices.Contains(o.KeepDelegated, f.Unit)
	}
}

// unitUse is what systemd says of the unit a removal touches.
type unitUse struct {
	// Why the unit is in use (running, or processes left in its cgroup);
	// "" when it is not.
	Why string
	// Failed: not in use, but systemd holds it as failed, a state to reset
	// once its file is gone.
	Failed bool
}

// pruneStep is one decision of planPrune: an item, and whether applying
// it also resets the unit's failed state.
type pruneStep struct {
	PruneItem
	resetFailed bool
}

// planPrune decides, for each file the config no longer asks for, whether
// it goes and why, from what systemd said of its unit (uses, by unit):
// a unit in use is kept; a drop-in on a running unit is kept unless
// ForceSupervisorDropIn, which says what the removal will do.
func planPrune(targets []ownFile, uses map[string]unitUse, opts PruneOptions) []pruneStep {
	var plan []pruneStep
	for _, f := range targets {
		use := uses[f.Unit]
		why := opts.reason(f)
		step := pruneStep{PruneItem: PruneItem{Path: f.Path, Unit: f.Unit, Kind: f.Kind, Action: Removed}}
		switch {
		case f.Kind == KindUnit && use.Why != "":
			step.Action, step.Why = Kept, fmt.Sprintf("%s, but %s; nothing is stopped: stop the daemon through its job "+
				"(with a monit file that no longer calls cellguard), then run pre-start or `cellguard uninstall` again, "+
				"or recreate the VM", why, use.Why)
		case f.Kind == KindUnit:
			step.Why = why + ", and the unit is inactive with no process left"
			step.resetFailed = use.Failed
		case use.Why != "" && !opts.ForceSupervisorDropIn:
			step.Action, step.Why = Kept, why+", but "+use.Why+": "+SupervisorDropInKept
		case use.Why != "":
			step.Why = "removed although " + use.Why + " (--force-supervisor-drop-in): expect the container processes below it to " +
				"leave their cgroups (measured on systemd 252: cpu and blkio to the root at this reload once no other unit " +
				"needs them, at times on into the unit's cgroup at a later unit with accounting; docs/lifecycle.md)"
		default:
			step.Why = why + ", and the unit is not running"
		}
		plan = append(plan, step)
	}
	return plan
}

// reason says why the config no longer asks for f.
func (o PruneOptions) reason(f ownFile) string {
	switch {
	case o.Uninstall:
		return "cellguard uninstall"
	case f.Kind == KindUnit:
		daemon, _ := unitfile.DaemonOf(f.Unit)
		return fmt.Sprintf("daemon %q is no longer in cellguard.daemons", daemon)
	case f.Kind == KindDelegateDropIn:
		return fmt.Sprintf("%s is no longer in cellguard.delegate_units", f.Unit)
	}
	return "cellguard.supervisor.protect is false"
}

// applyPrune removes what plan says goes, then reloads systemd once and
// resets the failed state of removed units that systemd held as failed.
func (m *Manager) applyPrune(ctx context.Context, conn systemdAPI, plan []pruneStep) (PruneResult, error) {
	var res PruneResult
	var errs []error
	var resetFailed []string
	for _, st := range plan {
		if st.Action == Kept {
			res.Items = append(res.Items, st.PruneItem)
			continue
		}
		if _, err := safefile.RemoveIfExists(m.path(st.Path)); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Items = append(res.Items, st.PruneItem)
		if st.resetFailed {
			resetFailed = append(resetFailed, st.Unit)
		}
	}
	if !removedAny(res) || conn == nil {
		return res, errors.Join(errs...)
	}
	if err := conn.Reload(ctx); err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	res.Reloaded = true
	for _, u := range resetFailed {
		errs = append(errs, conn.ResetFailed(ctx, u))
	}
	return res, errors.Join(errs...)
}

func removedAny(r PruneResult) bool {
	for _, it := range r.Items {
		if it.Action == Removed {
			return true
		}
	}
	return false
}

// unitUse asks systemd whether unit is in use. Without systemd nothing
// runs under a unit.
func (m *Manager) unitUse(ctx context.Context, conn systemdAPI, unit string) (unitUse, error) {
	if conn == nil {
		return unitUse{}, nil
	}
	u, err := conn.Unit(ctx, unit)
	if err != nil {
		return unitUse{}, err
	}
	if !stopped(u) {
		return judgeUse(u, nil), nil
	}
	procs, err := conn.UnitProcesses(ctx, unit)
	if err != nil {
		return unitUse{}, err
	}
	return judgeUse(u, procs), nil
}

func stopped(u *systemd.Unit) bool {
	switch u.ActiveState {
	case "inactive", "failed", "":
		return true
	}
	return false
}

// judgeUse says why unit u is in use: running, or stopped with processes
// still in its cgroup (with KillMode=none systemd kills nothing on stop,
// so what the stop command left stays there).
func judgeUse(u *systemd.Unit, procs []systemd.Process) unitUse {
	if !stopped(u) {
		return unitUse{Why: fmt.Sprintf("%s is %s (%s, main pid %d)", u.Name, u.ActiveState, u.SubState, u.MainPID)}
	}
	if len(procs) == 0 {
		return unitUse{Failed: u.ActiveState == "failed"}
	}
	pids := make([]string, 0, len(procs))
	for i, p := range procs {
		if i == 5 {
			pids = append(pids, "...")
			break
		}
		pids = append(pids, fmt.Sprintf("%d (%s)", p.PID, p.Cmdline))
	}
	n := fmt.Sprintf("%d processes are", len(procs))
	if len(procs) == 1 {
		n = "1 process is"
	}
	return unitUse{Why: fmt.Sprintf("%s is %s but %s still in its cgroup: %s", u.Name, u.ActiveState, n, strings.Join(pids, ", "))}
}

// ownFiles lists cellguard's unit files and delegation drop-ins.
func (m *Manager) ownFiles() ([]ownFile, error) {
	units, err := m.ownUnitFiles()
	var files []ownFile
	for _, p := range units {
		files = append(files, ownFile{Path: p, Unit: filepath.Base(p), Kind: KindUnit})
	}
	dropIns, derr := m.ownDropIns()
	for _, d := range dropIns {
		kind := KindSupervisorDropIn
		if d.delegated {
			kind = KindDelegateDropIn
		}
		files = append(files, ownFile{Path: d.path, Unit: d.unit, Kind: kind})
	}
	return files, errors.Join(err, derr)
}

// ownUnitFiles lists the unit files of cellguard's in both unit
// directories: cellguard-<daemon>.service, regular, with the marker.
func (m *Manager) ownUnitFiles() ([]string, error) {
	var out []string
	var errs []error
	for _, dir := range []string{PersistentUnitDir, RuntimeUnitDir} {
		matches, err := filepath.Glob(m.path(filepath.Join(dir, unitfile.Prefix+"*.service")))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, hp := range matches {
			if _, ok := unitfile.DaemonOf(filepath.Base(hp)); !ok {
				continue
			}
			if ours, err := markedRegular(hp); err != nil {
				errs = append(errs, err)
			} else if ours {
				out = append(out, filepath.Join(dir, filepath.Base(hp)))
			}
		}
	}
	sort.Strings(out)
	return out, errors.Join(errs...)
}

// ownDropIn is a delegation drop-in of cellguard's.
type ownDropIn struct {
	path, unit string
	// delegated: written for cellguard.delegate_units, not the supervisor.
	delegated bool
}

// ownDropIns lists cellguard's delegation drop-ins, the supervisor's and
// delegate_units':
// /etc/systemd/system/<unit>.service.d/50-cellguard-delegate.conf with the
// marker.
func (m *Manager) ownDropIns() ([]ownDropIn, error) {
	matches, err := filepath.Glob(m.path(filepath.Join(PersistentUnitDir, "*.service.d", unitfile.DropInName)))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var out []ownDropIn
	var errs []error
	for _, hp := range matches {
		ours, err := markedRegular(hp)
		if err != nil {
			errs = append(errs, err)
			continue
		} else if !ours {
			continue
		}
		text, err := os.ReadFile(hp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dir := filepath.Base(filepath.Dir(hp))
		out = append(out, ownDropIn{path: filepath.Join(PersistentUnitDir, dir, unitfile.DropInName),
			unit: strings.TrimSuffix(dir, ".d"), delegated: unitfile.IsDelegateUnitsDropIn(text)})
	}
	return out, errors.Join(errs...)
}

// markedRegular reports whether p is a regular file that starts with
// cellguard's marker (not a symlink: a link is nothing cellguard writes).
func markedRegular(p string) (bool, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(unitfile.Marker))
	n, _ := f.Read(head)
	return unitfile.WrittenByCellguard(head[:n]), nil
}

// removeStaleTemps removes temp files a killed write left where cellguard
// writes for systemd: the unit directories and the supervisor drop-in
// directories.
func (m *Manager) removeStaleTemps(now time.Time) ([]PruneItem, error) {
	unitTarget := func(t string) bool { _, ok := unitfile.DaemonOf(t); return ok }
	dirs := map[string]func(string) bool{
		PersistentUnitDir: unitTarget,
		RuntimeUnitDir:    unitTarget,
	}
	dropDirs, err := filepath.Glob(m.path(filepath.Join(PersistentUnitDir, "*.service.d")))
	errs := []error{err}
	for _, hd := range dropDirs {
		dirs[filepath.Join(PersistentUnitDir, filepath.Base(hd))] = func(t string) bool { return t == unitfile.DropInName }
	}
	var items []PruneItem
	for dir, ours := range dirs {
		removed, err := safefile.RemoveStaleTemps(m.path(dir), ours, staleTempAge, now)
		errs = append(errs, err)
		for _, hp := range removed {
			items = append(items, PruneItem{Path: filepath.Join(dir, filepath.Base(hp)), Kind: KindTempFile, Action: Removed,
				Why: "a temp file left by a write that was killed before its rename"})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })
	return items, errors.Join(errs...)
}

// legacyStampDir held start's verification stamps until they were
// dropped: a shortcut of about 5 ms that spread state into Install, start,
// Prune and uninstall (issue 24). It lives in /run, so a reboot clears it;
// on a VM upgraded in place, uninstall removes it.
const legacyStampDir = "/run/cellguard/verified"

// RemoveStamps removes the verification stamps an older cellguard left
// (legacyStampDir) and the directory.
func (m *Manager) RemoveStamps() ([]PruneItem, error) {
	dir := m.path(legacyStampDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %s: %w", legacyStampDir, err)
	}
	var items []PruneItem
	var errs []error
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		items = append(items, PruneItem{Path: filepath.Join(legacyStampDir, e.Name()), Kind: KindStamp, Action: Removed,
			Why: "a verification stamp of an older cellguard's start; nothing reads it now"})
	}
	for _, d := range []string{legacyStampDir, filepath.Dir(legacyStampDir)} {
		_, err := safefile.RemoveDirIfEmpty(m.path(d))
		errs = append(errs, err)
	}
	return items, errors.Join(errs...)
}
