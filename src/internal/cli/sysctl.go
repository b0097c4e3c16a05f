package cli

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/logging"
)

func sysctlCommand() *Command {
	return &Command{Name: "sysctl", Summary: "apply and check container-host sysctls", Sub: []*Command{
		sysctlSubcommand("apply", "persist the profile to sysctl.d, write it live, read it back", helpText("sysctl-apply"), runSysctlApply),
		sysctlSubcommand("check", "report keys not in force and which sysctl.d file wins at boot (no writes)", helpText("sysctl-check"), runSysctlCheck),
		sysctlSubcommand("profile", "print the resolved profile: key, value, why, source", "\nExit codes: 0 printed, 2 bad flags, config or profile.\n",
			func(c *call, f *sysctlFlags, _ logging.Logger, p app.SysctlProfile) int {
				c.show(f.asJSON, p, func(w io.Writer) { app.WriteSysctlProfile(w, p) })
				return ExitOK
			}),
	}}
}

// sysctlFlags are the flags apply, check and profile share.
type sysctlFlags struct {
	root, profile, file string
	set, remove         []string
	asJSON              bool
}

// sysctlSubcommand is one of apply, check and profile: their flags, the
// config and the profile resolved from both, then run.
func sysctlSubcommand(name, summary, help string, run func(c *call, f *sysctlFlags, logger logging.Logger, p app.SysctlProfile) int) *Command {
	f := &sysctlFlags{}
	return &Command{Name: name, Summary: summary, Usage: "sysctl " + name + " [flags]", Help: helpText("sysctl-profile") + help, Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&f.root, "root", "/", "root prefix for /proc/sys and the sysctl.d trees (tests: a fixture tree)")
			fs.StringVar(&f.profile, "profile", "", "built-in profile: container-host (default) or none")
			fs.StringArrayVar(&f.set, "set", nil, "`KEY=VALUE` (exact) or 'KEY>=N' (a floor) to add or override (repeatable)")
			fs.StringArrayVar(&f.remove, "remove", nil, "`KEY` to drop from the profile (repeatable)")
			fs.StringVar(&f.file, "file", "", "persisted file, in a sysctl.d directory (default "+app.DefaultSysctlFile+")")
			fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON on stdout")
		},
		Run: func(_ context.Context, c *call) int {
			logger, cfg, closer, err := c.setup("sysctl-" + name)
			if err != nil {
				c.fail(err)
				return ExitCantRun
			}
			defer closer()
			p, err := app.ResolveSysctl(cfg, app.SysctlFlags{Profile: f.profile, File: f.file, Set: f.set, Remove: f.remove})
			if err != nil {
				c.failed(logger, "resolve-profile", err)
				c.hintf("fix the cellguard job's sysctl properties or the --set/--remove/--file flags; nothing was written")
				return ExitCantRun
			}
			return run(c, f, logger, p)
		}}
}

func runSysctlApply(c *call, f *sysctlFlags, logger logging.Logger, p app.SysctlProfile) int {
	rep, err := app.SysctlApply(logger, f.root, p)
	c.show(f.asJSON, rep, func(w io.Writer) { app.WriteSysctlApply(w, rep) })
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, app.ErrSysctlInvalid):
		c.failed(logger, "invalid-input", err)
		c.hintf("nothing was persisted and live changes were rolled back; fix the values and run again")
		return ExitCantRun
	default:
		c.failed(logger, "not-applied", err)
		c.hintf("the values are valid; see the table for the keys the kernel did not take")
		return ExitFailed
	}
}

func runSysctlCheck(c *call, f *sysctlFlags, logger logging.Logger, p app.SysctlProfile) int {
	rep, err := app.SysctlCheck(logger, f.root, p)
	if err != nil {
		c.failed(logger, "check", err)
		return ExitCantRun
	}
	c.show(f.asJSON, rep, func(w io.Writer) { app.WriteSysctlCheck(w, rep) })
	if !rep.InForce {
		return ExitFailed
	}
	return ExitOK
}
