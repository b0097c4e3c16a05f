package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func unitPruneCommand() *Command {
	var f unitFlags
	return &Command{Name: "prune", Summary: "remove units and drop-ins the config no longer asks for, when nothing uses them",
		Usage: "unit prune [--json]", Help: helpText("unit-prune"), Args: noArgs, Flags: f.register,
		Run: func(ctx context.Context, c *call) int {
			m, cfg, ctx, done := f.session(ctx, c, "unit-prune", "")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			res, err := m.Prune(ctx, cfg, c.now())
			c.show(f.asJSON, res, func(w io.Writer) {
				app.WriteItems(w, res.Items)
				if len(res.Items) == 0 {
					fmt.Fprintln(w, "nothing to remove: the unit directories hold what the config asks for")
				}
			})
			for _, it := range res.Kept() {
				fmt.Fprintf(c.Stderr, "cellguard: warning: kept %s: %s\n", it.Path, it.Why)
			}
			if err != nil {
				return c.unitFailure(err)
			}
			return ExitOK
		}}
}
