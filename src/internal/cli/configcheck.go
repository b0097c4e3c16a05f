package cli

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// configCommand lets pre-start (and an operator on the VM) prove that the
// rendered job config parses before anything acts on it; the release's
// template tests run it on every rendered property set.
func configCommand() *Command {
	return &Command{Name: "config", Summary: "check a rendered config file", Sub: []*Command{
		{Name: "check", Summary: "parse and validate the config; writes nothing on the host", Run: runConfigCheck},
	}}
}

const configCheckHelp = `
Parses the config as every subcommand does (unknown keys are errors) and
checks what would otherwise fail later, at the next drain or apply:
  - every daemon name, command and pidfile, and every other path (monit's
    pidfile, textfiles, advisories file, runtime roots and binaries),
    follows the rules unit install applies: plain names, absolute clean
    paths of letters, digits and _-./:=,+@ (the job template refuses the
    same at render time);
  - every check id in validator.ignore and validator.blocking.<phase> names
    a registered check (a typo must not leave a check blocking, or not);
  - every duration written (Go's grammar: "90s", "1m30s") is above zero,
    and drain.budget is from 1s to 1h; one left out is the default;
  - sysctl.profile, sysctl.set (values such as ">=N") and sysctl.remove
    resolve to a profile, as sysctl apply would;
  - every path in validator.runtime_binaries is an executable under --root.
Exit: 0 valid, 2 unreadable or invalid (every problem is listed).
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
	cfg, err := config.Load(path)
	if err != nil {
		errorf(env, "%v", err)
		hintf(env, "the file is rendered from the cellguard job's properties; see jobs/cellguard/spec")
		return ExitCantRun
	}
	problems := configProblems(cfg, root)
	// The file as written, for what the parsed config cannot tell apart:
	// a duration left out (the default) from one written as zero.
	if raw, err := os.ReadFile(path); err != nil {
		problems = append(problems, fmt.Sprintf("read %s: %v", path, err))
	} else {
		problems = append(problems, durationProblems(raw)...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			errorf(env, "%s: %s", path, p)
		}
		hintf(env, "fix the cellguard job's properties (jobs/cellguard/spec); check ids: %s", strings.Join(app.CheckIDs(), ", "))
		return ExitCantRun
	}
	fmt.Fprintf(env.Stdout, "%s: ok: %d daemons, supervisor protect=%t, sysctl profile %q, %d validator runtime roots\n",
		path, len(cfg.Daemons), cfg.Supervisor.Protect, cfg.Sysctl.Profile, len(cfg.Validator.RuntimeRoots))
	return ExitOK
}

// configProblems finds what config.Validate cannot see: what needs the
// check registry, the sysctl profile or the host's files.
func configProblems(cfg *config.Config, root string) []string {
	var problems []string
	plan := newPlan(cfg, app.Overrides{Root: root})
	// The ignore list once, then each phase's blocking list on its own, so
	// every unknown id is named.
	ignoreOnly := *plan
	ignoreOnly.Blocking = nil
	if _, err := ignoreOnly.Options(validator.PreStart); err != nil {
		problems = append(problems, err.Error())
	}
	blockingOnly := *plan
	blockingOnly.Ignore = nil
	for _, phase := range []validator.Phase{validator.PreStart, validator.Drain} {
		if _, err := blockingOnly.Options(phase); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if _, err := sysctl.Resolve(sysctlSettings(cfg.Sysctl)); err != nil {
		problems = append(problems, err.Error())
	}
	comps := make([]string, 0, len(cfg.Validator.RuntimeBinaries))
	for comp := range cfg.Validator.RuntimeBinaries {
		comps = append(comps, comp)
	}
	sort.Strings(comps)
	// Only the configured paths: no PATH search.
	loc := runtimever.Locator{Root: root, Configured: cfg.Validator.RuntimeBinaries, Path: []string{}}
	for _, comp := range comps {
		if _, missing := loc.Locate(comp); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("validator.runtime_binaries.%s: %s is not an executable file: %v", comp, missing[0].Path, missing[0].Err))
		}
	}
	return problems
}
