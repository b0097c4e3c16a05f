package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
)

// WatchRunning returns the pid in pidfile (under root) when that process
// runs cellguard watch; otherwise why it does not ("" when it does). It is
// the one rule for "does watch still run": cellguard watch status (which
// bin/watch_ctl asks) and uninstall ask it.
func WatchRunning(root, pidfile string) (int, string) {
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
