package systemd

import (
	"context"
	"fmt"
	"sort"
)

// Unit is what cellguard reads of a unit.
type Unit struct {
	Name                string   `json:"name"`
	LoadState           string   `json:"load_state"`
	ActiveState         string   `json:"active_state"`
	SubState            string   `json:"sub_state"`
	Result              string   `json:"result,omitempty"`
	FragmentPath        string   `json:"fragment_path,omitempty"`
	DropInPaths         []string `json:"drop_in_paths,omitempty"`
	NeedDaemonReload    bool     `json:"need_daemon_reload"`
	MainPID             uint32   `json:"main_pid"`
	ControlGroup        string   `json:"control_group"`
	Delegate            bool     `json:"delegate"`
	DelegateControllers []string `json:"delegate_controllers"`
	KillMode            string   `json:"kill_mode,omitempty"`
	TasksMax            uint64   `json:"tasks_max"`
	Type                string   `json:"type,omitempty"`
}

// Unit reads a unit's state and cgroup properties in one GetAll with an
// empty interface name (go-systemd's GetAllProperties), as `systemctl
// show` does: systemd answers with the properties of every interface the
// unit has. Each message about a unit that is not running loads it from
// disk and unloads it again, so one message instead of two (Unit, then
// Service) is ~3 ms off `cellguard start` (docs/performance.md).
func (c *Conn) Unit(ctx context.Context, name string) (*Unit, error) {
	vals, err := c.sd.GetAllPropertiesContext(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read properties of %s: %w", name, err)
	}
	return unitFrom(name, vals), nil
}

// unitFrom fills a Unit from properties by name; one a type lacks (a
// scope has no MainPID) stays zero.
func unitFrom(name string, vals map[string]any) *Unit {
	u := &Unit{Name: name}
	u.LoadState, _ = vals["LoadState"].(string)
	u.ActiveState, _ = vals["ActiveState"].(string)
	u.SubState, _ = vals["SubState"].(string)
	u.FragmentPath, _ = vals["FragmentPath"].(string)
	u.DropInPaths, _ = vals["DropInPaths"].([]string)
	u.NeedDaemonReload, _ = vals["NeedDaemonReload"].(bool)
	u.Result, _ = vals["Result"].(string)
	u.MainPID, _ = vals["MainPID"].(uint32)
	u.ControlGroup, _ = vals["ControlGroup"].(string)
	u.Delegate, _ = vals["Delegate"].(bool)
	u.DelegateControllers, _ = vals["DelegateControllers"].([]string)
	u.KillMode, _ = vals["KillMode"].(string)
	u.TasksMax, _ = vals["TasksMax"].(uint64)
	u.Type, _ = vals["Type"].(string)
	sort.Strings(u.DelegateControllers)
	return u
}

// Delegates reports whether the unit delegates every controller in want
// (nil want: delegation of any kind).
func (u *Unit) Delegates(want []string) (bool, []string) {
	if !u.Delegate {
		return false, want
	}
	have := map[string]bool{}
	for _, c := range u.DelegateControllers {
		have[c] = true
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return len(missing) == 0, missing
}
