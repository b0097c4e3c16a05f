package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func sysctlCommand() *Command {
	return &Command{Name: "sysctl", Summary: "apply and check container-host sysctls", Sub: []*Command{
		{Name: "apply", Summary: "persist the profile to sysctl.d, write it live, read it back", Run: runSysctlApply},
		{Name: "check", Summary: "report keys not in force and which sysctl.d file wins at boot (no writes)", Run: runSysctlCheck},
		{Name: "profile", Summary: "print the resolved profile: key, value, why, source", Run: runSysctlProfile},
	}}
}

var sysctlProfileHelp = helpText("sysctl-profile")

var sysctlApplyHelp = sysctlProfileHelp + helpText("sysctl-apply")

var sysctlCheckHelp = sysctlProfileHelp + helpText("sysctl-check")

// sysctlFlags are the flags apply, check and profile share.
type sysctlFlags struct {
	common
	root, profile, file string
	set, remove         stringList
	jsonOut             bool
}

func newSysctlFlags(env *Env, name, help string) (*flag.FlagSet, *sysctlFlags) {
	f := &sysctlFlags{}
	fs := newFlagSet(env, "sysctl "+name, "sysctl "+name+" [flags]", &f.common)
	fs.StringVar(&f.root, "root", "/", "root prefix for /proc/sys and the sysctl.d trees (tests: a fixture tree)")
	fs.StringVar(&f.profile, "profile", "", "built-in profile: container-host (default) or none")
	fs.Var(&f.set, "set", "KEY=VALUE (exact) or 'KEY>=N' (a floor) to add or override (repeatable)")
	fs.Var(&f.remove, "remove", "KEY to drop from the profile (repeatable)")
	fs.StringVar(&f.file, "file", "", "persisted file, in a sysctl.d directory (default "+app.DefaultSysctlFile+")")
	fs.BoolVar(&f.jsonOut, "json", false, "print the result as JSON on stdout")
	base := fs.Usage
	fs.Usage = func() {
		base()
		fmt.Fprint(env.Stdout, help)
	}
	return fs, f
}

// start parses flags, sets up logging and resolves the profile. ok=false
// means stop with code.
func (f *sysctlFlags) start(env *Env, fs *flag.FlagSet, args []string, source string) (lager.Logger, app.SysctlProfile, func(), bool, int) {
	if ok, code := parse(fs, args); !ok {
		return nil, app.SysctlProfile{}, nil, false, code
	}
	if fs.NArg() > 0 {
		errorf(env, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
		return nil, app.SysctlProfile{}, nil, false, ExitCantRun
	}
	logger, cfg, closer, err := f.setup(env, source)
	if err != nil {
		errorf(env, "%v", err)
		return nil, app.SysctlProfile{}, nil, false, ExitCantRun
	}
	p, err := app.ResolveSysctl(cfg, app.SysctlFlags{Profile: f.profile, File: f.file, Set: f.set, Remove: f.remove})
	if err != nil {
		f.failed(env, logger, "resolve-profile", err)
		hintf(env, "fix the cellguard job's sysctl properties or the --set/--remove/--file flags; nothing was written")
		closer()
		return nil, app.SysctlProfile{}, nil, false, ExitCantRun
	}
	return logger, p, closer, true, ExitOK
}

func runSysctlApply(_ context.Context, env *Env, args []string) int {
	fs, f := newSysctlFlags(env, "apply", sysctlApplyHelp)
	logger, p, closer, ok, code := f.start(env, fs, args, "sysctl-apply")
	if !ok {
		return code
	}
	defer closer()
	rep, err := app.SysctlApply(logger, f.root, p)
	if f.jsonOut {
		printJSON(env, rep)
	} else {
		app.WriteSysctlApply(env.Stdout, rep)
	}

	switch {
	case err == nil:
		logger.Info("finished", lager.Data{"changed": rep.Changed, "file_changed": rep.FileChanged, "summary": rep.Summary()})
		return ExitOK
	case errors.Is(err, app.ErrSysctlInvalid):
		f.failed(env, logger, "invalid-input", err)
		hintf(env, "nothing was persisted and live changes were rolled back; fix the values and run again")
		return ExitCantRun
	default:
		f.failed(env, logger, "not-applied", err)
		hintf(env, "the values are valid; see the table for the keys the kernel did not take")
		return ExitFailed
	}
}

func runSysctlCheck(_ context.Context, env *Env, args []string) int {
	fs, f := newSysctlFlags(env, "check", sysctlCheckHelp)
	logger, p, closer, ok, code := f.start(env, fs, args, "sysctl-check")
	if !ok {
		return code
	}
	defer closer()

	rep, err := app.SysctlCheck(logger, f.root, p)
	if err != nil {
		f.failed(env, logger, "check", err)
		return ExitCantRun
	}
	if f.jsonOut {
		printJSON(env, rep)
	} else {
		app.WriteSysctlCheck(env.Stdout, rep)
	}
	logger.Info("finished", lager.Data{"in_force": rep.InForce, "drifted": len(rep.Drifted()), "keys": len(rep.Keys)})
	if !rep.InForce {
		return ExitFailed
	}
	return ExitOK
}

func runSysctlProfile(_ context.Context, env *Env, args []string) int {
	fs, f := newSysctlFlags(env, "profile", sysctlProfileHelp+"\nExit codes: 0 printed, 2 bad flags, config or profile.\n")
	_, p, closer, ok, code := f.start(env, fs, args, "sysctl-profile")
	if !ok {
		return code
	}
	defer closer()
	if f.jsonOut {
		printJSON(env, p)
		return ExitOK
	}
	app.WriteSysctlProfile(env.Stdout, p)
	return ExitOK
}
