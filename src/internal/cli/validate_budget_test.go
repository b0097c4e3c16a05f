package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// neverReturns is a check wedged on the host: it returns neither when its
// context ends nor ever after (issue 38, hole 3: with one check stuck,
// pre-start was still running after 80s).
type neverReturns struct{ severity validator.Severity }

func (c neverReturns) Meta() validator.Meta {
	return validator.Meta{ID: "never-returns", Title: "never returns", Story: "a check stuck on the host", Fix: "none", Layouts: []string{"unified"},
		Severity: map[validator.Phase]validator.Severity{validator.PreStart: c.severity, validator.Drain: c.severity}}
}

func (neverReturns) Run(context.Context) ([]validator.Finding, error) { select {} }

// withStuckCheck adds a check that never returns to the registry validate
// runs, for the test.
func withStuckCheck(t *testing.T, sev validator.Severity) {
	t.Helper()
	old := extraChecks
	extraChecks = append(old[:len(old):len(old)], neverReturns{severity: sev})
	t.Cleanup(func() { extraChecks = old })
}

// validateWithin runs cellguard validate and fails the test when it has
// not returned within limit.
func validateWithin(t *testing.T, limit time.Duration, root, cfg string, args ...string) (int, string, string) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "cellguard.json")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), env, append([]string{"validate", "--config", cfgPath, "--root", root}, args...))
	}()
	select {
	case code := <-done:
		return code, out.String(), errb.String()
	case <-time.After(limit):
		t.Fatalf("validate %q with config %s still running after %v", args, cfg, limit)
		return 0, "", ""
	}
}

// pre-start and the errand's validate run within a budget, as drain does:
// the checks that did not finish are reported and never block, and a
// finished blocking check still blocks.
func TestValidatePreStartBoundedByBudget(t *testing.T) {
	testCases := []struct {
		name, cfg string
		args      []string
		sev       validator.Severity
		escaped   bool
		want      int
	}{
		{"validator.budget", `{"validator":{"budget":"1s"}}`, nil, validator.Blocking, false, ExitOK},
		{"--budget", `{}`, []string{"--budget", "500ms"}, validator.Blocking, false, ExitOK},
		{"a finished blocking check still blocks", `{"validator":{"budget":"1s"}}`, nil, validator.Warning, true, ExitFailed},
		{"json", `{"validator":{"budget":"1s"}}`, []string{"--format", "json"}, validator.Blocking, false, ExitOK},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			withStuckCheck(t, tc.sev)
			h := cell(t)
			if tc.escaped {
				escape(h)
			}
			start := time.Now()
			code, out, errOut := validateWithin(t, 10*time.Second, h.Root, tc.cfg, append([]string{"--phase", "pre-start"}, tc.args...)...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errOut)
			}
			mustContainAll(t, "report", out, "never-returns", "did not finish before the run ended")
			mustContainAll(t, "stderr", errOut, "cellguard validate --phase pre-start: budget_expired", "never-returns")
			t.Logf("returned after %v", time.Since(start))
		})
	}
}

// `cellguard validate timeout` is the bound the job's scripts put on
// validate: the phase's budget and the grace drain's bound has.
func TestValidateTimeout(t *testing.T) {
	for _, tc := range []struct{ cfg, phase, want string }{
		{`{}`, "pre-start", "75\n"},
		{`{"validator":{"budget":"2m"}}`, "pre-start", "135\n"},
		{`{"validator":{"budget":"2m"},"drain":{"budget":"10s"}}`, "drain", "13\n"},
	} {
		cfgPath := filepath.Join(t.TempDir(), "cellguard.json")
		if err := os.WriteFile(cfgPath, []byte(tc.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		if code := Main(context.Background(), env, []string{"validate", "timeout", "--phase", tc.phase, "--config", cfgPath}); code != ExitOK || out.String() != tc.want {
			t.Errorf("%s %s: exit %d stdout %q, want %q\n%s", tc.cfg, tc.phase, code, out.String(), tc.want, errb.String())
		}
	}
}
