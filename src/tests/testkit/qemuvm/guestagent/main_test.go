package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm/wire"
)

func TestExec(t *testing.T) {
	for _, tc := range []struct {
		name       string
		req        wire.Request
		exit       int
		out, error string
	}{
		{"output and status", wire.Request{Op: wire.OpExec, Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, 3, "out\n", ""},
		{"stdin", wire.Request{Op: wire.OpExec, Args: []string{"cat"}, Stdin: []byte("in")}, 0, "in", ""},
		{"does not start", wire.Request{Op: wire.OpExec, Args: []string{"/nonexistent/cmd"}}, -1, "", "exec /nonexistent/cmd"},
		{"no command", wire.Request{Op: wire.OpExec}, -1, "", "no command"},
		{"unknown op", wire.Request{Op: "reboot"}, -1, "", `unknown op "reboot"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := handle(tc.req)
			if resp.Exit != tc.exit || string(resp.Stdout) != tc.out || !strings.Contains(resp.Error, tc.error) || (tc.error == "") != (resp.Error == "") {
				t.Errorf("got exit %d stdout %q error %q; want exit %d stdout %q error containing %q", resp.Exit, resp.Stdout, resp.Error, tc.exit, tc.out, tc.error)
			}
		})
	}
}

// The timeout ends the command's whole process group, a child holding
// stdout open included, in about the timeout.
func TestExecTimeoutKillsTheGroup(t *testing.T) {
	t0 := time.Now()
	resp := handle(wire.Request{Op: wire.OpExec, Args: []string{"sh", "-c", "sleep 60 & sleep 60"}, TimeoutMS: 300})
	if took := time.Since(t0); took > 3*time.Second { // without the group kill: WaitDelay's 5 s
		t.Fatalf("took %v: the group was not killed", took)
	}
	if resp.Exit != -1 || !strings.Contains(resp.Error, "timed out") {
		t.Errorf("got exit %d error %q; want -1 and a timeout", resp.Exit, resp.Error)
	}
}

func TestPut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "f")
	if resp := handle(wire.Request{Op: wire.OpPut, Path: p, Data: []byte("x"), Mode: 0o750}); resp.Error != "" {
		t.Fatal(resp.Error)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("stat %s: %v, mode %v; want 0750", p, err, st.Mode())
	}
	if resp := handle(wire.Request{Op: wire.OpPut, Path: "relative", Data: []byte("x")}); !strings.Contains(resp.Error, "not an absolute path") {
		t.Errorf("relative path: error %q", resp.Error)
	}
}
