package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func uninstallCommand() *Command {
	return &Command{Name: "uninstall", Summary: "remove everything cellguard installed on this VM that nothing uses; list what stays and why", Run: runUninstall}
}

var uninstallHelp = helpText("uninstall")

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
