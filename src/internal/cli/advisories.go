package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func advisoriesCommand() *Command {
	return &Command{Name: "advisories", Summary: "list the advisories runtime-versions matches (shipped + validator.advisories)", Run: runAdvisories}
}

var advisoriesHelp = helpText("advisories")

type advisoriesFlags struct {
	common
	component           string
	shippedOnly, asJSON bool
}

func runAdvisories(_ context.Context, env *Env, args []string) int {
	f := &advisoriesFlags{}
	fs := newFlagSet(env, "advisories", "advisories [--json] [--component NAME] [--shipped-only]", &f.common)
	fs.BoolVar(&f.shippedOnly, "shipped-only", false, "list the shipped advisories alone, ignoring the config's validator.advisories and blocking_advisories")
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
	logger, cfg, closer, err := f.setup(env, "advisories")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer closer()
	ops, err := cfg.Validator.OperatorAdvisories()
	promoted := cfg.Validator.BlockingAdvisories
	if f.shippedOnly {
		ops, err, promoted = nil, nil, nil
	}
	if err == nil {
		var list app.Advisories
		if list, err = app.ListAdvisories(ops, promoted, f.component); err == nil {
			return writeAdvisories(env, list, f.asJSON)
		}
	}
	f.failed(env, logger, "load-advisories", err)
	hintf(env, "validator.advisories holds OSV records (https://ossf.github.io/osv-schema/); `cellguard config check` names the record and field")
	return ExitCantRun
}

func writeAdvisories(env *Env, list app.Advisories, asJSON bool) int {
	if asJSON {
		if list.WriteJSON(env.Stdout) != nil {
			return ExitFailed
		}
		return ExitOK
	}
	list.WriteTable(env.Stdout)
	return ExitOK
}
