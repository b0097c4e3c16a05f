package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runWatchCLI(t *testing.T, root, cfg string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "cellguard.json")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"watch", "--config", cfgPath, "--root", root, "--log-file", filepath.Join(dir, "watch.log")}, args...)
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, all)
	return code, out.String(), errb.String()
}

// --once: one full scan with the validator's checks on the fixture cell,
// metrics on stdout; the escape is counted per process.
func TestWatchOnce(t *testing.T) {
	h := cell(t)
	escape(h)
	code, out, errOut := runWatchCLI(t, h.Root, `{}`, "--once")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"cellguard_escaped_processes 1\n",
		`cellguard_check_status{check="cgroup-integrity",phase="watch"} 2`,
		`cellguard_scans_total{trigger="start"} 1`,
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// The config's validator section decides, as for validate: an ignored
// check never blocks, and an unknown id is refused before anything runs.
func TestWatchConfigAndBadInput(t *testing.T) {
	h := cell(t)
	escape(h)
	code, out, _ := runWatchCLI(t, h.Root, `{"validator": {"ignore": ["cgroup-integrity"]}}`, "--once")
	if code != ExitOK || !strings.Contains(out, `cellguard_check_blocking{check="cgroup-integrity",phase="watch"} 0`) {
		t.Fatalf("ignored check: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		name, cfg string
		args      []string
		want      string
	}{
		{"unknown ignore id", `{"validator": {"ignore": ["no-such-check"]}}`, []string{"--once"}, `validator.ignore "no-such-check": unknown check id`},
		{"period zero", `{}`, []string{"--once", "--period", "0s"}, "must be above zero"},
		{"half TLS", `{"watch": {"tls": {"cert": "/c"}}}`, []string{"--once"}, "set cert, key and ca together"},
		{"unknown config key", `{"watch": {"listne": "x"}}`, []string{"--once"}, "listne"},
		{"argument", `{}`, []string{"now"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runWatchCLI(t, h.Root, tc.cfg, tc.args...)
			if code != ExitCantRun || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q, stdout %q", code, errOut, out)
			}
		})
	}
}
