//go:build cellguard_crashtest

package safefile

import (
	"os"
	"strings"
)

// CrashHooks reports whether this build has the crash hook: only builds
// with -tags cellguard_crashtest (the tests') do; a release build never
// sets the tag, so no environment variable can make it kill itself.
const CrashHooks = true

// CrashEnv names the test hook read by WriteFileAtomic: set to a step name
// ("create", "write", "chmod", "fsync", "close", "rename", "fsync-dir"),
// optionally followed by ":" and a substring of the target path, it makes
// the process SIGKILL itself right after that step. Crash-consistency tests
// (safefile, cli, integration) run cellguard in a child process with it
// set, to prove a crash at any step leaves the old or the new file and the
// next run converges.
const CrashEnv = "CELLGUARD_TEST_CRASH_AFTER"

// crashPoint kills the process when CrashEnv names step (and path).
func crashPoint(step, path string) {
	v := os.Getenv(CrashEnv)
	if v == "" {
		return
	}
	want, sub, _ := strings.Cut(v, ":")
	if want == step && strings.Contains(path, sub) {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
			select {} // SIGKILL is not deliverable late; never return into the next step
		}
	}
}
