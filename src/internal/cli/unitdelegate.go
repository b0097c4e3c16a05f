package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func unitDelegateCommand() *Command {
	var f unitFlags
	return &Command{Name: "delegate", Summary: "delegate other releases' units (e.g. concourse.service) in place",
		Usage: helpText("unit-delegate-usage"), Interspersed: true, Flags: f.register,
		Run: func(ctx context.Context, c *call) int {
			m, cfg, ctx, done := f.session(ctx, c, "unit-delegate", "")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			units := c.args
			if len(units) == 0 {
				units = cfg.DelegateUnits
			}
			if len(units) == 0 {
				fmt.Fprintln(c.Stdout, "no unit to delegate (none given, none in the config's delegate_units)")
				return ExitOK
			}
			var results []any
			for _, name := range units {
				res, err := m.Delegate(ctx, name)
				if err != nil {
					return c.unitFailure(err)
				}
				results = append(results, res)
				if !f.asJSON {
					app.WriteDelegated(c.Stdout, name, res)
				}
			}
			if f.asJSON {
				c.show(true, results, nil)
			}
			return ExitOK
		}}
}
