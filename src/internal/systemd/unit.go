package systemd

import (
	"context"
	"fmt"
	"sort"
	"strings"
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

// typeInterface maps a unit suffix to its D-Bus interface name, for the
// type-specific properties (Delegate lives on Service, Scope, Slice).
func typeInterface(name string) string {
	switch {
	case strings.HasSuffix(name, ".service"):
		return "Service"
	case strings.HasSuffix(name, ".scope"):
		return "Scope"
	case strings.HasSuffix(name, ".slice"):
		return "Slice"
	case strings.HasSuffix(name, ".socket"):
		return "Socket"
	case strings.HasSuffix(name, ".mount"):
		return "Mount"
	case strings.HasSuffix(name, ".swap"):
		return "Swap"
	}
	return ""
}

// Unit reads a unit's state and cgroup properties.
func (c *Conn) Unit(ctx context.Context, name string) (*Unit, error) {
	up, err := c.sd.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read properties of %s: %w", name, err)
	}
	u := &Unit{Name: name}
	u.LoadState, _ = up["LoadState"].(string)
	u.ActiveState, _ = up["ActiveState"].(string)
	u.SubState, _ = up["SubState"].(string)
	u.FragmentPath, _ = up["FragmentPath"].(string)
	u.DropInPaths, _ = up["DropInPaths"].([]string)
	u.NeedDaemonReload, _ = up["NeedDaemonReload"].(bool)
	if iface := typeInterface(name); iface != "" {
		tp, err := c.sd.GetUnitTypePropertiesContext(ctx, name, iface)
		if err != nil {
			return nil, fmt.Errorf("read %s properties of %s: %w", iface, name, err)
		}
		u.Result, _ = tp["Result"].(string)
		u.MainPID, _ = tp["MainPID"].(uint32)
		u.ControlGroup, _ = tp["ControlGroup"].(string)
		u.Delegate, _ = tp["Delegate"].(bool)
		u.DelegateControllers, _ = tp["DelegateControllers"].([]string)
		u.KillMode, _ = tp["KillMode"].(string)
		u.TasksMax, _ = tp["TasksMax"].(uint64)
		u.Type, _ = tp["Type"].(string)
	}
	sort.Strings(u.DelegateControllers)
	return u, nil
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
