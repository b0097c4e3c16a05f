package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, args)
	return code, out.String(), errb.String()
}

func TestUnitInstallRefusesBadInput(t *testing.T) {
	root := t.TempDir()
	ctl := filepath.Join(root, "ctl")
	testkit.WriteExec(t, ctl, "#!/bin/sh\n")
	for name, args := range map[string][]string{
		"injected start":  {"unit", "install", "garden", "--root", root, "--dbus-address", "unix:path=/nonexistent", "--start", "/ctl start\nExecStartPre=/bin/rm"},
		"specifier":       {"unit", "install", "garden", "--root", root, "--dbus-address", "unix:path=/nonexistent", "--start", "/ctl %n"},
		"bad name":        {"unit", "install", "gar/den", "--root", root, "--dbus-address", "unix:path=/nonexistent", "--start", "/ctl start"},
		"missing start":   {"unit", "install", "garden", "--root", root, "--dbus-address", "unix:path=/nonexistent"},
		"relative ctl":    {"unit", "install", "garden", "--root", root, "--dbus-address", "unix:path=/nonexistent", "--start", "ctl start"},
		"no such ctl":     {"unit", "install", "garden", "--root", root, "--dbus-address", "unix:path=/nonexistent", "--start", "/nope start"},
		"two names":       {"unit", "install", "a", "b", "--start", "/ctl"},
		"forking, no pid": {"unit", "install", "garden", "--root", root, "--dbus-address", "unix:path=/nonexistent", "--start", "/ctl start", "--type", "forking"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(t, args...)
			if code != ExitCantRun {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, ExitCantRun, out, errs)
			}
			if !strings.Contains(errs, "cellguard: error:") {
				t.Fatalf("no error line on stderr: %q", errs)
			}
			if out != "" {
				t.Fatalf("stdout must stay empty on error, got %q", out)
			}
			if m, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/*")); len(m) != 0 {
				t.Fatalf("bad input wrote %v", m)
			}
		})
	}
}

func TestUnitInstallUnreachableSystemdNamesTheFix(t *testing.T) {
	root := t.TempDir()
	testkit.WriteExec(t, filepath.Join(root, "ctl"), "#!/bin/sh\n")
	code, _, errs := runCLI(t, "unit", "install", "garden", "--root", root, "--dbus-address", "unix:path="+filepath.Join(root, "missing.sock"), "--start", "/ctl start")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailed, errs)
	}
	if !strings.Contains(errs, "connect to systemd") || !strings.Contains(errs, "cellguard: hint:") {
		t.Fatalf("error does not say what failed and what to check: %s", errs)
	}
}

func TestHelpOnEverySubcommand(t *testing.T) {
	for _, args := range [][]string{
		{"unit", "install", "--help"}, {"unit", "status", "--help"}, {"unit", "protect-supervisor", "--help"},
		{"start", "--help"}, {"stop", "--help"}, {"version", "--help"}, {"--help"}, {"unit", "--help"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != ExitOK || !strings.Contains(out, "usage: cellguard") || errs != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, _, _ := runCLI(t, "no-such-command"); code != ExitCantRun {
		t.Errorf("unknown command: exit %d", code)
	}
}

// A daemon nobody gave a start command is bad usage, said once, before
// anything is written: unit install always, start and stop where systemd
// is not init (a root without /run/systemd/system).
func TestNoStartCommandIsBadUsage(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		args       []string
		want, hint string
	}{
		{[]string{"unit", "install", "garden", "--root", root}, `no start command for "garden"`, ""},
		{[]string{"start", "garden", "--root", root}, `systemd is not init here and no start command is known for "garden"`, `pass --config with a daemons entry for "garden"`},
		{[]string{"stop", "garden", "--root", root}, `systemd is not init here and no start command is known for "garden"`, `pass --config with a daemons entry for "garden"`},
	} {
		code, out, errs := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != ExitCantRun || out != "" || !strings.HasPrefix(lines[0], "cellguard: error: "+tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", tc.args, code, out, errs)
		}
		if hint := tc.hint != ""; hint != (len(lines) == 2) || hint && !strings.HasPrefix(lines[1], "cellguard: hint: "+tc.hint) {
			t.Errorf("%q: want hint %q, stderr:\n%s", tc.args, tc.hint, errs)
		}
	}
}
