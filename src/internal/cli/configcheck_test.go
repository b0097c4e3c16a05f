package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	testCases := []struct {
		name     string
		content  string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "valid", content: `{"daemons":[{"name":"garden","start":"/bin/true"}],"supervisor":{"protect":true}}`,
			wantCode: ExitOK, wantOut: "ok: 1 daemons, supervisor protect=true"},
		{name: "unknown key", content: `{"supervisor":{"protekt":true}}`,
			wantCode: ExitCantRun, wantErr: `unknown field "protekt"`},
		{name: "invalid daemon", content: `{"daemons":[{"name":"garden"}]}`,
			wantCode: ExitCantRun, wantErr: "start command is empty"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cellguard.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			env := &Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			code := Main(context.Background(), env, []string{"config", "check", "--config", path})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.wantOut)
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.wantErr)
			}
		})
	}
}
