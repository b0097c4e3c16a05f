package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/boundedexec"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/hungsock"
)

// faultHelperEnv carries a faultJob (JSON) to the helper process: this test
// binary re-run with -test.run=TestFaultHelper, in a private mount
// namespace when it needs read-only mounts.
const faultHelperEnv = "CELLGUARD_CLI_FAULT_HELPER"

type faultJob struct {
	ReadOnly []string `json:"read_only"` // bind-mounted read-only onto themselves first
	Args     []string `json:"args"`      // cellguard arguments for Main
}

// TestFaultHelper is not a test: it is the child process of the fault and
// crash tests. It prints its exit code as "helper-exit=N" (a test may not
// os.Exit) after Main's own output.
func TestFaultHelper(t *testing.T) {
	spec := os.Getenv(faultHelperEnv)
	if spec == "" {
		t.Skip("helper process for the fault and crash tests")
	}
	var job faultJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		t.Fatal(err)
	}
	for _, p := range job.ReadOnly {
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s: %v", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount %s read-only: %v", p, err)
		}
	}
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	code := Main(context.Background(), env, job.Args)
	fmt.Fprintf(os.Stdout, "\nhelper-exit=%d\n", code)
}

var helperExitRe = regexp.MustCompile(`helper-exit=(\d+)`)

// runHelper runs job in a child process (a private mount namespace when it
// mounts anything: the host's mounts are never touched) with extra env, and
// returns the exit code Main returned, or -1 with killed set when the child
// died of SIGKILL.
func runHelper(t *testing.T, job faultJob, env ...string) (code int, killed bool, stdout, stderr string) {
	t.Helper()
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHelper$", "-test.count=1", "-test.v=false")
	cmd.Env = append(append(os.Environ(), faultHelperEnv+"="+string(spec)), env...)
	if len(job.ReadOnly) > 0 {
		// Go makes / recursively private in the new namespace before exec.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return -1, true, out.String(), errb.String()
		}
	}
	m := helperExitRe.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("helper did not report an exit code (%v)\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	code, _ = strconv.Atoi(m[1])
	return code, false, out.String(), errb.String()
}

// liveValues reads every value below root/proc/sys.
func liveValues(t *testing.T, root string) map[string]string {
	t.Helper()
	vals := map[string]string{}
	base := filepath.Join(root, "proc/sys")
	err := filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		vals[strings.TrimPrefix(p, base)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Some are made executable and run: no fork may copy the descriptor
	// (testkit.WriteExec).
	if err := testkit.NoForks(func() error { return os.WriteFile(path, []byte(content), 0o644) }); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dirNames lists a directory's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

const oldSysctlFile = "# an older cellguard's file\nvm.panic_on_oom = 0\n"

// TestFaultSysctlDirReadOnly: /etc/sysctl.d is read-only (a read-only
// root, an image mounted so). apply exits 1 naming the file and the cause;
// the old file is intact and nothing else appears beside it.
func TestFaultSysctlDirReadOnly(t *testing.T) {
	testkit.RequireRoot(t, "a read-only bind mount in a private mount namespace")
	root := sysctlRoot(t)
	dir := filepath.Join(root, "etc/sysctl.d")
	writeFile(t, filepath.Join(dir, "60-cellguard.conf"), oldSysctlFile)
	code, _, _, stderr := runHelper(t, faultJob{ReadOnly: []string{dir},
		Args: []string{"sysctl", "apply", "--root", root, "--config", sysctlEmptyConfig(t)}})
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFailed, stderr)
	}
	for _, want := range []string{"cellguard: error:", "persist /etc/sysctl.d/60-cellguard.conf", "read-only file system"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if got := readFile(t, filepath.Join(dir, "60-cellguard.conf")); got != oldSysctlFile {
		t.Errorf("old file changed:\n%s", got)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("sysctl.d holds %v", names)
	}
}

// TestFaultProcSysReadOnly: /proc/sys is read-only (inside a container, or
// a hardened host). apply exits 1 and says so; no live value changes; the
// persisted file is written whole, since every value is valid for boot.
func TestFaultProcSysReadOnly(t *testing.T) {
	testkit.RequireRoot(t, "a read-only bind mount in a private mount namespace")
	root := sysctlRoot(t)
	writeFile(t, filepath.Join(root, "etc/sysctl.d/60-cellguard.conf"), oldSysctlFile)
	before := liveValues(t, root)
	code, _, stdout, stderr := runHelper(t, faultJob{ReadOnly: []string{filepath.Join(root, "proc/sys")},
		Args: []string{"sysctl", "apply", "--root", root, "--config", sysctlEmptyConfig(t)}})
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFailed, stdout, stderr)
	}
	if !strings.Contains(stderr, "read-only file system") || !strings.Contains(stderr, "cellguard: error:") {
		t.Errorf("stderr does not name the cause:\n%s", stderr)
	}
	after := liveValues(t, root)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed from %q to %q", k, v, after[k])
		}
	}
	p, err := sysctl.Resolve(sysctl.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, p.File)); got != string(sysctl.Render(p)) {
		t.Errorf("persisted file is neither complete nor the profile:\n%s", got)
	}
}

// TestCrashSysctlApplyConverges kills `cellguard sysctl apply` with SIGKILL
// after each step of persisting /etc/sysctl.d/60-cellguard.conf: the file
// is the old or the new one, never torn, and the next apply and check
// succeed with the new profile in force.
func TestCrashSysctlApplyConverges(t *testing.T) {
	testkit.RequireCrashHooks(t)
	steps := []string{"create", "write", "chmod", "fsync", "close", "rename", "fsync-dir"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			root := sysctlRoot(t)
			target := filepath.Join(root, "etc/sysctl.d/60-cellguard.conf")
			writeFile(t, target, oldSysctlFile)
			cfg := sysctlEmptyConfig(t)
			_, killed, stdout, stderr := runHelper(t, faultJob{Args: []string{"sysctl", "apply", "--root", root, "--config", cfg}},
				safefile.CrashEnv+"="+step+":60-cellguard.conf")
			if !killed {
				t.Fatalf("apply was not killed after %s\n%s\n%s", step, stdout, stderr)
			}
			p, err := sysctl.Resolve(sysctl.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			got := readFile(t, target)
			if got != oldSysctlFile && got != string(sysctl.Render(p)) {
				t.Fatalf("after a crash at %s the file is torn:\n%s", step, got)
			}
			code, out, errOut := runSysctlCLI(t, "sysctl", "apply", "--root", root, "--config", cfg)
			if code != ExitOK {
				t.Fatalf("apply after the crash: exit %d\n%s\n%s", code, out, errOut)
			}
			code, out, errOut = runSysctlCLI(t, "sysctl", "check", "--root", root, "--config", cfg)
			if code != ExitOK {
				t.Fatalf("check after the crash and a re-run: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

// silentSocket accepts connections and never answers.
func silentSocket(t *testing.T) string {
	path, _ := hungsock.Listen(t)
	return path
}

// TestFaultSystemdUnreachable: systemd's D-Bus socket is missing, or
// accepts and never answers. Every command that talks to systemd exits 1
// with the hint within a bounded time, and install writes no unit file.
func TestFaultSystemdUnreachable(t *testing.T) {
	old := systemd.DialTimeout
	systemd.DialTimeout = 500 * time.Millisecond
	defer func() { systemd.DialTimeout = old }()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "bin/garden_ctl"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(root, "bin/garden_ctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	sockets := map[string]string{
		"missing": filepath.Join(t.TempDir(), "no-such-socket"),
		"silent":  silentSocket(t),
	}
	commands := [][]string{
		{"unit", "install", "garden", "--start", "/bin/garden_ctl start"},
		{"unit", "status", "garden"},
		{"unit", "protect-supervisor", "--pid", strconv.Itoa(os.Getpid())},
		{"start", "garden", "--start", "/bin/garden_ctl start"},
		{"stop", "garden", "--start", "/bin/garden_ctl start"},
	}
	for name, sock := range sockets {
		for _, args := range commands {
			t.Run(name+"/"+strings.Join(args[:2], "-"), func(t *testing.T) {
				all := append(append([]string(nil), args...), "--root", root, "--config", sysctlEmptyConfig(t),
					"--dbus-address", "unix:path="+sock)
				var out, errb bytes.Buffer
				env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
				start := time.Now()
				code := Main(context.Background(), env, all)
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("took %v", d)
				}
				if code != ExitFailed {
					t.Fatalf("exit %d, want %d\n%s", code, ExitFailed, errb.String())
				}
				for _, want := range []string{"cellguard: error:", "connect to systemd over D-Bus", "cellguard: hint: is systemd PID 1"} {
					if !strings.Contains(errb.String(), want) {
						t.Errorf("stderr lacks %q:\n%s", want, errb.String())
					}
				}
				if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/cellguard-garden.service")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("unit file written without systemd: %v", err)
				}
			})
		}
	}
}

// TestFaultRuntimeBinaryHangsOrIsMissing: through Main, a containerd that
// never answers --version is killed after boundedexec.DefaultTimeout and
// reported with that cause, as a warning naming validator.probe_timeout: on
// its own it blocks nothing (pre-start exit 0); a configured runc that does
// not exist blocks pre-start (exit 1) without making validate fail to run,
// and only warns at drain (exit 0, stdout is just the integer). The hang
// itself and the process group kill are proved in runtimever
// (TestProbeHangingBinary) and checks (TestRuntimeVersionsBinariesMissingOrBroken).
func TestFaultRuntimeBinaryHangsOrIsMissing(t *testing.T) {
	h := cell(t)
	writeFile(t, filepath.Join(h.Root, "usr/bin/containerd"), "#!/bin/sh\nexec sleep 300\n")
	if err := os.Chmod(filepath.Join(h.Root, "usr/bin/containerd"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"validator":{"runtime_binaries":{"runc":"/var/vcap/packages/runc/bin/runc"}}}`
	start := time.Now()
	code, out, errOut := runValidateCLI(t, h.Root, cfg, "--phase", "pre-start")
	if code != ExitFailed {
		t.Fatalf("pre-start: exit %d, want %d\n%s\n%s", code, ExitFailed, out, errOut)
	}
	for _, want := range []string{"BLOCKED by runtime-versions", "/var/vcap/packages/runc/bin/runc: configured runc binary",
		"/usr/bin/containerd: containerd at /usr/bin/containerd: no answer within 5s, version unknown", "validator.probe_timeout", "killed its process group"} {
		if !strings.Contains(out, want) {
			t.Errorf("pre-start stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runValidateCLI(t, h.Root, cfg, "--phase", "drain")
	if code != ExitOK || strings.TrimSpace(out) != "0" {
		t.Fatalf("drain: exit %d, stdout %q, want 0 and \"0\"\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "killed its process group") {
		t.Errorf("drain stderr does not explain the warning:\n%s", errOut)
	}
	if d := time.Since(start); d > 4*boundedexec.DefaultTimeout {
		t.Errorf("two validate runs took %v with a hung binary", d)
	}
	// The hang alone: a warning, pre-start goes on.
	code, out, errOut = runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start")
	if code != ExitOK || !strings.Contains(out, "no answer within 5s") {
		t.Errorf("pre-start with only the hung containerd: exit %d, want %d and the warning\n%s\n%s", code, ExitOK, out, errOut)
	}
}

// TestUntrustedConfigRefused: a config others can write is refused by every
// command that reads it, with exit 2 and the fix, before anything runs.
func TestUntrustedConfigRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cellguard.json")
	writeFile(t, p, `{"validator":{"ignore":["cgroup-integrity"]}}`)
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"config", "check", "--config", p},
		{"validate", "--phase", "pre-start", "--root", t.TempDir(), "--config", p},
		{"sysctl", "apply", "--root", sysctlRoot(t), "--config", p},
	} {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := Main(context.Background(), env, args)
		if code != ExitCantRun {
			t.Errorf("%s %s: exit %d, want %d\n%s", args[0], args[1], code, ExitCantRun, errb.String())
		}
		if !strings.Contains(errb.String(), "cellguard: error:") || !strings.Contains(errb.String(), "chmod go-w "+p) {
			t.Errorf("%s %s: stderr lacks the error and the fix:\n%s", args[0], args[1], errb.String())
		}
	}
}
