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
		// Mistakes that rendered fine and would otherwise surface only at
		// the next drain or sysctl apply.
		{name: "unknown blocking id", content: `{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`,
			wantCode: ExitCantRun, wantErr: `validator.blocking.drain: unknown check id "cgroup-integrty"`},
		{name: "unknown pre-start blocking id", content: `{"validator":{"blocking":{"pre-start":["runtime-version"]}}}`,
			wantCode: ExitCantRun, wantErr: `validator.blocking.pre-start: unknown check id "runtime-version"`},
		{name: "unknown ignored id", content: `{"validator":{"ignore":["ghosts"]}}`,
			wantCode: ExitCantRun, wantErr: `ignore: unknown check id "ghosts"`},
		{name: "ignore all is fine", content: `{"validator":{"ignore":["all"],"blocking":{"drain":["cgroup-integrity"]}}}`,
			wantCode: ExitOK, wantOut: "ok:"},
		{name: "bad floor", content: `{"sysctl":{"set":{"kernel.pid_max":">=lots"}}}`,
			wantCode: ExitCantRun, wantErr: "kernel.pid_max"},
		{name: "floor of several numbers", content: `{"sysctl":{"set":{"net.ipv4.ip_local_port_range":">=1024 65000"}}}`,
			wantCode: ExitCantRun, wantErr: "net.ipv4.ip_local_port_range"},
		{name: "removing a key not in the profile", content: `{"sysctl":{"remove":["kernel.nope"]}}`,
			wantCode: ExitCantRun, wantErr: `remove "kernel.nope": not in profile`},
		{name: "unknown profile", content: `{"sysctl":{"profile":"k8s"}}`,
			wantCode: ExitCantRun, wantErr: `unknown sysctl profile "k8s"`},
		{name: "good floor", content: `{"sysctl":{"set":{"kernel.pid_max":">=4194304"}}}`,
			wantCode: ExitOK, wantOut: "ok:"},
		{name: "missing runtime binary", content: `{"validator":{"runtime_binaries":{"runc":"/var/vcap/packages/runc/bin/runc"}}}`,
			wantCode: ExitCantRun, wantErr: "validator.runtime_binaries.runc: /var/vcap/packages/runc/bin/runc is not an executable file"},
		{name: "every problem listed", content: `{"validator":{"ignore":["x"],"blocking":{"drain":["y"],"pre-start":["z"]}},"sysctl":{"profile":"k8s"}}`,
			wantCode: ExitCantRun, wantErr: `json: ignore: unknown check id "x"
cellguard: error: ` + "CONFIG" + `: validator.blocking.pre-start: unknown check id "z"
cellguard: error: ` + "CONFIG" + `: validator.blocking.drain: unknown check id "y"
cellguard: error: ` + "CONFIG" + `: unknown sysctl profile "k8s"`},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cellguard.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			env := &Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			code := Main(context.Background(), env, []string{"config", "check", "--config", path, "--root", t.TempDir()})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.wantOut)
			}
			if !strings.Contains(errOut.String(), strings.ReplaceAll(tc.wantErr, "CONFIG", path)) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.wantErr)
			}
		})
	}
}

// A configured runtime binary that exists passes; one that is not
// executable does not.
func TestConfigCheckRuntimeBinaries(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "var/vcap/packages/runc/bin/runc"), "#!/bin/sh\n")
	cfg := filepath.Join(t.TempDir(), "cellguard.json")
	writeFile(t, cfg, `{"validator":{"runtime_binaries":{"runc":"/var/vcap/packages/runc/bin/runc"}}}`)
	for _, tc := range []struct {
		mode os.FileMode
		want int
	}{{0o644, ExitCantRun}, {0o755, ExitOK}} {
		if err := os.Chmod(filepath.Join(root, "var/vcap/packages/runc/bin/runc"), tc.mode); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
		if code := Main(context.Background(), env, []string{"config", "check", "--config", cfg, "--root", root}); code != tc.want {
			t.Errorf("mode %v: exit %d, want %d\n%s", tc.mode, code, tc.want, errOut.String())
		}
	}
}
