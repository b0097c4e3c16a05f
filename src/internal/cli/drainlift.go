package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

var drainLiftHelp = helpText("drain-lift")

func runDrainLift(_ context.Context, env *Env, args []string) int {
	var c common
	var reason, by, liftFile string
	var dur time.Duration
	var show, cancel, jsonOut bool
	fs := newFlagSet(env, "drain lift", "drain lift --reason TEXT [--for DURATION] [--by NAME] | --show | --cancel", &c)
	fs.StringVar(&reason, "reason", "", "why this VM may go despite its findings (required)")
	fs.DurationVar(&dur, "for", app.DefaultLiftFor, fmt.Sprintf("how long the lift holds (at most %v)", app.MaxLiftFor))
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
	now, who := env.now(), app.WhoLifts(by, env.Getenv("SUDO_USER"), env.Getenv("USER"), env.Getenv("LOGNAME"))
	switch {
	case show:
		return showLift(env, liftFile, now, jsonOut)
	case cancel:
		removed, err := app.CancelLift(logger, liftFile, who)
		if err != nil {
			errorf(env, "%v", err)
			return ExitFailed
		}
		if removed {
			fmt.Fprintf(env.Stdout, "lift cancelled: drain blocks again on blocking findings (%s removed)\n", liftFile)
		} else {
			fmt.Fprintf(env.Stdout, "no lift to cancel (%s)\n", liftFile)
		}
		return ExitOK
	}
	l, err := app.Lift(logger, liftFile, now, app.LiftRequest{Reason: reason, By: who, For: dur,
		SudoUser: env.Getenv("SUDO_USER"), SudoUID: env.Getenv("SUDO_UID")})
	var cr *app.CouldNotRun
	switch {
	case errors.As(err, &cr):
		cr.Print(env.Stderr)
		return ExitCantRun
	case err != nil:
		errorf(env, "%v", err)
		hintf(env, "run it as root: sudo /var/vcap/packages/cellguard/bin/cellguard drain lift ...")
		return ExitFailed
	}
	if jsonOut {
		printJSON(env, l)
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "drain block lifted on this VM until %s (%v), by %s: %s\n",
		l.Expires.Format(time.RFC3339), dur, l.By, l.Reason)
	return ExitOK
}

func showLift(env *Env, path string, now time.Time, jsonOut bool) int {
	shown, err := app.ShowLift(path, now)
	switch {
	case err != nil:
		errorf(env, "%v", err)
		hintf(env, "drain ignores this lift; remove it with cellguard drain lift --cancel")
		return ExitFailed
	case jsonOut:
		printJSON(env, shown)
		return ExitOK
	}
	shown.Write(env.Stdout, now)
	return ExitOK
}
