package cli

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func advisoriesCommand() *Command {
	var component string
	var shippedOnly, asJSON bool
	return &Command{Name: "advisories", Summary: "list the advisories runtime-versions matches (shipped + validator.advisories)",
		Usage: "advisories [--json] [--component NAME] [--shipped-only]", Help: helpText("advisories"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&shippedOnly, "shipped-only", false, "list the shipped advisories alone, ignoring the config's validator.advisories and blocking_advisories")
			fs.StringVar(&component, "component", "", "list only this component's advisories: "+strings.Join(app.Components, ", "))
			fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
		},
		Run: func(_ context.Context, c *call) int {
			if component != "" && !app.KnownComponent(component) {
				c.errorf("--component %q: want one of %s", component, strings.Join(app.Components, ", "))
				return ExitCantRun
			}
			logger, cfg, closer, err := c.setup("advisories")
			if err != nil {
				c.fail(err)
				return ExitCantRun
			}
			defer closer()
			ops, err := cfg.Validator.OperatorAdvisories()
			promoted := cfg.Validator.BlockingAdvisories
			if shippedOnly {
				ops, err, promoted = nil, nil, nil
			}
			var list app.Advisories
			if err == nil {
				list, err = app.ListAdvisories(ops, promoted, component)
			}
			if err != nil {
				c.failed(logger, "load-advisories", err)
				c.hintf("validator.advisories holds OSV records (https://ossf.github.io/osv-schema/); `cellguard config check` names the record and field")
				return ExitCantRun
			}
			if !asJSON {
				list.WriteTable(c.Stdout)
			} else if list.WriteJSON(c.Stdout) != nil {
				return ExitFailed
			}
			return ExitOK
		}}
}
