package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

const drainTimeoutHelp = `
For the job's bin/drain: prints, in whole seconds, how long it lets
cellguard drain run before ending it: the drain's budget (the config's
drain.budget, else 60s) and then a quarter of it, 2s to 15s, to report the
checks that finished and write its files. The budget's grammar and range
are Go's (config check refuses a budget outside 1s to 1h), so the job's
templates hold no copy of them.

Exit codes: 0 printed, 2 the config could not be read (bin/drain then
uses the default budget's limit).
`

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
