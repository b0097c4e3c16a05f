package cli

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func advisoriesCommand() *Command {
	var root, file, component string
	var shippedOnly, asJSON bool
	return &Command{Name: "advisories", Summary: "list the advisories runtime-versions matches (shipped + operator's file)",
		Usage: "advisories [--json] [--component NAME] [--advisories-file PATH | --shipped-only]", Help: helpText("advisories"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&root, "root", "/", "root prefix the advisories file is read under (tests: a fixture tree)")
			fs.StringVar(&file, "advisories-file", "", "operator's advisories file (absolute, under --root); default the config's validator.advisories_file")
			fs.BoolVar(&shippedOnly, "shipped-only", false, "list the shipped advisories alone, ignoring any operator file")
			fs.StringVar(&component, "component", "", "list only this component's advisories: "+strings.Join(app.Components, ", "))
			fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
		},
		Run: func(_ context.Context, c *call) int {
			switch {
			case component != "" && !app.KnownComponent(component):
				c.errorf("--component %q: want one of %s", component, strings.Join(app.Components, ", "))
				return ExitCantRun
			case shippedOnly && file != "":
				c.errorf("--shipped-only and --advisories-file exclude each other")
				return ExitCantRun
			}
			logger, cfg, closer, err := c.setup("advisories")
			if err != nil {
				c.fail(err)
				return ExitCantRun
			}
			defer closer()
			if file == "" && !shippedOnly {
				file = cfg.Validator.AdvisoriesFile
			}
			list, err := app.ListAdvisories(root, file, component)
			if err != nil {
				c.failed(logger, "load-advisories", err)
				c.hintf("the advisories file must be root-owned, not group- or world-writable, and valid JSON of the shipped file's schema")
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
