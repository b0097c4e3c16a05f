package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

var drainTimeoutHelp = helpText("drain-timeout")

func runDrainTimeout(_ context.Context, env *Env, args []string) int {
	var c common
	fs := newFlagSet(env, "drain timeout", "drain timeout [--config PATH]", &c)
	withHelp(env, fs, drainTimeoutHelp)
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	cfg, err := loadConfig(c.configPath)
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	fmt.Fprintln(env.Stdout, drainTimeLimit(app.DrainBudget(0, cfg)))
	return ExitOK
}

// drainTimeLimit is app.DrainTimeLimit: budget and grace, in whole seconds.
func drainTimeLimit(budget time.Duration) int { return app.DrainTimeLimit(budget) }
