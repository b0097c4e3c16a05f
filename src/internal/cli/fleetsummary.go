package cli

import (
	"context"
	"errors"
	"os"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func fleetSummaryCommand() *Command {
	return &Command{Name: "fleet-summary", Summary: "one screen for the whole fleet from `bosh --json run-errand cellguard-validate`'s output", Run: runFleetSummary}
}

var fleetSummaryHelp = helpText("fleet-summary")

func runFleetSummary(_ context.Context, env *Env, args []string) int {
	var c common
	var asJSON bool
	fs := newFlagSet(env, "fleet-summary", "fleet-summary [--json] [FILE | -]", &c)
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON (every instance)")
	withHelp(env, fs, fleetSummaryHelp)
	if ok, code := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		errorf(env, "want at most one FILE, got %d arguments", fs.NArg())
		return ExitCantRun
	}
	stdin := env.Stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	in, name, err := app.FleetInput(stdin, fs.Arg(0))
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	s, err := app.SummarizeFleet(in)
	if err != nil {
		errorf(env, "read %s: %v", name, err)
		var fe *app.FleetError
		if errors.As(err, &fe) && fe.Hint != "" {
			hintf(env, "%s", fe.Hint)
		}
		return ExitCantRun
	}
	if asJSON {
		printJSON(env, s.Summary)
	} else if err := s.Write(env.Stdout); err != nil {
		errorf(env, "write summary: %v", err)
		return ExitCantRun
	}
	if !s.Healthy() {
		return ExitFailed
	}
	return ExitOK
}
