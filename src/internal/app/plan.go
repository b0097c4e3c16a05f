package app

import (
	"code.cloudfoundry.org/lager/v3"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/bpfiter"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Overrides are the command line's say over the config for one run.
type Overrides struct {
	// Root prefixes every host path; "" or "/" is the live host.
	Root string
	// RuntimeRoots replace the config's validator.runtime_roots.
	RuntimeRoots []string
	// Ignore adds to the config's validator.ignore.
	Ignore []string
	// Fix heals escapes as validator.fix does.
	Fix bool
}

// Plan is the one place a validation run is built: from the job's config
// and the flags, once, what the facts read (facts.Spec), how the checks
// judge (checks.Policy) and the operator's ignore and blocking lists.
// validate, drain, watch and config check all take their runs from it.
type Plan struct {
	// Spec is what the facts read; each run adds its own snapshot.
	Spec facts.Spec
	// Snapshot is what each run's snapshot reads.
	Snapshot snapshot.Spec
	// Policy is how the checks judge; each run sets its phase.
	Policy checks.Policy
	// Ignore and Blocking are the operator's lists (config and flags).
	Ignore   []string
	Blocking map[string][]string
	// Fix moves escapes back after judging (--fix, validator.fix).
	Fix bool
	// StatIterator reads every process's stat on the live root from one
	// BPF task iterator (validator.bpf_stat_iterator); off, from /proc.
	StatIterator bool
	// Extra are checks run besides the registry's (tests: one that
	// never returns).
	Extra []validator.Check
}

// CheckIDs are the registered checks' ids, sorted: listing them reads
// nothing and needs no config (--help).
func CheckIDs() []string { return checks.IDs() }

// OnEvent names the checks watch runs after each systemd event.
var OnEvent = checks.OnEvent

// BoshRuncPaths are where BOSH releases keep the runc their runtime runs
// (garden-runc-release's runc package), besides validator.runtime_binaries
// and PATH: a child of a process running one of them may be a `runc exec`
// still joining its cgroups (checks.RuncFiles).
var BoshRuncPaths = []string{"/var/vcap/packages/runc/bin/runc"}

// bpmRuntimeRoot is where BOSH's bpm keeps the runc state of the jobs it
// runs in containers.
const bpmRuntimeRoot = "/var/vcap/sys/run/bpm-runc"

// HealLedger is the host's record of heals, shared by watch and drain so
// that heal_per_minute caps the host, not each process (heal.NewSharedBudget).
// It lives in watch's run directory (root's, made by watch_ctl; without
// it, drain has no watch healing beside it and keeps its own record), on
// the agent's tmpfs, so a reboot empties it with CLOCK_BOOTTIME.
const HealLedger = "/var/vcap/sys/run/cellguard/heal-ledger"

// DefaultRuntimeRoots are scanned when neither the flags nor the config
// name any: runc's and containerd's own, and bpm's (the job's spec lists
// the same three as validator.runtime_roots' default).
func DefaultRuntimeRoots() []string { return append(runcstate.StandardRoots(), bpmRuntimeRoot) }

// NewPlan builds the plan of cfg with o over it.
func NewPlan(cfg *config.Config, o Overrides) *Plan {
	vc := cfg.Validator
	roots := vc.RuntimeRoots
	if rs := SplitList(o.RuntimeRoots); len(rs) > 0 {
		roots = rs
	}
	if len(roots) == 0 {
		roots = DefaultRuntimeRoots()
	}
	daemons := make([]facts.Daemon, 0, len(cfg.AuditedDaemons()))
	for _, d := range cfg.AuditedDaemons() {
		daemons = append(daemons, facts.Daemon{Name: d.Name, PIDFile: d.PIDFile})
	}
	// Load judged the records; one refused here (a config built in code)
	// makes runtime-versions an error, never a silent shipped-only run.
	ops, opsErr := vc.OperatorAdvisories()
	p := &Plan{
		Spec: facts.Spec{
			Root: o.Root, Daemons: daemons, DelegateUnits: cfg.DelegateUnits,
			RuntimeBinaries: vc.RuntimeBinaries, Advisories: ops, AdvisoriesErr: opsErr,
			Sysctl:     sysctl.Settings{Profile: cfg.Sysctl.Profile, Set: cfg.Sysctl.Set, Remove: cfg.Sysctl.Remove, File: cfg.Sysctl.File},
			NetnsProbe: vc.NetnsProbe, RuntimeRoots: roots, Namespaces: vc.Namespaces,
			Prober: runtimever.Prober{Timeout: vc.ProbeTimeout.Duration},
		},
		Snapshot: snapshot.Spec{Root: o.Root, RuntimeRoots: roots, Namespaces: vc.Namespaces},
		Policy: checks.Policy{
			RuncInitMaxAge:     vc.RuncInitMaxAge.Duration,
			ExtraCgroupRoots:   append(append([]string(nil), vc.ExtraCgroupRoots...), vc.ExtraCgroupSlices...),
			RuntimeBinaries:    vc.RuntimeBinaries,
			RuncPaths:          BoshRuncPaths,
			BlockingAdvisories: vc.BlockingAdvisories,
		},
		Ignore:       append(SplitList(vc.Ignore), SplitList(o.Ignore)...),
		Blocking:     vc.Blocking,
		Fix:          o.Fix || vc.Fix,
		StatIterator: vc.BPFStatIterator,
	}
	if hostroot.IsLive(o.Root) {
		// The host's manager, over D-Bus; a fixture root has none.
		p.Spec.Running = facts.ManagerVersion{}
		p.Spec.Units = facts.DialSystemd(systemd.Options{})
	}
	return p
}

// RuntimeRoots are the runc state roots the plan scans.
func (p *Plan) RuntimeRoots() []string { return p.Snapshot.RuntimeRoots }

func (p *Plan) registry(h *facts.Host, pol checks.Policy) []validator.Check {
	return append(checks.All(h, pol), p.Extra...)
}

// IDs are the ids of the checks the plan runs, sorted; listing them reads
// nothing.
func (p *Plan) IDs() []string { return validator.IDs(p.registry(nil, p.Policy)) }

// Options checks the operator's lists against the registry and returns
// the options of a run in phase. Its error is a *PolicyError.
func (p *Plan) Options(phase validator.Phase) (validator.Options, error) {
	reg := p.registry(nil, p.Policy)
	if err := validator.Validate(reg); err != nil {
		return validator.Options{}, err
	}
	pol := validator.Policy{Ignore: p.Ignore}
	if list, ok := p.Blocking[string(phase)]; ok {
		pol.Blocking = map[validator.Phase][]string{phase: SplitList(list)}
	}
	opts, err := pol.Options(reg, phase)
	var perr *validator.PolicyError
	if errors.As(err, &perr) {
		return opts, &PolicyError{Phase: phase, Err: perr, IDs: validator.IDs(reg)}
	}
	return opts, err
}

// PolicyError is an operator's list that names an unknown check: the
// config key and a hint listing the ids.
type PolicyError struct {
	Phase validator.Phase
	Err   *validator.PolicyError
	IDs   []string
}

func (e *PolicyError) Error() string {
	if e.Err.List == "blocking" {
		return fmt.Sprintf("validator.blocking.%s: %v", e.Phase, e.Err.Err)
	}
	return e.Err.Error()
}

func (e *PolicyError) Unwrap() error { return e.Err }

// Hint lists the ids the operator may name.
func (e *PolicyError) Hint() string {
	if e.Err.List == "ignore" {
		return fmt.Sprintf("check ids: %s (or %q)", strings.Join(e.IDs, ", "), validator.IgnoreAll)
	}
	return "check ids: " + strings.Join(e.IDs, ", ")
}

// ErrHostUnreadable means /proc cannot be read under the root: nothing
// could be validated ("could not run", not a failed check). Prepare's
// error is an *UnreadableError, which is it.
var ErrHostUnreadable = errors.New("host unreadable")

// UnreadableError is why the host could not be read; its text is the
// read's own.
type UnreadableError struct{ Err error }

func (e *UnreadableError) Error() string        { return e.Err.Error() }
func (e *UnreadableError) Unwrap() error        { return e.Err }
func (e *UnreadableError) Is(target error) bool { return target == ErrHostUnreadable }

// Validation is one run of the checks in a phase, ready to go: facts
// read, judged, then acted on (healing) when the plan says so.
type Validation struct {
	Checks  []validator.Check
	Options validator.Options
	Fix     bool
	facts   *facts.Host
}

// Prepare builds the run of phase: its snapshot (with one read of the
// kernel's BTF on the live host, for the run's BPF iterators: the stat
// iterator when the plan allows it, leaked-netns's with its probe), its facts
// (read now, each kind in its own goroutine, only the kinds its checks
// need) and its checks bound to them. ctx bounds the reads: the run's
// budget.
func (p *Plan) Prepare(ctx context.Context, phase validator.Phase) (*Validation, error) {
	opts, err := p.Options(phase)
	if err != nil {
		return nil, err
	}
	// Without /proc there is nothing to validate.
	if err := procfs.New(p.Spec.Root).Readable(); err != nil {
		return nil, &UnreadableError{Err: err}
	}
	spec := p.Spec
	snap := p.Snapshot
	if hostroot.IsLive(spec.Root) {
		spec.Kernel = &bpfiter.Kernel{} // read on first use only
		if p.StatIterator {
			snap.Procs = bpfProcs(spec.Kernel)
		}
	}
	spec.Snapshot = snapshot.Lazy(snap)
	pol := p.Policy
	pol.Phase = phase
	cs := p.registry(nil, pol)
	h := facts.Read(ctx, spec, checks.Needs(cs))
	return &Validation{Checks: p.registry(h, pol), Options: opts, Fix: p.Fix, facts: h}, nil
}

// IDs are the run's check ids, sorted.
func (v *Validation) IDs() []string { return validator.IDs(v.Checks) }

// LogData says what the run is, for a "starting" log line.
func (v *Validation) LogData() lager.Data {
	return lager.Data{"root": v.facts.Root(), "checks": v.IDs(), "ignore": v.Options.Ignore, "fix": v.Fix}
}

// Run judges the facts and, when asked, heals what the checks confirmed
// escaped, putting what each move did in the report.
func (v *Validation) Run(ctx context.Context) validator.Report {
	rep := validator.Run(ctx, v.Checks, v.Options)
	if v.Fix {
		heal.Report(&rep, v.facts.Snapshot(), heal.Mover{})
	}
	return rep
}

// Heal moves the escapes among rep's findings back, at most b.Left()
// processes, and returns each one's outcome (heal.Heal): drain's heal
// (cellguard.drain.heal), over the snapshot its checks judged.
func (v *Validation) Heal(rep validator.Report, b *heal.Budget) []heal.Outcome {
	return heal.Heal(rep, v.facts.Snapshot(), heal.Mover{}, b)
}

// PredictHeal is Heal writing nothing (heal.Predictor), within a budget
// of perMinute processes of its own: what the next drain's heal would do
// with rep's escapes (validate --phase drain).
func (v *Validation) PredictHeal(rep validator.Report, perMinute int) []heal.Outcome {
	return heal.Heal(rep, v.facts.Snapshot(), heal.Predictor{}, heal.NewBudget(perMinute, nil))
}

// WatchRegistry is the registry watch binds to each scan's snapshot, with
// drain's phase (what the next drain would say) and watch's own confirm
// schedule and probe cache: each scan reads the facts its checks need,
// lazily, so an event scan of three checks asks D-Bus nothing.
func (p *Plan) WatchRegistry(confirm []time.Duration) func(*snapshot.Source) []validator.Check {
	spec := p.Spec
	// Every period runs runtime-versions: exec each runtime once per file.
	spec.Prober.Cache = &runtimever.ProbeCache{}
	pol := p.Policy
	pol.Phase, pol.Confirm = validator.Drain, confirm
	return func(src *snapshot.Source) []validator.Check {
		s := spec
		s.Snapshot = src
		return p.registry(facts.New(s), pol)
	}
}

// bpfProcs lists every process's stat from one BPF iterator (kernel
// threads excepted: /proc has their full names).
func bpfProcs(k *bpfiter.Kernel) func() ([]procfs.Stat, error) {
	return func() ([]procfs.Stat, error) {
		ps, err := bpfiter.Procs(k)
		if err != nil {
			return nil, err
		}
		stats := make([]procfs.Stat, 0, len(ps))
		for _, p := range ps {
			if !p.KThread {
				stats = append(stats, p.Stat)
			}
		}
		return stats, nil
	}
}

// SplitList flattens "a,b" entries and drops blanks.
func SplitList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
