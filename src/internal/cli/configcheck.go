package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

// configCommand lets pre-start (and an operator on the VM) prove that the
// rendered job config is one cellguard acts on before anything does; the
// release's template tests run it on every rendered property set. The
// judge is config.Load's, which every subcommand runs.
func configCommand() *Command {
	var root string
	return &Command{Name: "config", Summary: "check a rendered config file", Sub: []*Command{{
		Name: "check", Summary: "parse and validate the config; writes nothing on the host",
		Usage: "config check [--config PATH] [--root /]", Help: helpText("config-check"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&root, "root", "/", "root prefix for the runtime binaries (tests: a fixture tree)")
		},
		Run: func(_ context.Context, c *call) int {
			ok, err := app.CheckConfig(c.configPath, root)
			if err != nil {
				c.fail(err)
				c.hintf("fix the cellguard job's properties (jobs/cellguard/spec, docs/properties.md)")
				return ExitCantRun
			}
			fmt.Fprintln(c.Stdout, ok)
			return ExitOK
		}}}}
}
