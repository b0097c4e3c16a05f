package systemd

import (
	"context"
	"errors"
	"fmt"

	godbus "github.com/godbus/dbus/v5"
)

// Process is one process in a unit's cgroup subtree.
type Process struct {
	Cgroup  string `json:"cgroup"`
	PID     uint32 `json:"pid"`
	Cmdline string `json:"cmdline"`
}

// errNoSuchUnit is systemd's error for a unit it has not loaded.
const errNoSuchUnit = "org.freedesktop.systemd1.NoSuchUnit"

func noSuchUnit(err error) bool {
	var de godbus.Error
	return errors.As(err, &de) && de.Name == errNoSuchUnit
}

// UnitProcesses lists every process in unit's cgroup subtree, as
// `systemctl status` shows them (Manager.GetUnitProcesses). A stopped unit
// can still hold processes: with KillMode=none systemd signals nothing on
// stop, and whatever the stop command left (a daemon's containers) stays
// in the unit's cgroup. A unit systemd has not loaded holds none.
func (c *Conn) UnitProcesses(ctx context.Context, unit string) ([]Process, error) {
	var raw [][]any
	err := c.manager().CallWithContext(ctx, managerIface+".GetUnitProcesses", 0, unit).Store(&raw)
	if noSuchUnit(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list processes of %s: %w", unit, err)
	}
	out := make([]Process, 0, len(raw))
	for _, r := range raw {
		if len(r) != 3 {
			return nil, fmt.Errorf("list processes of %s: entry of %d fields, want 3", unit, len(r))
		}
		p := Process{}
		p.Cgroup, _ = r[0].(string)
		p.PID, _ = r[1].(uint32)
		p.Cmdline, _ = r[2].(string)
		out = append(out, p)
	}
	return out, nil
}

// ResetFailed forgets a unit's failed state (`systemctl reset-failed`), so
// a unit whose file was removed does not linger as "not-found failed". A
// unit that is not loaded or not failed is nothing to reset.
func (c *Conn) ResetFailed(ctx context.Context, unit string) error {
	err := c.sd.ResetFailedUnitContext(ctx, unit)
	if err != nil && !noSuchUnit(err) {
		return fmt.Errorf("reset failed state of %s: %w", unit, err)
	}
	return nil
}
