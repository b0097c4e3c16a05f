package cli

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

var watchStatusHelp = helpText("watch-status")

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
