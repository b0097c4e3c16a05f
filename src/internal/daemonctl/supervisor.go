package daemonctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// ProtectResult says what ProtectSupervisor did.
type ProtectResult struct {
	PID                 int      `json:"pid"`
	Unit                string   `json:"unit"`
	DropIn              string   `json:"drop_in"`
	Written             bool     `json:"written"`
	Reloaded            bool     `json:"reloaded"`
	Realized            bool     `json:"realized"` // systemd was made to realize the delegated cgroups now
	DelegateControllers []string `json:"delegate_controllers"`
	NoSystemd           bool     `json:"no_systemd,omitempty"`
}

// ProtectSupervisor finds the unit holding the supervisor (monit) and gives
// it a delegation drop-in, so every monit job's cgroup subtree is protected
// even where a job's own release cannot change. pid 0 means find the oldest
// process named processName.
func (m *Manager) ProtectSupervisor(ctx context.Context, pid int, processName string) (ProtectResult, error) {
	var res ProtectResult
	if pid == 0 {
		p, err := m.findProcess(processName)
		if err != nil {
			return res, err
		}
		pid = p
	}
	res.PID = pid
	if !m.HasSystemd() {
		res.NoSystemd = true
		m.Logger.Info("no-systemd-nothing-to-protect", lager.Data{"pid": pid})
		return res, nil
	}
	conn, err := m.dial(ctx)
	if err != nil {
		return res, err
	}
	name, err := conn.UnitByPID(ctx, pid)
	if err != nil {
		return res, err
	}
	res.Unit = name
	if !strings.HasSuffix(name, ".service") {
		return res, fmt.Errorf("protect supervisor: %s (pid %d) runs in %s, not a service; start it from a service unit (BOSH stemcells use runit.service)",
			processName, pid, name)
	}
	delegate := m.delegate()
	text, err := unitfile.RenderSupervisorDropIn(name, delegate)
	if err != nil {
		return res, err
	}
	dir := filepath.Join(PersistentUnitDir, name+".d")
	res.DropIn = filepath.Join(dir, unitfile.DropInName)
	if err := os.MkdirAll(m.path(dir), 0o755); err != nil {
		return res, fmt.Errorf("protect supervisor: create %s: %w", dir, err)
	}
	w, err := safefile.WriteFileAtomic(m.path(res.DropIn), text, 0o644)
	if err != nil {
		return res, fmt.Errorf("protect supervisor: %w", err)
	}
	res.Written = w.Changed
	u, err := conn.Unit(ctx, name)
	if err != nil {
		return res, err
	}
	if w.Changed || u.NeedDaemonReload {
		if err := conn.Reload(ctx); err != nil {
			return res, err
		}
		res.Reloaded = true
	}
	if u, err = conn.Unit(ctx, name); err != nil {
		return res, err
	}
	// Realize the delegation now, before a job of monit makes a container
	// cgroup (see systemd.RealizeCgroups). Only when it is not realized yet:
	// the runtime property leaves systemd 252 reporting NeedDaemonReload, so
	// one more Reload settles it and the next run has nothing to do.
	if !realizedThisBoot(u) && u.ActiveState == "active" {
		if err := conn.RealizeCgroups(ctx, name); err != nil {
			return res, fmt.Errorf("protect supervisor: %w", err)
		}
		res.Realized = true
		if u, err = conn.Unit(ctx, name); err != nil {
			return res, err
		}
		if u.NeedDaemonReload {
			if err := conn.Reload(ctx); err != nil {
				return res, err
			}
			res.Reloaded = true
		}
	}
	res.DelegateControllers = u.DelegateControllers
	if err := verifyDelegation(u, delegate); err != nil {
		return res, fmt.Errorf("protect supervisor: drop-in %s did not take: %w", res.DropIn, err)
	}
	m.Logger.Info("supervisor-protected", lager.Data{"unit": name, "pid": pid, "drop_in": res.DropIn,
		"written": res.Written, "reloaded": res.Reloaded, "realized": res.Realized, "delegate_controllers": u.DelegateControllers})
	return res, nil
}

// findProcess returns the oldest (lowest start time) process whose comm is
// name, under Root's /proc.
func (m *Manager) findProcess(name string) (int, error) {
	fs := procfs.New(m.rootDir())
	pids, err := fs.PIDs(nil)
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	r := fs.NewReader()
	defer r.Close()
	best, bestStart := 0, uint64(0)
	for _, pid := range pids {
		st, err := r.Stat(pid)
		if err != nil || st.Comm != name {
			continue // exited while we looked, or another process
		}
		if best == 0 || st.StartTime < bestStart {
			best, bestStart = pid, st.StartTime
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("protect supervisor: no process named %q is running; pass --pid", name)
	}
	return best, nil
}

// realizedThisBoot reports whether cellguard already made systemd realize
// the unit's cgroups since boot: RealizeCgroups leaves a runtime drop-in
// (system.control/<unit>.d/50-TasksMax.conf, listed in DropInPaths) that
// lives in /run. Reading the cgroups themselves cannot tell: systemd 252
// realizes a delegated unit's cpu and blkio at its slice and never cpuacct.
// After a reboot the unit starts with the drop-in in place, so realizing
// once more then is merely redundant.
func realizedThisBoot(u *systemd.Unit) bool {
	for _, p := range u.DropInPaths {
		if strings.HasSuffix(p, "/system.control/"+u.Name+".d/50-TasksMax.conf") {
			return true
		}
	}
	return false
}
