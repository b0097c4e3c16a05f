package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// configCommand lets pre-start (and an operator on the VM) prove that the
// rendered job config parses before anything acts on it; the release's
// template tests run it on every rendered property set.
func configCommand() *Command {
	return &Command{Name: "config", Summary: "check a rendered config file", Sub: []*Command{
		{Name: "check", Summary: "parse and validate the config; touches nothing on the host", Run: runConfigCheck},
	}}
}

func runConfigCheck(_ context.Context, env *Env, args []string) int {
	var c common
	fs := newFlagSet(env, "config check", "config check [--config PATH]\n\n"+
		"Parses the config as every subcommand does (unknown keys are errors) and validates it.\n"+
		"Exit: 0 valid, 2 unreadable or invalid.", &c)
	if ok, code := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		errorf(env, "unexpected arguments: %v", fs.Args())
		return ExitCantRun
	}
	path := c.configPath
	if path == "" {
		path = defaultConfigPath
	}
	cfg, err := config.Load(path)
	if err != nil {
		errorf(env, "%v", err)
		hintf(env, "the file is rendered from the cellguard job's properties; see jobs/cellguard/spec")
		return ExitCantRun
	}
	fmt.Fprintf(env.Stdout, "%s: ok: %d daemons, supervisor protect=%t, sysctl profile %q, %d validator runtime roots\n",
		path, len(cfg.Daemons), cfg.Supervisor.Protect, cfg.Sysctl.Profile, len(cfg.Validator.RuntimeRoots))
	return ExitOK
}
