//go:build !cellguard_crashtest

package safefile

// CrashHooks is false: this build has no crash hook (see crash_hook.go).
const CrashHooks = false

// CrashEnv is the crash hook's variable; this build does not read it.
const CrashEnv = "CELLGUARD_TEST_CRASH_AFTER"

func crashPoint(step, path string) {}

// Crash is the crash hook for other code; this build has none.
func Crash(point string) {}
