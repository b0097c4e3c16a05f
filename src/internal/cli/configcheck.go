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

const configCheckHelp = `
Loads the config as every subcommand does, which judges every key and
lists every problem, each by its key, the job property behind it, the
value and what would be accepted:
  - unknown keys and values of the wrong type;
  - every daemon name, command and pidfile, and every other path (monit's
    pidfile, textfiles, advisories file, runtime roots and binaries),
    follows the rules unit install applies: plain names, absolute clean
    paths of letters, digits and _-./:=,+@ (the job template refuses the
    names and paths that reach its scripts at render time too);
  - every check id in validator.ignore and validator.blocking.<phase> names
    a registered check (a typo must not leave a check blocking, or not);
  - every duration written (Go's grammar: "90s", "1m30s") is above zero,
    and drain.budget and validator.budget are from 1s to 1h; one left out
    is the default;
  - sysctl.profile, sysctl.set (values such as ">=N") and sysctl.remove
    resolve to a profile, as sysctl apply would;
  - watch.listen is host:port, and a loopback address unless the watch.tls
    files are set (mutual TLS);
and then, on the host under --root, that every path in
validator.runtime_binaries is an executable file.
Exit: 0 valid, 2 unreadable or invalid (every problem is listed once).
`

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
