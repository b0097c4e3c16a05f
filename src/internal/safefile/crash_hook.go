//go:build cellguard_crashtest

package safefile

import (
	"os"
	"runtime/debug"
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

// Crash is the hook for the crash paths outside WriteFileAtomic: when
// CrashEnv is point ":" how, the process dies here as how says. "panic":
// an unrecovered panic in a new goroutine (no recover of the caller's can
// catch it); "fatal": a Go runtime fatal error (a stack overflow, which
// nothing recovers); "kill": SIGKILL. Each but "kill" exits 2, as a Go
// crash does.
func Crash(point string) {
	want, how, _ := strings.Cut(os.Getenv(CrashEnv), ":")
	if want != point {
		return
	}
	switch how {
	case "panic":
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("cellguard crash hook: panic in a goroutine at " + point)
		}()
		<-done
	case "fatal":
		debug.SetMaxStack(1 << 16)
		overflow(0)
	case "kill":
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
	}
	select {} // never return into the code after the crash point
}

func overflow(n int) int { return overflow(n+1) + 1 }
