//go:build !cellguard_crashtest

package safefile

// CrashHooks is false: this build has no crash hook (see crash_hook.go).
const CrashHooks = false

// CrashEnv is the crash hook's variable; this build does not read it.
const CrashEnv = "CELLGUARD_TEST_CRASH_AFTER"

func crashPoint(step, path string) {}
