package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/drain"
)

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
