package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func couldNotRunCommand() *Command {
	var promFile, why string
	return &Command{Name: "could-not-run",
		Usage: "drain could-not-run --prometheus-textfile PATH [--why TEXT] [--] JOB_CHANGE HASH_CHANGE [UPDATED_PACKAGES...]",
		Help:  helpText("drain-could-not-run"),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&promFile, "prometheus-textfile", "", "the drain textfile to write (required)")
			fs.StringVar(&why, "why", "", "why cellguard drain gave no verdict, for the log")
		},
		Run: func(_ context.Context, c *call) int {
			logger, closer := c.flagLogger("drain")
			defer closer()
			why, err := app.DrainCouldNotRun(logger, promFile, c.args, why, c.now())
			var cr *app.CouldNotRun
			switch {
			case errors.As(err, &cr):
				c.errorf("--prometheus-textfile: %v", cr.Err)
				return ExitCantRun
			case err != nil:
				c.fail(err)
				return ExitFailed
			}
			fmt.Fprintf(c.Stderr, "cellguard drain could-not-run: %s: cellguard_drain_could_not_run 1 (%s)\n", promFile, why)
			return ExitOK
		}}
}
