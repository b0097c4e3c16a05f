package cli

import (
	"context"
	"io"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

// startStopCommand is `cellguard start` or `cellguard stop` (verb), what
// monit's start and stop programs call.
func startStopCommand(verb, summary string) *Command {
	var f daemonFlags
	start := verb == "start"
	return &Command{Name: verb, Summary: summary, Usage: helpText(verb + "-usage"), Args: oneName, Interspersed: true, Flags: f.register,
		Run: func(parent context.Context, c *call) int {
			name := c.args[0]
			m, cfg, _, done := f.session(parent, c, verb, "")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			d, err := f.daemon(cfg, name)
			if err != nil {
				return c.unitFailure(err)
			}
			ctx, cancel := f.within(parent, app.Wait(d, start))
			defer cancel()
			if start {
				res, err := m.Start(ctx, d)
				return c.unitResult(err, f.asJSON, res, func(w io.Writer) { app.WriteStarted(w, name, res) })
			}
			res, err := m.Stop(ctx, d)
			return c.unitResult(err, f.asJSON, res, func(w io.Writer) { app.WriteStopped(w, name, res) })
		}}
}
