package daemonctl

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
)

// TestFallbackWithoutSystemd: where systemd is not init (bosh-lite, warden
// containers, this CI host), start and stop run the ctl commands directly,
// say so in the log, and still wait for the pidfile's process.
func TestFallbackWithoutSystemd(t *testing.T) {
	if systemd.Booted("/") {
		t.Skip("systemd is init on this host: the fallback path cannot be exercised here")
	}
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "daemon.pid")
	ctl := filepath.Join(dir, "ctl")
	script := "#!/bin/sh\ncase $1 in\n" +
		"start) echo $$ > " + pidfile + "; exec sleep 300 ;;\n" +
		"stop) kill $(cat " + pidfile + ") ;;\nesac\n"
	if err := os.WriteFile(ctl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	logger := lagertest.NewTestLogger("fallback")
	m := &Manager{Logger: logger, Root: "/"}
	d := Daemon{Name: "fallback", Start: []string{ctl, "start"}, Stop: []string{ctl, "stop"}, PIDFile: pidfile,
		StartTimeout: 10 * time.Second, StopTimeout: 10 * time.Second}
	ctx := context.Background()

	inst, err := m.Install(ctx, d)
	if err != nil || !inst.NoSystemd || inst.Written {
		t.Fatalf("install without systemd: %+v %v, want nothing installed", inst, err)
	}
	st, err := m.Start(ctx, d)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(st.PID, syscall.SIGKILL) }) // only the pid we started
	if !st.Direct || st.PID == 0 || !m.alive(st.PID) {
		t.Fatalf("start result %+v: want a direct start with a live pid", st)
	}
	sp, err := m.Stop(ctx, d)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !sp.Direct || sp.PID != st.PID || m.alive(st.PID) {
		t.Fatalf("stop result %+v: pid %d alive=%v", sp, st.PID, m.alive(st.PID))
	}
	if len(logger.LogMessages()) == 0 || !slices.Contains(logger.LogMessages(), "fallback.starting-directly-without-systemd") {
		t.Fatalf("the direct start was not logged: %v", logger.LogMessages())
	}
}
