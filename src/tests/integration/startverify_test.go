package integration

import (
	"strings"
	"testing"
)

// TestStartVerifiesBeforeTheJob: every `cellguard start` makes the unit
// current and reads it back as delegated before it starts it (there is no
// shortcut any more: start stamps were dropped, issue 24). On a real
// systemd: an operator's drop-in that turns delegation off (daemon-reloaded,
// so nothing looks stale) fails the start with the fix, before the unit
// runs; a unit file changed behind cellguard's back (a crash between write
// and Reload looks the same) is rewritten by the next start.
func TestStartVerifiesBeforeTheJob(t *testing.T) {
	box := bootBox(t, "startverify")
	cellguard := box.InstallCellguard(t)
	ctl, pidfile := installFakeGarden(t, box, "sv")
	const unitName = "cellguard-sv.service"
	args := func(verb string) []string {
		return []string{cellguard, verb, "sv", "--start", ctl + " start", "--stop", ctl + " stop",
			"--pidfile", pidfile, "--start-timeout", "20s", "--stop-timeout", "20s"}
	}
	start := func(t *testing.T, wantCode int) cellguardRun {
		t.Helper()
		r := runCellguard(t, box, args("start")...)
		if r.code != wantCode {
			t.Fatalf("start: exit %d, want %d\nstdout: %s\nstderr: %s", r.code, wantCode, r.stdout, r.stderr)
		}
		return r
	}
	stop := func(t *testing.T) {
		t.Helper()
		if r := runCellguard(t, box, args("stop")...); r.code != 0 {
			t.Fatalf("stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	t.Cleanup(func() { _, _ = box.Output("sh", "-c", ctl+" stop") })

	start(t, 0)
	stop(t)

	// An operator's drop-in turns delegation off, and systemd is reloaded:
	// NeedDaemonReload is false and the unit file is unchanged.
	writeFile(t, box, "/etc/systemd/system/"+unitName+".d/90-operator.conf", "[Service]\nDelegate=no\n", 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	wantFailure(t, start(t, 1), "remove Delegate= from /etc/systemd/system/"+unitName+".d/90-operator.conf")
	if out, _ := box.Output("systemctl", "show", "-p", "ActiveState", "--value", unitName); strings.TrimSpace(out) == "active" {
		t.Fatal("the start started an undelegated unit")
	}

	// Back to a delegated unit, then change its file behind cellguard's
	// back without a Reload.
	box.Run(t, "rm", "-r", "/etc/systemd/system/"+unitName+".d")
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "sh", "-c", "echo '# edited' >> /etc/systemd/system/"+unitName)
	start(t, 0)
	if out := box.Run(t, "cat", "/etc/systemd/system/"+unitName); strings.Contains(out, "# edited") {
		t.Fatal("the start did not rewrite the edited unit file")
	}
	if out, _ := box.Output("systemctl", "show", "-p", "NeedDaemonReload", "--value", unitName); strings.TrimSpace(out) != "no" {
		t.Fatalf("NeedDaemonReload=%s after the start rewrote the file", strings.TrimSpace(out))
	}
	stop(t)
}
