package unitfile

import (
	"fmt"
	"strings"
)

// Prefix keeps our units out of the names daemons' own releases rewrite
// (garden-runc-release rewrites /lib/systemd/system/garden.service on every
// start).
const Prefix = "cellguard-"

// Delegation values for Delegate=.
const (
	// DelegateV1 is the explicit list for cgroup v1 and hybrid hosts. Plain
	// "yes" means "cpu cpuset io memory pids" there, and "io" does not cover
	// v1 blkio: systemd 252 still moved a delegated child's blkio when a unit
	// with IOWeight= started in the same slice. This list stopped every move
	// we tried (src/tests/harness/README.md, seed-000 test).
	DelegateV1 = "cpu cpuacct io blkio memory devices pids"
	// DelegateV2 is enough on a pure cgroup v2 host.
	DelegateV2 = "yes"
)

// KillMode values.
const (
	// KillModeNone: systemd never signals the daemon's processes, so stopping
	// the unit (or a systemd restart) cannot kill containers; the daemon's
	// own stop command decides. Deprecated since systemd 246, still honoured.
	KillModeNone = "none"
	// KillModeProcess is the fallback (containerd's own unit uses it): only
	// the main process is signalled, container processes survive.
	KillModeProcess = "process"
)

// Type of the service, from how the ctl script starts the daemon.
const (
	TypeExec    = "exec"    // the ctl script execs the daemon and stays in the foreground
	TypeForking = "forking" // the ctl script backgrounds the daemon and exits
)

// Spec describes a monit-managed daemon's unit.
type Spec struct {
	Name     string   // daemon name: "garden" -> cellguard-garden.service
	Start    []string // validated words, see SplitCommand
	Stop     []string // empty: stop signals the main process with SIGTERM
	PIDFile  string   // what monit watches; required for TypeForking
	Type     string   // TypeExec or TypeForking
	Delegate string   // DelegateV1 or DelegateV2
	KillMode string   // KillModeNone or KillModeProcess
	// TimeoutStartSec/TimeoutStopSec in seconds; 0 leaves systemd's default.
	TimeoutStartSec int
	TimeoutStopSec  int
}

// UnitName returns the unit's name for a daemon.
func UnitName(daemon string) string { return Prefix + daemon + ".service" }

// Validate checks the whole spec.
func (s Spec) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if len(s.Start) == 0 {
		return fmt.Errorf("%w: start command is required", ErrBadCommand)
	}
	for _, cmd := range [][]string{s.Start, s.Stop} {
		if len(cmd) == 0 {
			continue
		}
		if err := validateWords(cmd); err != nil {
			return err
		}
	}
	switch s.Type {
	case TypeExec:
	case TypeForking:
		if s.PIDFile == "" {
			return fmt.Errorf("%w: type forking needs a pidfile so systemd knows the main process", ErrBadPath)
		}
	default:
		return fmt.Errorf("unit: type %q: want %s or %s", s.Type, TypeExec, TypeForking)
	}
	if s.PIDFile != "" {
		if err := ValidatePath(s.PIDFile); err != nil {
			return fmt.Errorf("pidfile: %w", err)
		}
	}
	switch s.Delegate {
	case DelegateV1, DelegateV2:
	default:
		return fmt.Errorf("unit: delegate %q: want %q or %q", s.Delegate, DelegateV1, DelegateV2)
	}
	switch s.KillMode {
	case KillModeNone, KillModeProcess:
	default:
		return fmt.Errorf("unit: kill mode %q: want none or process", s.KillMode)
	}
	if s.TimeoutStartSec < 0 || s.TimeoutStopSec < 0 {
		return fmt.Errorf("unit: negative timeout")
	}
	return nil
}

const header = "# Written by cellguard (`cellguard unit install`); it is rewritten on every\n" +
	"# BOSH pre-start, so edit the cellguard job's properties instead.\n"

// Render returns the unit file text. It validates first, so no text is
// produced from input that could inject a directive.
func Render(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("[Unit]\n")
	fmt.Fprintf(&b, "Description=%s, started by monit through cellguard (delegated cgroups)\n", s.Name)
	// No [Install] and no dependencies: monit, not boot, decides when it runs.
	b.WriteString("\n[Service]\n")
	fmt.Fprintf(&b, "Type=%s\n", s.Type)
	if s.PIDFile != "" && s.Type == TypeForking {
		fmt.Fprintf(&b, "PIDFile=%s\n", s.PIDFile)
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(s.Start, " "))
	if len(s.Stop) > 0 {
		fmt.Fprintf(&b, "ExecStop=%s\n", strings.Join(s.Stop, " "))
	} else {
		// With KillMode=none systemd sends no signal of its own on stop.
		b.WriteString("ExecStop=/bin/kill -TERM $MAINPID\n")
	}
	// monit restarts the daemon; systemd restarting it too would race monit.
	b.WriteString("Restart=no\n")
	b.WriteString("# The daemon makes its own cgroups (garden/<id>): systemd must not move\n" +
		"# processes out of them when it realizes cgroups for other units.\n")
	fmt.Fprintf(&b, "Delegate=%s\n", s.Delegate)
	fmt.Fprintf(&b, "KillMode=%s\n", s.KillMode)
	b.WriteString("TasksMax=infinity\n")
	if s.TimeoutStartSec > 0 {
		fmt.Fprintf(&b, "TimeoutStartSec=%d\n", s.TimeoutStartSec)
	}
	if s.TimeoutStopSec > 0 {
		fmt.Fprintf(&b, "TimeoutStopSec=%d\n", s.TimeoutStopSec)
	}
	return []byte(b.String()), nil
}

// DropInName is the drop-in file cellguard writes for a supervisor unit.
const DropInName = "50-cellguard-delegate.conf"

// RenderSupervisorDropIn returns a drop-in that delegates a running
// supervisor unit (e.g. runit.service holding monit) in place: systemd
// applies Delegate= on Reload without a restart. TasksMax=infinity because
// every container process of every monit job counts against the unit.
func RenderSupervisorDropIn(unitName, delegate string) ([]byte, error) {
	if err := ValidateUnitName(unitName); err != nil {
		return nil, err
	}
	if delegate != DelegateV1 && delegate != DelegateV2 {
		return nil, fmt.Errorf("unit: delegate %q: want %q or %q", delegate, DelegateV1, DelegateV2)
	}
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "# Protects every monit job's cgroup subtree below %s.\n", unitName)
	b.WriteString("[Service]\n")
	fmt.Fprintf(&b, "Delegate=%s\n", delegate)
	b.WriteString("TasksMax=infinity\n")
	return []byte(b.String()), nil
}

// Controllers returns the controller names a Delegate= value asks for, as
// systemd reports them in DelegateControllers (order-insensitive).
func Controllers(delegate string) []string {
	if delegate == DelegateV2 {
		return nil
	}
	return strings.Fields(delegate)
}
