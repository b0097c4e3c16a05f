package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func advisoriesCommand() *Command {
	return &Command{Name: "advisories", Summary: "list the advisories runtime-versions matches (shipped + operator's file)", Run: runAdvisories}
}

var advisoriesHelp = helpText("advisories")

type advisoriesFlags struct {
	common
	root, file, component string
	shippedOnly, asJSON   bool
}

func runAdvisories(_ context.Context, env *Env, args []string) int {
	f := &advisoriesFlags{}
	fs := newFlagSet(env, "advisories", "advisories [--json] [--component NAME] [--advisories-file PATH | --shipped-only]", &f.common)
	fs.StringVar(&f.root, "root", "/", "root prefix the advisories file is read under (tests: a fixture tree)")
	fs.StringVar(&f.file, "advisories-file", "", "operator's advisories file (absolute, under --root); default the config's validator.advisories_file")
	fs.BoolVar(&f.shippedOnly, "shipped-only", false, "list the shipped advisories alone, ignoring any operator file")
	fs.StringVar(&f.component, "component", "", "list only this component's advisories: "+strings.Join(app.Components, ", "))
	fs.BoolVar(&f.asJSON, "json", false, "print JSON instead of a table")
	base := fs.Usage
	fs.Usage = func() {
		base()
		fmt.Fprint(env.Stdout, advisoriesHelp)
	}
	if ok, code := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		errorf(env, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
		return ExitCantRun
	}
	if f.component != "" && !app.KnownComponent(f.component) {
		errorf(env, "--component %q: want one of %s", f.component, strings.Join(app.Components, ", "))
		return ExitCantRun
	}
	if f.shippedOnly && f.file != "" {
		errorf(env, "--shipped-only and --advisories-file exclude each other")
		return ExitCantRun
	}
	logger, cfg, closer, err := f.setup(env, "advisories")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer closer()
	path := f.file
	if path == "" && !f.shippedOnly {
		path = cfg.Validator.AdvisoriesFile
	}
	list, err := app.ListAdvisories(f.root, path, f.component)
	if err != nil {
		f.failed(env, logger, "load-advisories", err)
		hintf(env, "the advisories file must be root-owned, not group- or world-writable, and valid JSON of the shipped file's schema")
		return ExitCantRun
	}
	if f.asJSON {
		if list.WriteJSON(env.Stdout) != nil {
			return ExitFailed
		}
		return ExitOK
	}
	list.WriteTable(env.Stdout)
	return ExitOK
}
