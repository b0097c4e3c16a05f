package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/cli"
	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// cellguard runs the built cellguard binary on the host (it reaches the box
// through --root and --dbus-address), so safefile.CrashEnv can SIGKILL it
// without killing the test; killed reports death by SIGKILL (then code is -1).
func cellguard(t *testing.T, extraEnv []string, args ...string) (code int, killed bool, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sdbox.BuildCellguardWithCrashHooks(t), args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, false, out.String(), errb.String()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() == syscall.SIGKILL {
				return -1, true, out.String(), errb.String()
			}
			t.Fatalf("cellguard %v died of %v\n%s\n%s", args, ws.Signal(), out.String(), errb.String())
		}
		return ee.ExitCode(), false, out.String(), errb.String()
	}
	t.Fatalf("cellguard %v: %v\n%s\n%s", args, err, out.String(), errb.String())
	return 0, false, "", ""
}

func emptyConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cellguard.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// installArgs is `cellguard unit install garden` against the box, with stop
// as the (changeable) stop command.
func installArgs(t *testing.T, box boxLike, ctl, stop string) []string {
	return []string{"unit", "install", "garden", "--start", ctl + " start", "--stop", stop, "--json",
		"--root", box.root(), "--dbus-address", box.bus(), "--config", emptyConfig(t)}
}

type boxLike interface {
	root() string
	bus() string
}

type boxRef struct{ r, b string }

func (b boxRef) root() string { return b.r }
func (b boxRef) bus() string  { return b.b }

func installResult(t *testing.T, stdout string) daemonctl.InstallResult {
	t.Helper()
	var res daemonctl.InstallResult
	if i := strings.Index(stdout, "helper-exit="); i >= 0 {
		stdout = stdout[:i]
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("install --json output: %v\n%s", err, stdout)
	}
	return res
}

// TestCrashBeforeReloadConverges: `cellguard unit install` is SIGKILLed
// after each step of replacing the unit file, the last one (fsync-dir)
// being the worst case: the new file is on disk and systemd was never
// told. The unit file is the old or the new one, systemd still runs the old
// definition, and the next install converges: it Reloads, even when the
// file needs no rewrite, because systemd reports NeedDaemonReload.
//
// The daemon runs throughout: systemd drops an inactive, unreferenced unit
// from memory and loads the file afresh on the next query, so only a loaded
// unit can hold a stale definition.
func TestCrashBeforeReloadConverges(t *testing.T) {
	box := bootBox(t, "crash")
	ctl, pidfile := installFakeGarden(t, box, "garden")
	ref := boxRef{box.Root, box.SystemBusAddress}
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger("crash"), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}
	unitPath := filepath.Join(box.Root, "/etc/systemd/system/cellguard-garden.service")

	code, _, out, errOut := cellguard(t, nil, installArgs(t, ref, ctl, ctl+" stop")...)
	if code != cli.ExitOK {
		t.Fatalf("first install: exit %d\n%s\n%s", code, out, errOut)
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if _, err := m.Start(sctx, daemonctl.Daemon{Name: "garden", Start: []string{ctl, "start"}, Stop: []string{ctl, "stop"},
		PIDFile: pidfile, StartTimeout: 20 * time.Second}); err != nil {
		t.Fatalf("start: %v", err)
	}
	for i, step := range []string{"create", "write", "chmod", "fsync", "close", "rename", "fsync-dir"} {
		t.Run(step, func(t *testing.T) {
			old, err := os.ReadFile(unitPath)
			if err != nil {
				t.Fatal(err)
			}
			stop := fmt.Sprintf("%s stop --try=%d", ctl, i) // a new unit text each round
			_, killed, out, errOut := cellguard(t, []string{safefile.CrashEnv + "=" + step + ":cellguard-garden.service"},
				installArgs(t, ref, ctl, stop)...)
			if !killed {
				t.Fatalf("install was not killed after %s\n%s\n%s", step, out, errOut)
			}
			now, err := os.ReadFile(unitPath)
			if err != nil {
				t.Fatal(err)
			}
			renamed := step == "rename" || step == "fsync-dir"
			newText := bytes.Contains(now, []byte("ExecStop="+stop+"\n"))
			switch {
			case renamed && !newText:
				t.Fatalf("crash after %s: the unit file is not the new one:\n%s", step, now)
			case !renamed && !bytes.Equal(now, old):
				t.Fatalf("crash after %s: the unit file is not the old one:\n%s", step, now)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			u, err := m.Status(ctx, "cellguard-garden.service")
			if err != nil {
				t.Fatal(err)
			}
			if u.NeedDaemonReload != renamed {
				t.Fatalf("crash after %s: NeedDaemonReload=%v\n%s\n%s", step, u.NeedDaemonReload,
					box.Run(t, "systemctl", "show", "-p", "NeedDaemonReload,FragmentPath,ExecStop", "cellguard-garden.service"),
					box.Run(t, "stat", "/etc/systemd/system/cellguard-garden.service"))
			}

			code, _, out, errOut = cellguard(t, nil, installArgs(t, ref, ctl, stop)...)
			if code != cli.ExitOK {
				t.Fatalf("install after the crash: exit %d\n%s\n%s", code, out, errOut)
			}
			res := installResult(t, out)
			if !res.Reloaded || res.Written == renamed {
				t.Fatalf("install after a crash at %s: written=%v reloaded=%v, want written=%v and a reload", step, res.Written, res.Reloaded, !renamed)
			}
			if u, err = m.Status(ctx, "cellguard-garden.service"); err != nil || u.NeedDaemonReload || u.LoadState != "loaded" {
				t.Fatalf("after convergence: %+v %v", u, err)
			}
			// systemd now runs what the file says.
			if out := box.Run(t, "systemctl", "show", "-p", "ExecStop", "cellguard-garden.service"); !strings.Contains(out, "--try="+strconv.Itoa(i)) {
				t.Fatalf("systemd's ExecStop is not the new one: %s", out)
			}
		})
	}
}

// TestFaultUnitDirReadOnly: /etc/systemd/system is read-only (inside the
// box's own mount namespace, never the host's). install exits 1 naming the
// cause, the installed unit is untouched and still loaded without a pending
// reload; once writable again, the next install converges.
func TestFaultUnitDirReadOnly(t *testing.T) {
	box := bootBox(t, "rounit")
	ctl, _ := installFakeGarden(t, box, "garden")
	ref := boxRef{box.Root, box.SystemBusAddress}
	unitPath := filepath.Join(box.Root, "/etc/systemd/system/cellguard-garden.service")
	if code, _, out, errOut := cellguard(t, nil, installArgs(t, ref, ctl, ctl+" stop")...); code != cli.ExitOK {
		t.Fatalf("first install: exit %d\n%s\n%s", code, out, errOut)
	}
	old, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	box.Run(t, "mount", "--bind", "/etc/systemd/system", "/etc/systemd/system")
	box.Run(t, "mount", "-o", "remount,bind,ro", "/etc/systemd/system")
	code, _, out, errOut := cellguard(t, nil, installArgs(t, ref, ctl, ctl+" stop --now")...)
	if code != cli.ExitFailed {
		t.Fatalf("install into a read-only unit directory: exit %d, want %d\n%s\n%s", code, cli.ExitFailed, out, errOut)
	}
	if !strings.Contains(errOut, "cellguard: error: install cellguard-garden.service") || !strings.Contains(errOut, "read-only file system") {
		t.Errorf("stderr does not name the unit and the cause:\n%s", errOut)
	}
	if now, err := os.ReadFile(unitPath); err != nil || !bytes.Equal(now, old) {
		t.Fatalf("installed unit changed: %v\n%s", err, now)
	}
	if names, _ := filepath.Glob(filepath.Join(box.Root, "/etc/systemd/system/.cellguard-*")); len(names) != 0 {
		t.Errorf("temp files left: %v", names)
	}
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger("rounit"), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if u, err := m.Status(ctx, "cellguard-garden.service"); err != nil || u.LoadState != "loaded" || u.NeedDaemonReload {
		t.Fatalf("after the failed install the old unit is not loaded as it was: %+v %v", u, err)
	}
	box.Run(t, "umount", "/etc/systemd/system")
	code, _, out, errOut = cellguard(t, nil, installArgs(t, ref, ctl, ctl+" stop --now")...)
	if code != cli.ExitOK {
		t.Fatalf("install once writable: exit %d\n%s\n%s", code, out, errOut)
	}
	if res := installResult(t, out); !res.Written || !res.Reloaded {
		t.Fatalf("install once writable: %+v", res)
	}
}

// TestCrashDropInConverges: `cellguard unit protect-supervisor` is SIGKILLed
// after each step of replacing the supervisor's drop-in (an older
// cellguard's Delegate=yes, which leaves v1 blkio movable). The drop-in is
// the old or the new one, and the next run reloads (on NeedDaemonReload
// when the file is already new) so systemd reports the full delegation.
func TestCrashDropInConverges(t *testing.T) {
	box := bootBox(t, "cdropin")
	writeFile(t, box, "/etc/systemd/system/supervisor.service", "[Service]\nExecStart=/bin/sleep infinity\n", 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "supervisor.service")
	pid := strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "MainPID", "--value", "supervisor.service"))
	ref := boxRef{box.Root, box.SystemBusAddress}
	args := []string{"unit", "protect-supervisor", "--pid", pid, "--json",
		"--root", ref.root(), "--dbus-address", ref.bus(), "--config", emptyConfig(t)}
	const dropIn = "/etc/systemd/system/supervisor.service.d/50-cellguard-delegate.conf"
	const oldText = "[Service]\nDelegate=yes\n"
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger("cdropin"), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}

	for _, step := range []string{"create", "write", "chmod", "fsync", "close", "rename", "fsync-dir"} {
		t.Run(step, func(t *testing.T) {
			writeFile(t, box, dropIn, oldText, 0o644)
			box.Run(t, "systemctl", "daemon-reload")
			_, killed, out, errOut := cellguard(t, []string{safefile.CrashEnv + "=" + step + ":50-cellguard-delegate.conf"}, args...)
			if !killed {
				t.Fatalf("protect-supervisor was not killed after %s\n%s\n%s", step, out, errOut)
			}
			now, err := os.ReadFile(filepath.Join(box.Root, dropIn))
			if err != nil {
				t.Fatal(err)
			}
			renamed := step == "rename" || step == "fsync-dir"
			isNew := bytes.Contains(now, []byte("Delegate=cpu cpuacct io blkio memory devices pids\n"))
			if renamed != isNew || (!renamed && string(now) != oldText) {
				t.Fatalf("crash after %s: drop-in is neither the old nor the expected one:\n%s", step, now)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			u, err := m.Status(ctx, "supervisor.service")
			if err != nil {
				t.Fatal(err)
			}
			if u.NeedDaemonReload != renamed {
				t.Fatalf("crash after %s: NeedDaemonReload=%v", step, u.NeedDaemonReload)
			}
			code, _, out, errOut := cellguard(t, nil, args...)
			if code != cli.ExitOK || !strings.Contains(out, `"reloaded": true`) {
				t.Fatalf("protect-supervisor after the crash: exit %d\n%s\n%s", code, out, errOut)
			}
			if u, err = m.Status(ctx, "supervisor.service"); err != nil || u.NeedDaemonReload || u.ActiveState != "active" {
				t.Fatalf("after convergence: %+v %v", u, err)
			}
			if ok, missing := u.Delegates([]string{"blkio", "cpu", "memory", "pids"}); !ok {
				t.Fatalf("after convergence the supervisor lacks %v (DelegateControllers %v)", missing, u.DelegateControllers)
			}
		})
	}
}
