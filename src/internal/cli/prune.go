package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

const unitPruneHelp = `
Pre-start's convergence step. Removes what cellguard wrote for systemd and
the config no longer asks for, when nothing uses it, and reloads systemd
once:
  - cellguard-NAME.service of a daemon no longer in daemons, once the unit
    is inactive with no process left in its cgroup; a running one is kept,
    with how to finish (stop it through its job, then pre-start again);
  - the supervisor's drop-in when supervisor.protect is false, once the
    unit holding monit is not running. On a running VM it always is, and
    the drop-in is kept: removing it from a running unit makes systemd move
    the container processes below it (docs/lifecycle.md, measured). A
    recreate finishes it;
  - the drop-in of a unit no longer in delegate_units (concourse.service),
    on the same terms: kept while the unit runs;
  - temp files a killed write left (.NAME.tmp-N) in the unit directories.
Nothing is ever stopped, killed or moved. Kept items are warnings, not
failures.

Exit codes: 0 done (kept items included), 1 a removal or systemd failed,
2 bad usage or config.
`

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
