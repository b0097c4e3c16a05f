package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// configCommand lets pre-start (and an operator on the VM) prove that the
// rendered job config is one cellguard acts on before anything does; the
// release's template tests run it on every rendered property set. The
// judge is config.Load's, which every subcommand runs.
func configCommand() *Command {
	return &Command{Name: "config", Summary: "check a rendered config file", Sub: []*Command{
		{Name: "check", Summary: "parse and validate the config; writes nothing on the host", Run: runConfigCheck},
	}}
}

var configCheckHelp = helpText("config-check")

func runConfigCheck(_ context.Context, env *Env, args []string) int {
	var c common
	var root string
	fs := newFlagSet(env, "config check", "config check [--config PATH] [--root /]", &c)
	fs.StringVar(&root, "root", "/", "root prefix for the runtime binaries (tests: a fixture tree)")
	withHelp(env, fs, configCheckHelp)
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	path := c.configPath
	if path == "" {
		path = defaultConfigPath
	}
	cfg, err := config.Load(path, checkIDs())
	if err == nil {
		err = cfg.CheckHost(path, root)
	}
	if err != nil {
		errorf(env, "%v", err)
		hintf(env, "fix the cellguard job's properties (jobs/cellguard/spec, docs/properties.md)")
		return ExitCantRun
	}
	fmt.Fprintf(env.Stdout, "%s: ok: %d daemons, supervisor protect=%t, sysctl profile %q, %d validator runtime roots\n",
		path, len(cfg.Daemons), cfg.Supervisor.Protect, cfg.Sysctl.Profile, len(cfg.Validator.RuntimeRoots))
	return ExitOK
}

// checkIDs are the validator's check ids, which the config's
// validator.ignore and validator.blocking lists may name.
func checkIDs() []string { return app.CheckIDs() }
