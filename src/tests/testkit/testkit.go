// Package testkit holds what tests share, and nothing the product ships
// (packages/cellguard/spec excludes testkit/**; spec/release proves it on
// the built tarball). This package: the rules for tests that need more
// than a temporary directory, and golden files (Golden). Its subpackages:
// sdbox boots a real systemd in systemd-nspawn, fakehost builds fake host
// trees (/proc, cgroups, runc state, /proc/sys) from a few processes up to
// cell scale, escapes makes seed-000 escapes in a box and boxwatch runs
// `cellguard watch` there, hungsock is a socket that never answers,
// fuzzseed and benchcycle serve fuzz and benchmark code, and qemuvm boots
// a noble VM in QEMU (Ubuntu's own kernel, cgroup v2).
package testkit

import (
	"os"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// CrashTag is the build tag that compiles safefile's crash hook in; make
// test sets it, a release build never does.
const CrashTag = "cellguard_crashtest"

// RequireCrashHooks is Unavailable unless this test binary was built with
// CrashTag: the crash tests kill a copy of it at each step of a write.
func RequireCrashHooks(t testing.TB) {
	t.Helper()
	if !safefile.CrashHooks {
		Unavailable(t, "built without -tags "+CrashTag+" (make test sets it), so no crash hook")
	}
}

// SkipEnv, when "1", skips every test that needs root, a box or the real
// kernel: pure tests only (`make unittest`). It is an explicit choice and
// skips even in CI.
const SkipEnv = "CELLGUARD_SKIP_INTEGRATION"

// InCI reports whether the tests run in CI (CI=true), where a test that
// cannot run must fail: a misconfigured CI must not pass by skipping.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends a test that cannot run here for why: loudly skipped on
// a developer's machine, failed in CI.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("NOT RUN: %s [CI=true: failing instead of skipping]", why)
	}
	t.Skipf("!!! NOT RUN: %s !!!", why)
}

// SkipIntegration skips the test when SkipEnv is set.
func SkipIntegration(t testing.TB) {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("!!! NOT RUN: %s=1 (pure tests only) !!!", SkipEnv)
	}
}

// RequireRoot is SkipIntegration, then Unavailable unless the test runs as
// root; why says what needs root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	SkipIntegration(t)
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root: "+why+"; run `sudo make test`")
	}
}

// RequireFile is Unavailable unless path exists (a Debian package the
// test runs against, e.g. /usr/sbin/runc).
func RequireFile(t testing.TB, path, install string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Unavailable(t, path+" not installed ("+err.Error()+"); "+install)
	}
}

// Tail is the last n lines of s, for a log excerpt in a failure or a
// story.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
