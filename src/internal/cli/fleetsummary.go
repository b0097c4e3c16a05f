package cli

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func fleetSummaryCommand() *Command {
	var asJSON bool
	return &Command{Name: "fleet-summary", Summary: "one screen for the whole fleet from `bosh --json run-errand cellguard-validate`'s output",
		Usage: "fleet-summary [--json] [FILE | -]", Help: helpText("fleet-summary"),
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print the summary as JSON (every instance)")
		},
		Run: func(_ context.Context, c *call) int {
			if len(c.args) > 1 {
				c.errorf("want at most one FILE, got %d arguments", len(c.args))
				return ExitCantRun
			}
			stdin := c.Stdin
			if stdin == nil {
				stdin = os.Stdin
			}
			in, name, err := app.FleetInput(stdin, c.fs.Arg(0))
			if err != nil {
				c.fail(err)
				return ExitCantRun
			}
			s, err := app.SummarizeFleet(in)
			if err != nil {
				c.errorf("read %s: %v", name, err)
				var fe *app.FleetError
				if errors.As(err, &fe) && fe.Hint != "" {
					c.hintf("%s", fe.Hint)
				}
				return ExitCantRun
			}
			if asJSON {
				c.show(true, s.Summary, nil)
			} else if err := s.Write(c.Stdout); err != nil {
				c.errorf("write summary: %v", err)
				return ExitCantRun
			}
			if !s.Healthy() {
				return ExitFailed
			}
			return ExitOK
		}}
}
