package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

const watchStatusHelp = `
Says whether cellguard watch still runs: the pid in --pidfile is alive and
runs cellguard watch, not a process that got the pid since. It is the one
rule for that question: the job's bin/watch_ctl (monit's start and stop)
asks it here, and cellguard uninstall asks the same Go function before it
removes watch's textfile and metric targets.

Stdout: the pid, when watch runs; nothing otherwise (the reason goes to
stderr).

Exit codes: 0 watch runs, 1 it does not, 2 bad usage.
`

// runWatchStatus is `cellguard watch status`.
func runWatchStatus(_ context.Context, env *Env, args []string) int {
	var c common
	var root, pidfile string
	fs := newFlagSet(env, "watch status", "watch status [--pidfile PATH] [--root DIR]", &c)
	fs.StringVar(&pidfile, "pidfile", watchPIDFile, "the pidfile bin/watch_ctl writes")
	fs.StringVar(&root, "root", "/", "root prefix for the pidfile and /proc (tests: a fixture tree)")
	withHelp(env, fs, watchStatusHelp)
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	pid, why := app.WatchRunning(root, pidfile)
	if why != "" {
		fmt.Fprintf(env.Stderr, "cellguard watch does not run: %s\n", why)
		return ExitFailed
	}
	fmt.Fprintln(env.Stdout, pid)
	return ExitOK
}
