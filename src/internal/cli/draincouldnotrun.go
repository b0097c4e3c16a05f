package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

var drainCouldNotRunHelp = helpText("drain-could-not-run")

func runDrainCouldNotRun(_ context.Context, env *Env, args []string) int {
	var c common
	var promFile, why string
	fs := newFlagSet(env, "drain could-not-run", "drain could-not-run --prometheus-textfile PATH [--why TEXT] [--] JOB_CHANGE HASH_CHANGE [UPDATED_PACKAGES...]", &c)
	fs.StringVar(&promFile, "prometheus-textfile", "", "the drain textfile to write (required)")
	fs.StringVar(&why, "why", "", "why cellguard drain gave no verdict, for the log")
	withHelp(env, fs, drainCouldNotRunHelp)
	if ok, code := parse(fs, args); !ok {
		return code
	}
	logger, closer := c.flagLogger(env, "drain")
	defer closer()
	why, err := app.DrainCouldNotRun(logger, promFile, fs.Args(), why, env.now())
	var cr *app.CouldNotRun
	switch {
	case errors.As(err, &cr):
		errorf(env, "--prometheus-textfile: %v", cr.Err)
		return ExitCantRun
	case err != nil:
		errorf(env, "%v", err)
		return ExitFailed
	}
	fmt.Fprintf(env.Stderr, "cellguard drain could-not-run: %s: cellguard_drain_could_not_run 1 (%s)\n", promFile, why)
	return ExitOK
}
