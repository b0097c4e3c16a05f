package cli

import (
	"strings"
	"testing"
)

// An operator pipes help into a pager: it must be on stdout, exit 0, and
// spell flags the way the docs do (--config, not -config).
func TestHelpGoesToStdoutWithDoubleDashFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"validate", "--help"}, {"sysctl", "check", "--help"},
		{"drain", "--help"}, {"unit", "install", "--help"}, {"watch", "-h"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != ExitOK {
			t.Errorf("%v: exit %d, want 0", args, code)
		}
		if !strings.Contains(out, "usage: cellguard") || errs != "" {
			t.Errorf("%v: usage not on stdout alone: stdout %q, stderr %q", args, out, errs)
		}
		if len(args) > 1 && (!strings.Contains(out, "  --config") || strings.Contains(out, "  -config")) {
			t.Errorf("%v: flags not spelled --flag:\n%s", args, out)
		}
	}
}

// A typo gets one error line and one hint, not the whole flag list.
func TestUnknownFlagIsOneLineAndAHint(t *testing.T) {
	code, out, errs := runCLI(t, "validate", "--phsae", "drain")
	if code != ExitCantRun || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "phsae") || !strings.HasPrefix(lines[0], "cellguard: error: ") ||
		!strings.Contains(lines[1], "cellguard validate --help") {
		t.Errorf("want an error line naming the flag and a hint naming --help, got:\n%s", errs)
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errs := runCLI(t, args...)
		if code != ExitOK || strings.TrimSpace(out) != Version || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// No command at all is bad usage: the usage goes to stderr and exit is 2.
func TestNoCommandIsBadUsage(t *testing.T) {
	code, out, errs := runCLI(t)
	if code != ExitCantRun || out != "" || !strings.Contains(errs, "usage: cellguard") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
