package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// sysctlRoot is a fixture host for the CLI: a fake /proc/sys with the keys
// of the built-in profile at kernel defaults, plus two extra ones.
func sysctlRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	keys := map[string]string{"net.ipv4.ip_local_port_range": "32768\t60999", "kernel.osrelease": "6.1.0"}
	es, err := sysctl.Builtin(sysctl.ContainerHost)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		keys[e.Key] = "7" // differs from every profile value
	}
	for k, v := range keys {
		p := filepath.Join(root, "proc/sys", sysctl.MustKey(k).Path())
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if k == "kernel.osrelease" {
			mode = 0o444
		}
		if err := os.WriteFile(p, []byte(v+"\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// sysctlEmptyConfig keeps a config rendered on the test machine at
// defaultConfigPath out of these tests.
func sysctlEmptyConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runSysctlCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if len(args) > 2 && args[0] == "sysctl" && !sysctlHasArg(args, "--config") && !sysctlHasArg(args, "--help") {
		args = append(args[:2:2], append([]string{"--config", sysctlEmptyConfig(t)}, args[2:]...)...)
	}
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func sysctlHasArg(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestSysctlApplyThenCheck(t *testing.T) {
	root := sysctlRoot(t)
	code, out, errOut := runSysctlCLI(t, "sysctl", "check", "--root", root)
	if code != ExitFailed || !strings.Contains(out, "nothing sets it at boot: /etc/sysctl.d/60-cellguard.conf does not exist") {
		t.Fatalf("check before apply: code %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = runSysctlCLI(t, "sysctl", "apply", "--root", root, "--set", "net.ipv4.ip_local_port_range=1024 65000")
	if code != ExitOK {
		t.Fatalf("apply: code %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "fs.pipe-user-pages-soft") || !strings.Contains(out, "15 changed, 0 already set; /etc/sysctl.d/60-cellguard.conf written") {
		t.Fatalf("apply output:\n%s", out)
	}
	// Logs are lager JSON on stderr, never on stdout.
	if !strings.Contains(errOut, `"message":"cellguard.sysctl-apply.key-changed"`) || strings.Contains(out, "timestamp") {
		t.Fatalf("logs misplaced:\nstdout %s\nstderr %s", out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/sysctl.d/60-cellguard.conf")); err != nil || !strings.Contains(string(b), "fs.pipe-user-pages-soft = 0\n") {
		t.Fatalf("persisted file: %v\n%s", err, b)
	}

	code, out, _ = runSysctlCLI(t, "sysctl", "apply", "--root", root, "--set", "net.ipv4.ip_local_port_range=1024 65000")
	if code != ExitOK || !strings.Contains(out, "nothing changed, all already set; /etc/sysctl.d/60-cellguard.conf unchanged") {
		t.Fatalf("second apply: code %d\n%s", code, out)
	}

	code, out, _ = runSysctlCLI(t, "sysctl", "check", "--root", root, "--set", "net.ipv4.ip_local_port_range=1024 65000")
	if code != ExitOK || !strings.Contains(out, "all 15 keys in force") {
		t.Fatalf("check after apply: code %d\n%s", code, out)
	}

	// Another file later in the order takes a key back at boot.
	other := filepath.Join(root, "etc/sysctl.d/60-other.conf")
	if err := os.WriteFile(other, []byte("fs.inotify.max_user_watches = 16384\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runSysctlCLI(t, "sysctl", "check", "--root", root, "--json", "--set", "net.ipv4.ip_local_port_range=1024 65000")
	if code != ExitFailed {
		t.Fatalf("check with drift: code %d\n%s", code, out)
	}
	var rep sysctl.CheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	d := rep.Drifted()
	if rep.InForce || len(d) != 1 || d[0].Key != "fs.inotify.max_user_watches" || d[0].Status != sysctl.BootDrift ||
		!strings.Contains(d[0].Explanation, "/etc/sysctl.d/60-other.conf:1 sets it back to 16384, below the floor 524288, after ours (60-cellguard.conf)") {
		t.Fatalf("drift %+v", d)
	}
}

func TestSysctlExitCodes(t *testing.T) {
	testCases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"apply unknown key", []string{"apply", "--set", "kernel.no_such=1"}, ExitCantRun, "unknown key"},
		{"apply traversal", []string{"apply", "--set", "../../etc/passwd=1"}, ExitCantRun, "path traversal"},
		{"apply non-numeric", []string{"apply", "--set", "kernel.pid_max=many"}, ExitCantRun, "not a decimal number"},
		{"apply read-only", []string{"apply", "--set", "kernel.osrelease=7"}, ExitCantRun, "read-only key"},
		{"apply bad --set", []string{"apply", "--set", "kernel.pid_max"}, ExitCantRun, "want KEY=VALUE"},
		{"apply unknown profile", []string{"apply", "--profile", "gpu"}, ExitCantRun, "unknown sysctl profile"},
		{"apply file outside sysctl.d", []string{"apply", "--file", "/tmp/x.conf"}, ExitCantRun, "not in a directory systemd-sysctl reads"},
		{"apply stray argument", []string{"apply", "now"}, ExitCantRun, "unexpected arguments"},
		{"check bad flag", []string{"check", "--no-such-flag"}, ExitCantRun, "unknown flag: --no-such-flag"},
		{"check remove unknown", []string{"check", "--remove", "kernel.panic"}, ExitCantRun, "not in profile"},
		{"check missing key", []string{"check", "--profile", "none", "--set", "kernel.no_such=1"}, ExitFailed, ""},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := sysctlRoot(t)
			args := append([]string{"sysctl", tc.args[0], "--root", root}, tc.args[1:]...)
			code, out, errOut := runSysctlCLI(t, args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("code %d, want %d; stderr lacks %q:\n%s\nstdout:\n%s", code, tc.code, tc.stderr, errOut, out)
			}
			if _, err := os.Stat(filepath.Join(root, "etc/sysctl.d/60-cellguard.conf")); err == nil {
				t.Fatal("a failed run persisted the file")
			}
			b, _ := os.ReadFile(filepath.Join(root, "proc/sys/fs/pipe-user-pages-soft"))
			if string(b) != "7\n" {
				t.Fatalf("a failed run changed a live key: %q", b)
			}
		})
	}
}

func TestSysctlConfigFile(t *testing.T) {
	root := sysctlRoot(t)
	cfg := filepath.Join(t.TempDir(), "cellguard.json")
	body := `{"sysctl": {"profile": "none", "set": {"kernel.pid_max": "4194304", "fs/inotify/max_user_watches": "524288"},
		"file": "/etc/sysctl.d/61-cellguard.conf"}}`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// The flag overrides the config's value for the same key.
	code, out, errOut := runSysctlCLI(t, "sysctl", "apply", "--root", root, "--config", cfg, "--json", "--set", "kernel.pid_max=32768")
	if code != ExitOK {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
	var rep sysctl.ApplyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.File != "/etc/sysctl.d/61-cellguard.conf" || len(rep.Keys) != 2 || rep.Changed != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, k := range rep.Keys {
		if k.Key == "kernel.pid_max" && k.After != "32768" {
			t.Fatalf("flag did not override the config: %+v", k)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc/sysctl.d/61-cellguard.conf")); err != nil {
		t.Fatal(err)
	}
}

func TestSysctlHelp(t *testing.T) {
	for _, sub := range []string{"apply", "check"} {
		code, errOut, _ := runSysctlCLI(t, "sysctl", sub, "--help")
		if code != ExitOK || !strings.Contains(errOut, "Exit codes:") || !strings.Contains(errOut, "--root") || !strings.Contains(errOut, "--json") {
			t.Fatalf("%s --help: code %d\n%s", sub, code, errOut)
		}
	}
	code, errOut, _ := runSysctlCLI(t, "sysctl", "--help")
	if code != ExitOK || !strings.Contains(errOut, "apply") || !strings.Contains(errOut, "check") {
		t.Fatalf("sysctl --help: code %d\n%s", code, errOut)
	}
	code, out, _ := runSysctlCLI(t, "sysctl", "profile")
	if code != ExitOK || !strings.Contains(out, "fs.pipe-user-pages-soft = 0") || !strings.Contains(out, "source: https://github.com/opencontainers/runc/issues/2828") {
		t.Fatalf("profile: code %d\n%s", code, out)
	}
}

// check exits 2 when it cannot read the boot configuration at all.
func TestSysctlCheckCannotRun(t *testing.T) {
	root := sysctlRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/sysctl.d"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runSysctlCLI(t, "sysctl", "check", "--root", root)
	if code != ExitCantRun || !strings.Contains(errOut, "read sysctl dir /etc/sysctl.d") {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
}

// Capacity limits are floors: a host tuned above one keeps its value (the
// reported bug: user.max_user_namespaces 96365 lowered to 63359). --set
// takes 'KEY>=N' and KEY=>=N for a floor; a plain value is exact.
func TestSysctlFloors(t *testing.T) {
	root := sysctlRoot(t)
	ns := filepath.Join(root, "proc/sys/user/max_user_namespaces")
	if err := os.WriteFile(ns, []byte("96365\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sysctl", "apply", "--root", root, "--set", "kernel.pid_max>=5", "--set", "fs.inotify.max_user_watches=>=8",
		"--set", "kernel.keys.maxkeys=9"}
	code, out, errOut := runSysctlCLI(t, args...)
	if code != ExitOK {
		t.Fatalf("apply: code %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"user.max_user_namespaces: already at least 63359 (96365), left alone; 60-cellguard.conf keeps 96365",
		"kernel.pid_max: already at least 5 (7), left alone",
		">=63359", ">=8",
		"12 changed, 2 already set",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	live := func(key string) string {
		b, _ := os.ReadFile(filepath.Join(root, "proc/sys", sysctl.MustKey(key).Path()))
		return strings.TrimSpace(string(b))
	}
	for key, want := range map[string]string{"user.max_user_namespaces": "96365", "kernel.pid_max": "7",
		"fs.inotify.max_user_watches": "8", "kernel.keys.maxkeys": "9"} {
		if got := live(key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "etc/sysctl.d/60-cellguard.conf"))
	if err != nil || !strings.Contains(string(b), "\nuser.max_user_namespaces = 96365\n") || !strings.Contains(string(b), "\nkernel.keys.maxkeys = 9\n") {
		t.Fatalf("persisted file: %v\n%s", err, b)
	}

	code, out, _ = runSysctlCLI(t, append(args, "--json")...)
	var rep sysctl.ApplyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK || rep.Changed != 0 || rep.FileChanged {
		t.Fatalf("second apply: code %d err %v\n%s", code, err, out)
	}
	modes := map[string]sysctl.Mode{}
	for _, k := range rep.Keys {
		modes[k.Key] = k.Mode
	}
	if modes["kernel.pid_max"] != sysctl.ModeAtLeast || modes["kernel.keys.maxkeys"] != sysctl.ModeExact ||
		modes["fs.pipe-user-pages-soft"] != sysctl.ModeExact || modes["user.max_user_namespaces"] != sysctl.ModeAtLeast {
		t.Fatalf("modes %v", modes)
	}

	code, out, _ = runSysctlCLI(t, "sysctl", "check", "--root", root, "--set", "kernel.pid_max>=5", "--set", "fs.inotify.max_user_watches=>=8",
		"--set", "kernel.keys.maxkeys=9")
	if code != ExitOK || !strings.Contains(out, "all 14 keys in force") {
		t.Fatalf("check: code %d\n%s", code, out)
	}

	code, out, _ = runSysctlCLI(t, "sysctl", "profile")
	if code != ExitOK || !strings.Contains(out, "kernel.pid_max >= 4194304  (profile container-host, at-least)") ||
		!strings.Contains(out, "fs.pipe-user-pages-soft = 0  (profile container-host, exact)") {
		t.Fatalf("profile: code %d\n%s", code, out)
	}
	code, _, errOut = runSysctlCLI(t, "sysctl", "apply", "--root", root, "--set", "net.ipv4.ip_local_port_range>=1024")
	if code != ExitCantRun || !strings.Contains(errOut, "a floor (>=1024) needs a key holding one number") {
		t.Fatalf("floor on a range: code %d\n%s", code, errOut)
	}
}
