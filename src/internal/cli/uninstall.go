package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

// uninstallCommand is flags -> app's Uninstall of the inventory -> the
// list and the exit code.
func uninstallCommand() *Command {
	var f unitFlags
	var force bool
	var promFile, liftFile string
	return &Command{Name: "uninstall", Summary: "remove everything cellguard installed on this VM that nothing uses; list what stays and why",
		Usage: "uninstall [--force-supervisor-drop-in] [--json]", Help: helpText("uninstall"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			f.register(fs)
			fs.BoolVar(&force, "force-supervisor-drop-in", false, "remove the supervisor's and delegated units' drop-ins although they run (their container processes leave their cgroups)")
			fs.StringVar(&promFile, "prometheus-textfile", "", "the textfile to remove; default the config's validator.prometheus_textfile")
			fs.StringVar(&liftFile, "lift-file", defaultLiftFile, "the drain lift to remove")
		},
		Run: func(ctx context.Context, c *call) int {
			m, cfg, ctx, done := f.session(ctx, c, "uninstall", "pass --config of a readable config, or none: uninstall then uses the default paths")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			u := &app.Uninstaller{M: m, Root: f.root, Now: c.now(), Force: force}
			res, err := u.Uninstall(ctx, inventory(cfg, promFile, liftFile))
			c.show(f.asJSON, map[string]any{"items": res.Items, "kept": res.Kept, "removed": res.Removed()}, func(w io.Writer) {
				app.WriteItems(w, res.Items)
				fmt.Fprintf(w, "%d removed, %d kept\n", res.Removed(), res.Kept)
			})
			if err != nil {
				return c.unitFailure(err)
			}
			return ExitOK
		}}
}
