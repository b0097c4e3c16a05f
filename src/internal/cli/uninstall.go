package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
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

// textfileHead starts every textfile validate, drain and watch write.
var textfileHead = []byte("# HELP cellguard_")

// runUninstall removes the inventory (inventory.go) for everything, not
// for the config as pre-start's prune does.
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
	u := &uninstaller{m: m, root: f.root, now: env.now(), force: force}
	items, err := u.run(ctx, inventory(cfg, promFile, liftFile))
	var kept int
	for _, it := range items {
		if it.Action == daemonctl.Kept {
			kept++
		}
	}
	m.Logger.Info("uninstalled", lager.Data{"items": len(items), "kept": kept, "error": fmt.Sprint(err)})
	if f.jsonOut {
		printJSON(env, map[string]any{"items": items, "kept": kept, "removed": len(items) - kept})
	} else {
		printItems(env.Stdout, items)
		fmt.Fprintf(env.Stdout, "%d removed, %d kept\n", len(items)-kept, kept)
	}
	if err != nil {
		return failure(env, err)
	}
	return ExitOK
}

// removeOwnFile removes p under root when it starts with head (a file
// cellguard wrote); another file is kept, and said so.
func removeOwnFile(root, p, kind string, head []byte, why string) (*daemonctl.PruneItem, error) {
	hp := hostroot.Join(root, p)
	b, err := os.ReadFile(hp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if !bytes.HasPrefix(b, head) {
		return &daemonctl.PruneItem{Path: p, Kind: kind, Action: daemonctl.Kept,
			Why: fmt.Sprintf("it does not start with %q, so cellguard did not write it", head)}, nil
	}
	if _, err := safefile.RemoveIfExists(hp); err != nil {
		return nil, err
	}
	return &daemonctl.PruneItem{Path: p, Kind: kind, Action: daemonctl.Removed, Why: why}, nil
}

func appendItem(items []daemonctl.PruneItem, it *daemonctl.PruneItem) []daemonctl.PruneItem {
	if it == nil {
		return items
	}
	return append(items, *it)
}
