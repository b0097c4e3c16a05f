package daemonctl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
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
// process named processName (names separated by commas: on BOSH's jammy
// stemcells monit runs as monit-actual, exec'd by a wrapper).
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
	d, err := m.delegateInPlace(ctx, conn, name, func(delegate string) ([]byte, error) {
		return unitfile.RenderSupervisorDropIn(name, delegate)
	})
	res.DropIn, res.Written, res.Reloaded, res.Realized, res.DelegateControllers = d.DropIn, d.Written, d.Reloaded, d.Realized, d.DelegateControllers
	if err != nil {
		return res, fmt.Errorf("protect supervisor: %w", err)
	}
	if !d.Loaded {
		return res, fmt.Errorf("protect supervisor: %s is not loaded", name)
	}
	m.Logger.Info("supervisor-protected", lager.Data{"unit": name, "pid": pid, "drop_in": res.DropIn,
		"written": res.Written, "reloaded": res.Reloaded, "realized": res.Realized, "delegate_controllers": res.DelegateControllers})
	return res, nil
}

// findProcess returns the oldest (lowest start time) process whose comm is
// name, under Root's /proc.
func (m *Manager) findProcess(name string) (int, error) {
	names := strings.Split(name, ",")
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
		if err != nil || !slices.Contains(names, st.Comm) {
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
