package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func liftCommand() *Command {
	var reason, by, liftFile string
	var dur time.Duration
	var show, cancel, asJSON bool
	return &Command{Name: "lift", Usage: "drain lift --reason TEXT [--for DURATION] [--by NAME] | --show | --cancel",
		Help: helpText("drain-lift"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why this VM may go despite its findings (required)")
			fs.DurationVar(&dur, "for", app.DefaultLiftFor, fmt.Sprintf("how long the lift holds (at most %v)", app.MaxLiftFor))
			fs.StringVar(&by, "by", "", "who lifts; default SUDO_USER, else USER")
			fs.BoolVar(&show, "show", false, "print the lift and whether it holds")
			fs.BoolVar(&cancel, "cancel", false, "remove the lift")
			fs.BoolVar(&asJSON, "json", false, "print the lift as JSON")
			fs.StringVar(&liftFile, "lift-file", defaultLiftFile, "the lift file")
		},
		Run: func(_ context.Context, c *call) int {
			if show && cancel || (show || cancel) && reason != "" {
				c.errorf("--show, --cancel and --reason exclude each other")
				return ExitCantRun
			}
			logger, _, closer, err := c.setup("drain-lift")
			if err != nil {
				logger, closer = c.flagLogger("drain-lift")
			}
			defer closer()
			now, who := c.now(), app.WhoLifts(by, c.Getenv("SUDO_USER"), c.Getenv("USER"), c.Getenv("LOGNAME"))
			switch {
			case show:
				shown, err := app.ShowLift(liftFile, now)
				if err != nil {
					c.fail(err)
					c.hintf("drain ignores this lift; remove it with cellguard drain lift --cancel")
					return ExitFailed
				}
				c.show(asJSON, shown, func(w io.Writer) { shown.Write(w, now) })
				return ExitOK
			case cancel:
				removed, err := app.CancelLift(logger, liftFile, who)
				if err != nil {
					c.fail(err)
					return ExitFailed
				}
				fmt.Fprintln(c.Stdout, map[bool]string{true: "lift cancelled: drain blocks again on blocking findings (" + liftFile + " removed)",
					false: "no lift to cancel (" + liftFile + ")"}[removed])
				return ExitOK
			}
			l, err := app.Lift(logger, liftFile, now, app.LiftRequest{Reason: reason, By: who, For: dur,
				SudoUser: c.Getenv("SUDO_USER"), SudoUID: c.Getenv("SUDO_UID")})
			var cr *app.CouldNotRun
			switch {
			case errors.As(err, &cr):
				cr.Print(c.Stderr)
				return ExitCantRun
			case err != nil:
				c.fail(err)
				c.hintf("run it as root: sudo /var/vcap/packages/cellguard/bin/cellguard drain lift ...")
				return ExitFailed
			}
			c.show(asJSON, l, func(w io.Writer) {
				fmt.Fprintf(w, "drain block lifted on this VM until %s (%v), by %s: %s\n", l.Expires.Format(time.RFC3339), dur, l.By, l.Reason)
			})
			return ExitOK
		}}
}
