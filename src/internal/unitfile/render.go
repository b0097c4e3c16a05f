package unitfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
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
	// DelegateV2 is enough on a pure cgroup v2 host, and all that systemd
	// before 236 understands (a boolean; there it delegates every controller).
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

// header opens every file cellguard writes. go-systemd's Serialize writes
// no comments, so the notes stand here, before the first section.
const header = "# Written by cellguard (`cellguard unit install`); it is rewritten on every\n" +
	"# BOSH pre-start, so edit the cellguard job's properties instead.\n"

// unitNote says why the unit reads as it does.
const unitNote = "# Delegate=: the daemon makes its own cgroups (garden/<id>): systemd must\n" +
	"# not move processes out of them when it realizes cgroups for other units.\n" +
	"# No install section and no dependencies: monit, not boot, decides when it\n" +
	"# runs.\n"

// Render returns the unit file text. It validates first, so no text is
// produced from input that could inject a directive; go-systemd's unit
// package writes the sections (it escapes nothing, so validation is what
// keeps each value one line of plain words).
//
// The text changed once, when rendering moved to go-systemd: the
// delegation comment moved from inside [Service] to the header. Options,
// order and values are the same (TestRenderMatchesEarlierOptions), so the
// first install after the upgrade rewrites the file and reloads systemd
// once; the running unit is not restarted, and later installs find it
// unchanged.
func Render(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	opts := []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", s.Name+", started by monit through cellguard (delegated cgroups)"),
		unit.NewUnitOption("Service", "Type", s.Type),
	}
	if s.PIDFile != "" && s.Type == TypeForking {
		opts = append(opts, unit.NewUnitOption("Service", "PIDFile", s.PIDFile))
	}
	opts = append(opts, unit.NewUnitOption("Service", "ExecStart", strings.Join(s.Start, " ")))
	stop := "/bin/kill -TERM $MAINPID" // with KillMode=none systemd sends no signal of its own on stop
	if len(s.Stop) > 0 {
		stop = strings.Join(s.Stop, " ")
	}
	opts = append(opts,
		unit.NewUnitOption("Service", "ExecStop", stop),
		// monit restarts the daemon; systemd restarting it too would race monit.
		unit.NewUnitOption("Service", "Restart", "no"),
		unit.NewUnitOption("Service", "Delegate", s.Delegate),
		unit.NewUnitOption("Service", "KillMode", s.KillMode),
		unit.NewUnitOption("Service", "TasksMax", "infinity"),
	)
	if s.TimeoutStartSec > 0 {
		opts = append(opts, unit.NewUnitOption("Service", "TimeoutStartSec", strconv.Itoa(s.TimeoutStartSec)))
	}
	if s.TimeoutStopSec > 0 {
		opts = append(opts, unit.NewUnitOption("Service", "TimeoutStopSec", strconv.Itoa(s.TimeoutStopSec)))
	}
	return serialize(header+unitNote, opts)
}

// DropInName is the drop-in file cellguard writes for a supervisor unit.
const DropInName = "50-cellguard-delegate.conf"

// RenderSupervisorDropIn returns a drop-in that delegates a running
// supervisor unit (e.g. runit.service holding monit) in place: systemd
// applies Delegate= on Reload without a restart. TasksMax=infinity because
// every container process of every monit job counts against the unit. The
// text is byte for byte what cellguard wrote before go-systemd rendered it.
func RenderSupervisorDropIn(unitName, delegate string) ([]byte, error) {
	return delegationDropIn(unitName, delegate, "# Protects every monit job's cgroup subtree below "+unitName+".\n")
}

// RenderDelegateDropIn is the same drop-in for a unit another release
// installs (concourse.service), delegated in place at the operator's word.
func RenderDelegateDropIn(unitName, delegate string) ([]byte, error) {
	return delegationDropIn(unitName, delegate, "# Delegates "+unitName+"'s cgroup subtree in place "+delegateUnitsNote+".\n")
}

// delegateUnitsNote tells RenderDelegateDropIn's drop-in from the
// supervisor's, which share a file name: pre-start's prune keeps each by
// its own property (cellguard.delegate_units, cellguard.supervisor.protect).
const delegateUnitsNote = "(cellguard.delegate_units)"

// IsDelegateUnitsDropIn reports whether a drop-in's text is one
// RenderDelegateDropIn wrote (not the supervisor's).
func IsDelegateUnitsDropIn(text []byte) bool {
	return WrittenByCellguard(text) && bytes.Contains(text, []byte(delegateUnitsNote+".\n"))
}

func delegationDropIn(unitName, delegate, comment string) ([]byte, error) {
	if err := ValidateUnitName(unitName); err != nil {
		return nil, err
	}
	if delegate != DelegateV1 && delegate != DelegateV2 {
		return nil, fmt.Errorf("unit: delegate %q: want %q or %q", delegate, DelegateV1, DelegateV2)
	}
	return serialize(header+comment, []*unit.UnitOption{
		unit.NewUnitOption("Service", "Delegate", delegate),
		unit.NewUnitOption("Service", "TasksMax", "infinity"),
	})
}

func serialize(comments string, opts []*unit.UnitOption) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(comments)
	if _, err := b.ReadFrom(unit.Serialize(opts)); err != nil {
		return nil, fmt.Errorf("render unit: %w", err)
	}
	return b.Bytes(), nil
}

// Setting returns the value of the last assignment of name in section of
// a unit file or drop-in (text as systemd reads it: comments, line
// continuations), and whether there is one. An empty assignment resets
// the setting, so it counts as none.
func Setting(text []byte, section, name string) (string, bool, error) {
	opts, err := unit.DeserializeOptions(bytes.NewReader(text))
	if err != nil {
		return "", false, fmt.Errorf("parse unit file: %w", err)
	}
	value, ok := "", false
	for _, o := range opts {
		if o.Section == section && o.Name == name {
			value, ok = strings.TrimSpace(o.Value), strings.TrimSpace(o.Value) != ""
		}
	}
	return value, ok, nil
}

// Controllers returns the controller names a Delegate= value asks for, as
// systemd reports them in DelegateControllers (order-insensitive).
func Controllers(delegate string) []string {
	if delegate == DelegateV2 {
		return nil
	}
	return strings.Fields(delegate)
}
