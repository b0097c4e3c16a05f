package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
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
	pid, why := watchRunning(root, pidfile)
	if why != "" {
		fmt.Fprintf(env.Stderr, "cellguard watch does not run: %s\n", why)
		return ExitFailed
	}
	fmt.Fprintln(env.Stdout, pid)
	return ExitOK
}

// watchRunning returns the pid in pidfile (under root) when that process
// runs cellguard watch; otherwise why it does not ("" when it does).
func watchRunning(root, pidfile string) (int, string) {
	b, err := os.ReadFile(hostroot.Join(root, pidfile))
	if err != nil {
		return 0, fmt.Sprintf("no pidfile: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Sprintf("%s holds %q, not a pid", pidfile, strings.TrimSpace(string(b)))
	}
	cmd, err := os.ReadFile(hostroot.Join(root, filepath.Join("/proc", strconv.Itoa(pid), "cmdline")))
	if err != nil || len(cmd) == 0 {
		return 0, fmt.Sprintf("pid %d from %s is gone", pid, pidfile)
	}
	argv := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	if !runsCellguardWatch(argv) {
		return 0, fmt.Sprintf("pid %d from %s runs %q, not cellguard watch", pid, pidfile, strings.Join(argv, " "))
	}
	return pid, ""
}

// runsCellguardWatch: argv is the cellguard binary running watch, as
// watch_ctl starts it ([.../cellguard watch ...]), possibly still behind
// the launchers that start it: setsid (watch_ctl's, for the moment before
// it execs cellguard), or env and an interpreter (a script in the binary's
// place: #!/usr/bin/env bash). A zombie's empty argv, another program
// given the pid since, and this very question (watch status) are not
// watch.
func runsCellguardWatch(argv []string) bool {
	for len(argv) > 0 && launchers[filepath.Base(argv[0])] {
		argv = argv[1:]
	}
	return len(argv) >= 2 && filepath.Base(argv[0]) == "cellguard" && argv[1] == "watch" &&
		(len(argv) == 2 || argv[2] != "status")
}

// launchers run the next word of their argv: they stand before cellguard
// watch while it starts.
var launchers = map[string]bool{"setsid": true, "env": true, "bash": true, "sh": true}
