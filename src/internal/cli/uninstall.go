package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func uninstallCommand() *Command {
	return &Command{Name: "uninstall", Summary: "remove everything cellguard installed on this VM that nothing uses; list what stays and why", Run: runUninstall}
}

const uninstallHelp = `
For operators, over bosh ssh, as root, before the addon leaves the manifest
(once it is gone, BOSH removes the cellguard package and this binary with
it; docs/lifecycle.md). Removes what cellguard installed on this VM and
nothing uses:
  - cellguard-NAME.service units that are inactive with no process left in
    their cgroup (a running one is kept: nothing is ever stopped);
  - the supervisor's Delegate= drop-in when its unit is not running. On a
    running VM it is, and the drop-in is kept: removing it makes systemd move
    the container processes below the unit out of their cgroups (measured,
    docs/lifecycle.md). A recreate finishes it. The drop-ins of
    delegate_units (concourse.service) are kept on the same terms.
    --force-supervisor-drop-in removes them anyway, with that consequence;
  - the persisted sysctl file (live values stay until the next reboot);
  - an older cellguard's start stamps, the Prometheus textfile, a drain lift;
  - cellguard watch's textfile and metric targets, once watch does not run
    (it runs under monit as cellguard-watch: monit stop cellguard-watch
    first, or they are kept);
  - temp files a killed write left beside any of them.
Then it lists what it removed and what it kept, with why. Running it again
removes nothing more and lists the same kept items.

Exit codes: 0 done (kept items included), 1 a removal failed, 2 bad usage
or config.
`

// runUninstall is flags -> app's Uninstall of the inventory -> the list
// and the exit code.
func runUninstall(ctx context.Context, env *Env, args []string) int {
	var c common
	var f daemonFlags
	var force bool
	var promFile, liftFile string
	fs := newFlagSet(env, "uninstall", "uninstall [--force-supervisor-drop-in] [--json]", &c)
	f.registerConn(fs)
	fs.BoolVar(&force, "force-supervisor-drop-in", false, "remove the supervisor's and delegated units' drop-ins although they run (their container processes leave their cgroups)")
	fs.StringVar(&promFile, "prometheus-textfile", "", "the textfile to remove; default the config's validator.prometheus_textfile")
	fs.StringVar(&liftFile, "lift-file", defaultLiftFile, "the drain lift to remove")
	withHelp(env, fs, uninstallHelp)
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	m, cfg, ctx, done, err := f.session(ctx, &c, env, "uninstall")
	if err != nil {
		errorf(env, "%v", err)
		hintf(env, "pass --config of a readable config, or none: uninstall then uses the default paths")
		return ExitCantRun
	}
	defer done()
	u := &app.Uninstaller{M: m, Root: f.root, Now: env.now(), Force: force}
	res, err := u.Uninstall(ctx, inventory(cfg, promFile, liftFile))
	if f.jsonOut {
		printJSON(env, map[string]any{"items": res.Items, "kept": res.Kept, "removed": res.Removed()})
	} else {
		app.WriteItems(env.Stdout, res.Items)
		fmt.Fprintf(env.Stdout, "%d removed, %d kept\n", res.Removed(), res.Kept)
	}
	if err != nil {
		return failure(env, err)
	}
	return ExitOK
}
