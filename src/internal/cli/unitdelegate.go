package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func runUnitDelegate(ctx context.Context, env *Env, args []string) int {
	var c common
	var f daemonFlags
	fs := newFlagSet(env, "unit delegate", helpText("unit-delegate-usage"), &c)
	f.registerConn(fs)
	if ok, code := parseInterspersed(fs, args); !ok {
		return code
	}
	m, cfg, done, err := f.manager(&c, env, "unit-delegate")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer done()
	units := fs.Args()
	if len(units) == 0 {
		units = cfg.DelegateUnits
	}
	if len(units) == 0 {
		fmt.Fprintln(env.Stdout, "no unit to delegate (none given, none in the config's delegate_units)")
		return ExitOK
	}
	ctx, cancel := f.withDeadline(ctx, 0)
	defer cancel()
	var results []any
	for _, name := range units {
		res, err := m.Delegate(ctx, name)
		if err != nil {
			return failure(env, err)
		}
		results = append(results, res)
		if f.jsonOut {
			continue
		}
		app.WriteDelegated(env.Stdout, name, res)
	}
	if f.jsonOut {
		printJSON(env, results)
	}
	return ExitOK
}
