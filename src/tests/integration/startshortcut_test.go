package integration

import (
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
)

// TestStartShortcutStillVerifies: `cellguard start` skips reading the unit
// from systemd before the job only when an earlier run of this boot read
// that exact unit file back as delegated (daemonctl's stamp), and then reads
// it back after the job. On a real systemd: the first start verifies before
// and stamps; the second takes the shortcut; an operator's drop-in that
// turns delegation off (daemon-reloaded, so nothing looks stale) fails the
// shortcut's read-back with the fix and drops the stamp, and the next start
// refuses before starting; a unit file changed behind cellguard's back
// (a crash between write and Reload looks the same) never takes it.
func TestStartShortcutStillVerifies(t *testing.T) {
	box := bootBox(t, "shortcut")
	cellguard := box.InstallCellguard(t)
	ctl, pidfile := installFakeGarden(t, box, "sc")
	const (
		unitName = "cellguard-sc.service"
		logFile  = "/var/log/cellguard-sc.log"
	)
	stamp := daemonctl.StampDir + "/" + unitName
	args := func(verb string) []string {
		return []string{cellguard, verb, "sc", "--start", ctl + " start", "--stop", ctl + " stop",
			"--pidfile", pidfile, "--log-file", logFile, "--start-timeout", "20s", "--stop-timeout", "20s"}
	}
	// start runs `cellguard start` and says whether it took the shortcut.
	start := func(t *testing.T, wantCode int) (cellguardRun, bool) {
		t.Helper()
		_, _ = box.Output("truncate", "-s", "0", logFile)
		r := runCellguard(t, box, args("start")...)
		if r.code != wantCode {
			t.Fatalf("start: exit %d, want %d\nstdout: %s\nstderr: %s", r.code, wantCode, r.stdout, r.stderr)
		}
		log, _ := box.Output("cat", logFile)
		return r, strings.Contains(log, "unit-verified-earlier-this-boot")
	}
	stop := func(t *testing.T) {
		t.Helper()
		if r := runCellguard(t, box, args("stop")...); r.code != 0 {
			t.Fatalf("stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	t.Cleanup(func() { _, _ = box.Output("sh", "-c", ctl+" stop") })

	if _, short := start(t, 0); short {
		t.Fatal("the first start took the shortcut: nothing had verified the unit yet")
	}
	if _, err := box.ReadFile(stamp); err != nil {
		t.Fatalf("no stamp after a verified install: %v", err)
	}
	stop(t)
	if _, short := start(t, 0); !short {
		t.Fatal("the second start did not take the shortcut")
	}
	stop(t)

	// An operator's drop-in turns delegation off, and systemd is reloaded:
	// NeedDaemonReload is false and the unit file is unchanged.
	writeFile(t, box, "/etc/systemd/system/"+unitName+".d/90-operator.conf", "[Service]\nDelegate=no\n", 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	r, short := start(t, 1)
	if !short {
		t.Fatal("expected the shortcut (the unit file is unchanged), so that its read-back is what is tested")
	}
	wantFailure(t, r, "verified earlier this boot", "Delegate=false", "cellguard unit install sc")
	if _, err := box.ReadFile(stamp); err == nil {
		t.Fatal("the stamp survived a failed read-back")
	}
	stop(t)
	r, short = start(t, 1)
	if short {
		t.Fatal("took the shortcut again after its read-back failed")
	}
	wantFailure(t, r, "the unit is not protected")
	if out, _ := box.Output("systemctl", "show", "-p", "ActiveState", "--value", unitName); strings.TrimSpace(out) == "active" {
		t.Fatal("the verify-first start started the unit anyway")
	}

	// Back to a verified unit, then change its file behind cellguard's back
	// without a Reload.
	box.Run(t, "rm", "-r", "/etc/systemd/system/"+unitName+".d")
	box.Run(t, "systemctl", "daemon-reload")
	if _, short := start(t, 0); short {
		t.Fatal("took the shortcut without a stamp")
	}
	stop(t)
	box.Run(t, "sh", "-c", "echo '# edited' >> /etc/systemd/system/"+unitName)
	if _, short := start(t, 0); short {
		t.Fatal("took the shortcut for a unit file that differs from what cellguard writes")
	}
	if out := box.Run(t, "cat", "/etc/systemd/system/"+unitName); strings.Contains(out, "# edited") {
		t.Fatal("the start did not rewrite the edited unit file")
	}
	stop(t)
}
