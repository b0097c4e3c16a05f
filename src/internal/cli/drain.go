package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/report"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

func drainCommand() *Command {
	return &Command{Name: "drain", Summary: "the job's drain: validate, judge by BOSH's arguments, print the integer; drain lift", Run: runDrain}
}

// defaultDrainBudget bounds a drain's validation when neither --budget nor
// the config's drain.budget says: far below anything the director or an
// operator waits for (the agent itself waits forever), far above a
// cell's validation (docs/performance.md: milliseconds, plus 1.5s when an
// escape is confirmed).
const defaultDrainBudget = 60 * time.Second

// defaultLiftFile is where `cellguard drain lift` records a lift: the
// ephemeral disk, so a reboot keeps it (it expires anyway) and a recreate,
// which brings a new disk, drops it. Its directory is its own, 0700, beside
// the job's and not in it: the agent makes /var/vcap/data/cellguard 0770
// root:vcap (measured in the local cell's jammy VM), so anything running as vcap
// could swap a lift in there, and OpenTrusted rightly refuses it.
const defaultLiftFile = "/var/vcap/data/cellguard-lift/drain-lift.json"

const drainHelp = `
BOSH's drain contract (read from bosh-agent v2.759.0, docs/lifecycle.md):
the agent runs the job's bin/drain with JOB_CHANGE HASH_CHANGE
[UPDATED_PACKAGES...] and fails the step only when stdout holds no
integer. bin/drain runs this command within a time limit and passes its
integer on.

What drain does:
  job_shutdown (stop, recreate, delete, scale-in): validates, reports, logs,
      writes the metrics, prints 0. With --block-on-shutdown
      (cellguard.drain.block_on_shutdown) it blocks like an update.
  job_changed, job_new, job_check_status, or anything else (an update):
      a blocking finding blocks, unless --fix (validator.fix) moved every
      escaped process back and verified it, or a lift is in place.
  Blocking means: nothing on stdout, exit 1. That is the only way it
  blocks. Everything else prints 0.
  The validation gets --budget (cellguard.drain.budget, default 60s); when
  it runs out, drain reports the checks that finished and lets the VM go.
  When cellguard cannot run (config, /proc), it prints 0, exits 2, logs
  why and writes cellguard_drain_could_not_run 1.

A lift lets one VM go despite blocking findings, without a new manifest
(the agent runs the drain already on the VM). Over bosh ssh, as root:
  cellguard drain lift --reason TEXT [--for 1h] [--by NAME]
  cellguard drain lift --show | --cancel
It records who (--by, else SUDO_USER, else the user), why, when and until
(default 1h, at most 24h) in a root-only file; drain honours it only while
it has not expired and no one but root could have written it, and logs
that it was used and by whom.

Exit codes:
  0  the VM may go: passed, released on shutdown, lifted, or budget expired
     (stdout: 0)
  1  blocked (stdout: nothing)
  2  could not run (stdout: 0: a broken guard does not hold the VM)
`

type drainFlags struct {
	common
	root, format, promFile, liftFile string
	budget                           time.Duration
	blockOnShutdown                  bool
	runtimeRoots                     stringList
}

func runDrain(ctx context.Context, env *Env, args []string) int {
	if len(args) > 0 && args[0] == "lift" {
		return runDrainLift(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "could-not-run" {
		return runDrainCouldNotRun(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "timeout" {
		return runDrainTimeout(ctx, env, args[1:])
	}
	f := &drainFlags{}
	fs := newFlagSet(env, "drain", "drain [flags] [--] JOB_CHANGE HASH_CHANGE [UPDATED_PACKAGES...]\n       cellguard drain lift --reason TEXT [--for DURATION] [--by NAME] | --show | --cancel\n       cellguard drain could-not-run --prometheus-textfile PATH [--why TEXT] [--] JOB_CHANGE ...\n       cellguard drain timeout [--config PATH]", &f.common)
	fs.StringVar(&f.root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
	fs.StringVar(&f.format, "format", "human", "report format on stderr: human or json")
	fs.StringVar(&f.promFile, "prometheus-textfile", "", "write the checks' and the drain's gauges to this file; default the config's validator.prometheus_textfile")
	fs.StringVar(&f.liftFile, "lift-file", defaultLiftFile, "the lift `cellguard drain lift` writes")
	fs.DurationVar(&f.budget, "budget", 0, fmt.Sprintf("time the validation may take; default the config's drain.budget, else %v", defaultDrainBudget))
	fs.BoolVar(&f.blockOnShutdown, "block-on-shutdown", false, "block job_shutdown too (or the config's drain.block_on_shutdown)")
	fs.Var(&f.runtimeRoots, "runtime-root", "runc state root to scan (repeatable); default the config's")
	withHelp(env, fs, drainHelp)
	if ok, code := parse(fs, args); !ok {
		if code != ExitOK {
			fmt.Fprintln(env.Stdout, 0) // a flag cellguard cannot read: could not run
		}
		return code
	}
	d := &drainRun{env: env, f: f, call: drain.Parse(fs.Args())}
	if d.supervised() {
		return d.supervise(ctx, args)
	}
	markWorkerFD(env)
	code := d.run(ctx)
	d.reportToSupervisor(code)
	return code
}

// drainRun is one drain: the agent's call, and what it found and decided.
type drainRun struct {
	env    *Env
	f      *drainFlags
	call   drain.Call
	logger lager.Logger
}

func (d *drainRun) run(ctx context.Context) (code int) {
	f, env := d.f, d.env
	var cfg *config.Config
	defer func() {
		// A bug must not cost the integer, nor the metric saying the
		// guard could not run (bin/drain would print 0 for a crash, but
		// could not tell a crash's exit 2 from cellguard's own).
		if p := recover(); p != nil {
			if d.logger == nil {
				var closer func()
				d.logger, closer = f.flagLogger(env, "drain")
				defer closer()
			}
			code = d.finish(cfg, nil, &cantRun{err: fmt.Errorf("cellguard drain panicked: %v", p)})
		}
	}()
	logger, cfg, closer, err := f.setup(env, "drain")
	if err != nil {
		logger, closer = f.flagLogger(env, "drain")
		defer closer()
		d.logger = logger
		d.logCall()
		return d.finish(nil, nil, &cantRun{err: err, hint: "fix the cellguard job's properties; this drain let the VM go"})
	}
	defer closer()
	d.logger = logger
	d.logCall()
	if f.format != "human" && f.format != "json" {
		return d.finish(cfg, nil, &cantRun{err: fmt.Errorf("--format %q: want human or json", f.format)})
	}
	budget := drainBudget(d.f.budget, cfg)
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	v, cr := newValidation(bctx, cfg, validator.Drain, f.root, splitList(f.runtimeRoots), nil, false)
	if cr != nil {
		return d.finish(cfg, nil, cr)
	}
	logger.Info("starting", lager.Data{"root": f.root, "checks": v.IDs(), "ignore": v.Options.Ignore,
		"fix": v.Fix, "budget": budget.String(), "block_on_shutdown": d.blockOnShutdown(cfg)})
	rep := v.Run(bctx)
	safefile.Crash("drain")
	if rep.Incomplete {
		var unfinished []string
		for _, r := range rep.Results {
			if r.Unfinished {
				unfinished = append(unfinished, r.ID)
			}
		}
		data := lager.Data{"budget": budget.String(), "unfinished": unfinished}
		if ctx.Err() != nil {
			logger.Error("interrupted", ctx.Err(), data)
		} else {
			logger.Error("budget-expired", bctx.Err(), data)
		}
	}
	emitReport(logger, rep, f.format, env.Stderr, env.now())
	return d.finish(cfg, &rep, nil)
}

func (d *drainRun) logCall() {
	d.logger.Info("called", lager.Data{"job_change": d.call.JobChange, "hash_change": d.call.HashChange,
		"updated_packages": d.call.Packages, "event": d.call.Event, "recognized": d.call.Recognized,
		"BOSH_JOB_STATE": d.env.Getenv("BOSH_JOB_STATE"), "BOSH_JOB_NEXT_STATE": d.env.Getenv("BOSH_JOB_NEXT_STATE")})
	if !d.call.Recognized {
		d.logger.Info("unrecognized-job-change", lager.Data{"job_change": d.call.JobChange,
			"judged_as": "update", "reason": "bosh-agent passes job_shutdown, job_changed, job_new or job_check_status; anything else is judged as an update, the stricter"})
	}
}

// drainBudget is the time a drain's validation may take: the flag, else
// the config's drain.budget, else defaultDrainBudget.
func drainBudget(flag time.Duration, cfg *config.Config) time.Duration {
	switch {
	case flag > 0:
		return flag
	case cfg != nil && cfg.Drain.Budget.Duration > 0:
		return cfg.Drain.Budget.Duration
	}
	return defaultDrainBudget
}

func (d *drainRun) blockOnShutdown(cfg *config.Config) bool {
	return d.f.blockOnShutdown || cfg != nil && cfg.Drain.BlockOnShutdown
}

// finish decides, reports the decision everywhere it is read (the log,
// stderr, the textfile) and keeps the contract on stdout: the integer 0,
// or nothing when blocked. cfg is nil when it could not be read.
func (d *drainRun) finish(cfg *config.Config, rep *validator.Report, cr *cantRun) int {
	env, logger := d.env, d.logger
	now := env.now()
	in := drain.Input{Call: d.call, Report: rep, BlockOnShutdown: d.blockOnShutdown(cfg)}
	if rep == nil && cr == nil {
		cr = &cantRun{err: errors.New("no validator report")}
	}
	if cr != nil {
		in.CouldNotRun = cr.err
		logger.Error("could-not-run", cr.err, lager.Data{"hint": cr.hint})
		cr.print(env)
	}
	if rep != nil && rep.Blocked {
		in.Lift = activeLift(env, logger, d.f.liftFile, now)
	}
	dec := drain.Decide(in)
	data := lager.Data{"event": d.call.Event, "job_change": d.call.JobChange, "outcome": dec.Outcome, "block": dec.Block, "reason": dec.Reason}
	if rep != nil {
		data["blocking_checks"] = blockingIDs(*rep)
	}
	switch dec.Outcome {
	case drain.CouldNotRun:
		logger.Error("decided", in.CouldNotRun, data)
	case drain.Lifted:
		logger.Info("drain-block-lifted", lager.Data{"by": in.Lift.By, "sudo_user": in.Lift.SudoUser, "uid": in.Lift.UID,
			"reason": in.Lift.Reason, "created": in.Lift.Created, "expires": in.Lift.Expires, "file": d.f.liftFile})
		logger.Info("decided", data)
	default:
		logger.Info("decided", data)
	}
	fmt.Fprintf(env.Stderr, "cellguard drain %s: %s: %s\n", strings.TrimSpace(d.call.JobChange+" "+d.call.HashChange), dec.Outcome, report.Escape(dec.Reason))

	promFile := d.f.promFile
	if promFile == "" && cfg != nil {
		promFile = cfg.Validator.PrometheusFile
	}
	if promFile != "" {
		if err := metrics.WriteDrainTextfile(promFile, rep, d.call, dec, now); err != nil {
			logger.Error("write-prometheus-textfile", err)
			errorf(env, "%v", err)
		}
	}
	return drainVerdict(env, dec)
}

// drainVerdict keeps BOSH's drain contract on stdout for a decision and
// returns the exit code: the integer 0 whenever the VM may go, nothing
// when it is blocked. The agent reads only stdout (an integer there wins
// over any exit status), so this is the one place that decides what it
// sees: cellguard drain and validate --phase drain both end here.
func drainVerdict(env *Env, dec drain.Decision) int {
	switch {
	case dec.Block:
		return ExitFailed // no integer: the agent fails the step
	case dec.Outcome == drain.CouldNotRun:
		fmt.Fprintln(env.Stdout, 0)
		return ExitCantRun
	}
	fmt.Fprintln(env.Stdout, 0)
	return ExitOK
}

// activeLift returns the lift at path when it holds now. A lift that is
// there but expired, invalid or untrusted is logged and not used.
func activeLift(env *Env, logger lager.Logger, path string, now time.Time) *drain.Lift {
	l, err := drain.ReadLift(path)
	switch {
	case errors.Is(err, drain.ErrNoLift):
		return nil
	case err != nil:
		logger.Error("lift-ignored", err, lager.Data{"file": path, "reason": "an untrusted or unreadable lift lifts nothing"})
		errorf(env, "lift ignored: %v", err)
		return nil
	}
	state := l.State(now)
	if state != "active" {
		logger.Info("lift-not-used", lager.Data{"file": path, "state": state, "by": l.By, "reason": l.Reason, "expires": l.Expires})
		return nil
	}
	return &l
}

func blockingIDs(rep validator.Report) []string {
	var ids []string
	for _, r := range rep.Results {
		if r.Blocking {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

const drainLiftHelp = `
Lifts a drain's block on this VM: the next drains let it go despite blocking
findings until the lift expires (--for, default 1h, at most 24h). Run it
over bosh ssh as root (sudo); it records who (--by, else SUDO_USER, else
the user), why (--reason, required), when and until, in a file only root
can read or write, and logs the same. Drain logs each time it uses a lift.
--show prints the lift and whether it holds; --cancel removes it.

Exit codes: 0 done, 1 the lift could not be written or removed (or --show
found one drain will not trust), 2 bad usage.
`

func runDrainLift(_ context.Context, env *Env, args []string) int {
	var c common
	var reason, by, liftFile string
	var dur time.Duration
	var show, cancel, jsonOut bool
	fs := newFlagSet(env, "drain lift", "drain lift --reason TEXT [--for DURATION] [--by NAME] | --show | --cancel", &c)
	fs.StringVar(&reason, "reason", "", "why this VM may go despite its findings (required)")
	fs.DurationVar(&dur, "for", drain.DefaultLiftFor, fmt.Sprintf("how long the lift holds (at most %v)", drain.MaxLiftFor))
	fs.StringVar(&by, "by", "", "who lifts; default SUDO_USER, else USER")
	fs.BoolVar(&show, "show", false, "print the lift and whether it holds")
	fs.BoolVar(&cancel, "cancel", false, "remove the lift")
	fs.BoolVar(&jsonOut, "json", false, "print the lift as JSON")
	fs.StringVar(&liftFile, "lift-file", defaultLiftFile, "the lift file")
	withHelp(env, fs, drainLiftHelp)
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	if show && cancel || (show || cancel) && reason != "" {
		errorf(env, "--show, --cancel and --reason exclude each other")
		return ExitCantRun
	}
	logger, _, closer, err := c.setup(env, "drain-lift")
	if err != nil {
		logger, closer = c.flagLogger(env, "drain-lift")
	}
	defer closer()
	now := env.now()
	switch {
	case show:
		return showLift(env, liftFile, now, jsonOut)
	case cancel:
		removed, err := drain.CancelLift(liftFile)
		if err != nil {
			logger.Error("cancel-lift", err)
			errorf(env, "%v", err)
			return ExitFailed
		}
		logger.Info("lift-cancelled", lager.Data{"file": liftFile, "removed": removed, "by": whoLifts(env, by)})
		if removed {
			fmt.Fprintf(env.Stdout, "lift cancelled: drain blocks again on blocking findings (%s removed)\n", liftFile)
		} else {
			fmt.Fprintf(env.Stdout, "no lift to cancel (%s)\n", liftFile)
		}
		return ExitOK
	}
	l, err := drain.NewLift(reason, whoLifts(env, by), now, dur)
	if err != nil {
		errorf(env, "%v", err)
		hintf(env, "cellguard drain lift --reason \"INC-123: known escapes, recreating the VM\" [--for 1h]")
		return ExitCantRun
	}
	l.SudoUser, l.SudoUID = env.Getenv("SUDO_USER"), env.Getenv("SUDO_UID")
	if err := drain.WriteLift(liftFile, l); err != nil {
		logger.Error("write-lift", err)
		errorf(env, "%v", err)
		hintf(env, "run it as root: sudo /var/vcap/packages/cellguard/bin/cellguard drain lift ...")
		return ExitFailed
	}
	logger.Info("lift-written", lager.Data{"file": liftFile, "by": l.By, "sudo_user": l.SudoUser, "uid": l.UID,
		"reason": l.Reason, "created": l.Created, "expires": l.Expires})
	if jsonOut {
		printJSON(env, l)
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "drain block lifted on this VM until %s (%v), by %s: %s\n",
		l.Expires.Format(time.RFC3339), dur, l.By, l.Reason)
	return ExitOK
}

// whoLifts is --by, else the user sudo ran for (bosh ssh's), else the user.
func whoLifts(env *Env, by string) string {
	for _, v := range []string{by, env.Getenv("SUDO_USER"), env.Getenv("USER"), env.Getenv("LOGNAME")} {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

func showLift(env *Env, path string, now time.Time, jsonOut bool) int {
	l, err := drain.ReadLift(path)
	switch {
	case errors.Is(err, drain.ErrNoLift):
		if jsonOut {
			printJSON(env, map[string]any{"file": path, "state": "none"})
		} else {
			fmt.Fprintf(env.Stdout, "no lift (%s): drain blocks on blocking findings of an update\n", path)
		}
		return ExitOK
	case err != nil:
		errorf(env, "%v", err)
		hintf(env, "drain ignores this lift; remove it with cellguard drain lift --cancel")
		return ExitFailed
	}
	state := l.State(now)
	if jsonOut {
		printJSON(env, map[string]any{"file": path, "state": state, "lift": l})
		return ExitOK
	}
	switch state {
	case "active":
		fmt.Fprintf(env.Stdout, "lift active until %s (%v left), by %s: %s\n", l.Expires.Format(time.RFC3339), l.Expires.Sub(now).Round(time.Second), l.By, l.Reason)
	case "expired":
		fmt.Fprintf(env.Stdout, "lift expired at %s (by %s: %s); drain no longer uses it\n", l.Expires.Format(time.RFC3339), l.By, l.Reason)
	default:
		fmt.Fprintf(env.Stdout, "lift invalid (created %s, expires %s: not now, or longer than %v); drain does not use it\n",
			l.Created.Format(time.RFC3339), l.Expires.Format(time.RFC3339), drain.MaxLiftFor)
	}
	return ExitOK
}
