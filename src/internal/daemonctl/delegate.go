package daemonctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// DelegateResult says what delegating a unit in place did.
type DelegateResult struct {
	Unit     string `json:"unit"`
	DropIn   string `json:"drop_in"`
	Written  bool   `json:"written"`
	Reloaded bool   `json:"reloaded"`
	Realized bool   `json:"realized"`
	// Loaded is false when systemd does not know the unit yet (its
	// release installs it when monit starts the job, as Concourse's
	// worker ctl does): the drop-in is in place for when it loads.
	Loaded              bool     `json:"loaded"`
	DelegateControllers []string `json:"delegate_controllers"`
	NoSystemd           bool     `json:"no_systemd,omitempty"`
}

// DelegateUnit gives a unit that another release installs (Concourse's
// concourse.service, which says only Delegate=yes) the same delegation
// drop-in as the supervisor's, reloads, realizes it when the unit runs and
// reads Delegate back.
func (m *Manager) DelegateUnit(ctx context.Context, name string) (DelegateResult, error) {
	res := DelegateResult{Unit: name}
	if !strings.HasSuffix(name, ".service") {
		return res, fmt.Errorf("delegate %s: %w: only a service can delegate its subtree", name, unitfile.ErrBadName)
	}
	if _, err := unitfile.RenderDelegateDropIn(name, m.delegate()); err != nil {
		return res, err
	}
	if !m.HasSystemd() {
		res.NoSystemd = true
		m.Logger.Info("no-systemd-nothing-to-delegate", lager.Data{"unit": name})
		return res, nil
	}
	conn, err := m.dial(ctx)
	if err != nil {
		return res, err
	}
	d, err := m.delegateInPlace(ctx, conn, name, func(delegate string) ([]byte, error) {
		return unitfile.RenderDelegateDropIn(name, delegate)
	})
	if err != nil {
		return d, fmt.Errorf("delegate %s: %w", name, err)
	}
	m.Logger.Info("unit-delegated", lager.Data{"unit": name, "drop_in": d.DropIn, "written": d.Written,
		"reloaded": d.Reloaded, "realized": d.Realized, "loaded": d.Loaded, "delegate_controllers": d.DelegateControllers})
	return d, nil
}

// delegateInPlace writes name's delegation drop-in (render, for the
// Delegate= value this systemd understands), reloads when it changed (or
// systemd has not read it), realizes the delegated cgroups once per boot
// when the unit runs, and verifies what systemd reads back. A unit systemd
// does not know yet only gets the file.
func (m *Manager) delegateInPlace(ctx context.Context, conn systemdAPI, name string,
	render func(delegate string) ([]byte, error)) (DelegateResult, error) {
	res := DelegateResult{Unit: name}
	delegate := m.delegateFor(ctx, conn)
	text, err := render(delegate)
	if err != nil {
		return res, err
	}
	dir := filepath.Join(PersistentUnitDir, name+".d")
	res.DropIn = filepath.Join(dir, unitfile.DropInName)
	if err := os.MkdirAll(m.path(dir), 0o755); err != nil {
		return res, fmt.Errorf("create %s: %w", dir, err)
	}
	w, err := safefile.WriteFileAtomic(m.path(res.DropIn), text, 0o644)
	if err != nil {
		return res, err
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
	if u.LoadState != "loaded" {
		return res, nil
	}
	res.Loaded = true
	// Realize the delegation now, before the unit's daemon makes a
	// container cgroup (see systemd.RealizeCgroups). Only when it is not
	// realized yet: the runtime property leaves systemd 252 reporting
	// NeedDaemonReload, so one more Reload settles it and the next run has
	// nothing to do.
	if !realizedThisBoot(u) && u.ActiveState == "active" {
		if err := conn.RealizeCgroups(ctx, name); err != nil {
			return res, err
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
	if re := delegationRefused(u, res.DropIn, delegate, m.overriding(u, res.DropIn)("Delegate")); re != nil {
		return res, fmt.Errorf("drop-in %s did not take: %w", res.DropIn, re)
	}
	return res, nil
}
