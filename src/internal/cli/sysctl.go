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

const sysctlProfileHelp = `
The profile is the built-in "container-host" profile (or "none"), minus the
keys in --remove / the config's sysctl.remove, plus --set / sysctl.set,
which override profile values. Flags win over the config file. Keys take
either notation: fs.inotify.max_user_watches or fs/inotify/max_user_watches.

Each entry is exact (the key must hold the value) or a floor (at least the
value). The profile's capacity limits (pipe-max-size, kernel.keys quotas,
pid_max, inotify, user.max_user_namespaces) are floors; switches and limits
where 0 means unlimited are exact; "cellguard sysctl profile" shows which.
--set KEY=VALUE is exact; --set 'KEY>=N' (or KEY=>=N; in the config
"KEY": ">=N") is a floor of one number. Keys holding several values are exact.
`

const sysctlApplyHelp = sysctlProfileHelp + `
apply validates every entry against the running kernel first (unknown keys,
bad names, non-numeric values for numeric keys); then writes each value that
differs under /proc/sys (a floor only when the live value is below it: a
higher one is left alone) and reads it back; if the kernel rejects a value
(EINVAL) every key this run changed is restored and the file is left alone.
Only then is --file replaced, atomically. A floor is persisted as the larger
of the floor and what the other sysctl.d files set for the key (the live
value when none does), so a reboot does not lower it either. A second run
changes nothing.

Exit codes:
  0  every key holds its wanted value (at least it, for a floor) and --file
     holds the profile
  1  a key could not be applied or verified (EPERM, the kernel stored another
     value), or --file could not be written
  2  bad input: bad flags or config, unknown key, bad name, a value that does
     not suit the key or that the kernel rejects; nothing is persisted
`

const sysctlCheckHelp = sysctlProfileHelp + `
check writes nothing. For each key it compares the live value and the value
systemd-sysctl would set at boot with the wanted one, and explains drift:
files in /etc, /run, /usr/local/lib, /usr/lib sysctl.d (a name in an earlier
directory masks it in later ones) are read in lexical order of their names,
the later assignment wins, and /etc/sysctl.conf is read last (or where
Debian's 99-sysctl.conf symlink puts it).

Exit codes:
  0  every key is in force: live and boot values equal the profile (are at
     least it, for a floor)
  1  drift: a live value differs, another file wins at boot, or a key does
     not exist on this kernel
  2  could not run: bad flags, config or profile, unreadable sysctl.d
`

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
