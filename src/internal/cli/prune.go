package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

var unitPruneHelp = helpText("unit-prune")

func runUnitPrune(ctx context.Context, env *Env, args []string) int {
	var c common
	var f daemonFlags
	fs := newFlagSet(env, "unit prune", "unit prune [--json]", &c)
	f.registerConn(fs)
	withHelp(env, fs, unitPruneHelp)
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	m, cfg, ctx, done, err := f.session(ctx, &c, env, "unit-prune")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer done()
	res, err := m.Prune(ctx, cfg, env.now())
	if f.jsonOut {
		printJSON(env, res)
	} else {
		app.WriteItems(env.Stdout, res.Items)
		if len(res.Items) == 0 {
			fmt.Fprintln(env.Stdout, "nothing to remove: the unit directories hold what the config asks for")
		}
	}
	for _, it := range res.Kept() {
		fmt.Fprintf(env.Stderr, "cellguard: warning: kept %s: %s\n", it.Path, it.Why)
	}
	if err != nil {
		return failure(env, err)
	}
	return ExitOK
}
