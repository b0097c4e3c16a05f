package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
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
			wantCode: ExitCantRun, wantErr: `supervisor.protekt: unknown key (known: pidfile, protect) (job property cellguard.supervisor.protekt)`},
		{name: "invalid daemon", content: `{"daemons":[{"name":"garden"}]}`,
			wantCode: ExitCantRun, wantErr: "daemons[0].start: missing: want the absolute path of the daemon's ctl script"},
		// Mistakes that rendered fine and would otherwise surface only at
		// the next drain or sysctl apply.
		{name: "unknown blocking id", content: `{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`,
			wantCode: ExitCantRun, wantErr: `validator.blocking.drain "cgroup-integrty": unknown check id; want one of cgroup-integrity, `},
		{name: "unknown pre-start blocking id", content: `{"validator":{"blocking":{"pre-start":["runtime-version"]}}}`,
			wantCode: ExitCantRun, wantErr: `validator.blocking.pre-start "runtime-version": unknown check id; want one of cgroup-integrity, `},
		{name: "unknown ignored id", content: `{"validator":{"ignore":["ghosts"]}}`,
			wantCode: ExitCantRun, wantErr: `validator.ignore "ghosts": unknown check id; want one of cgroup-integrity, `},
		{name: "ignore all is fine", content: `{"validator":{"ignore":["all"],"blocking":{"drain":["cgroup-integrity"]}}}`,
			wantCode: ExitOK, wantOut: "ok:"},
		{name: "bad floor", content: `{"sysctl":{"set":{"kernel.pid_max":">=lots"}}}`,
			wantCode: ExitCantRun, wantErr: `sysctl.set.kernel.pid_max: set: kernel.pid_max: ">=lots": a floor must be a decimal number`},
		{name: "floor of several numbers", content: `{"sysctl":{"set":{"net.ipv4.ip_local_port_range":">=1024 65000"}}}`,
			wantCode: ExitCantRun, wantErr: "sysctl.set.net.ipv4.ip_local_port_range: "},
		{name: "removing a key not in the profile", content: `{"sysctl":{"remove":["kernel.nope"]}}`,
			wantCode: ExitCantRun, wantErr: `sysctl.remove[0]: remove "kernel.nope": not in profile`},
		{name: "unknown profile", content: `{"sysctl":{"profile":"k8s"}}`,
			wantCode: ExitCantRun, wantErr: `sysctl.profile: unknown sysctl profile "k8s"`},
		{name: "good floor", content: `{"sysctl":{"set":{"kernel.pid_max":">=4194304"}}}`,
			wantCode: ExitOK, wantOut: "ok:"},
		{name: "missing runtime binary", content: `{"validator":{"runtime_binaries":{"runc":"/var/vcap/packages/runc/bin/runc"}}}`,
			wantCode: ExitCantRun, wantErr: `validator.runtime_binaries.runc "/var/vcap/packages/runc/bin/runc": not an executable file under `},
		// Durations: Go's grammar is the only one (the job's templates pass
		// them through); a written zero would hide the default.
		{name: "budget below 1s", content: `{"drain":{"budget":"500ms"}}`,
			wantCode: ExitCantRun, wantErr: `drain.budget "500ms": must be from 1s to 1h; leave it out for the default`},
		{name: "budget above 1h", content: `{"drain":{"budget":"2h"}}`,
			wantCode: ExitCantRun, wantErr: `drain.budget "2h": must be from 1s to 1h; leave it out for the default`},
		{name: "budget zero", content: `{"drain":{"budget":"0s"}}`,
			wantCode: ExitCantRun, wantErr: `drain.budget "0s": must be from 1s to 1h; leave it out for the default`},
		{name: "budget in range", content: `{"drain":{"budget":"2m30s"},"watch":{"period":"1m"},"validator":{"runc_init_max_age":"1m30s"}}`,
			wantCode: ExitOK, wantOut: "ok:"},
		{name: "budget without a unit", content: `{"drain":{"budget":"60"}}`,
			wantCode: ExitCantRun, wantErr: `drain.budget "60": time: missing unit in duration "60": want Go's form such as "90s"`},
		{name: "runc init age zero", content: `{"validator":{"runc_init_max_age":"0s"}}`,
			wantCode: ExitCantRun, wantErr: `validator.runc_init_max_age "0s": must be above zero; leave it out for the default`},
		{name: "watch period zero", content: `{"watch":{"period":"0"}}`,
			wantCode: ExitCantRun, wantErr: `watch.period "0": must be above zero`},
		{name: "daemon stop timeout zero", content: `{"daemons":[{"name":"garden","start":"/bin/true","stop_timeout":"0ms"}]}`,
			wantCode: ExitCantRun, wantErr: `daemons[0].stop_timeout "0ms": must be above zero`},
		{name: "durations left out are the defaults", content: `{"drain":{"budget":""},"watch":{}}`,
			wantCode: ExitOK, wantOut: "ok:"},
		{name: "every problem listed", content: `{"validator":{"ignore":["x"],"blocking":{"drain":["y"],"pre-start":["z"]}},"sysctl":{"profile":"k8s"}}`,
			wantCode: ExitCantRun, wantErr: `CONFIG: validator.ignore "x": unknown check id`},
		{name: "every problem listed, a line each", content: `{"validator":{"blocking":{"drain":["y"],"pre-start":["z"]}},"sysctl":{"profile":"k8s"}}`,
			wantCode: ExitCantRun, wantErr: `(job property cellguard.validator.blocking.drain)
cellguard: error: config ` + "CONFIG" + `: validator.blocking.pre-start "z": unknown check id; want one of cgroup-integrity, ` + checkIDList + ` (job property cellguard.validator.blocking.pre_start)
cellguard: error: config ` + "CONFIG" + `: sysctl.profile: unknown sysctl profile "k8s": want container-host or none (job property cellguard.sysctl.profile)
`},
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

// checkIDList is the registry's ids after cgroup-integrity, as the
// problems list them.
var checkIDList = "cgroup-topology, delegation-audit, devices-cgroup, leaked-netns, limits-intact, runtime-ghosts, runtime-versions, stuck-runc-init, sysctl-profile, systemd-cgroup-mode"

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

// bin/drain's bound on cellguard drain: the budget, then a quarter of it
// (2s to 15s), in whole seconds rounded up; the default budget's when the
// config sets none.
func TestDrainTimeout(t *testing.T) {
	for budget, want := range map[time.Duration]int{
		time.Second: 3, 1500 * time.Millisecond: 4, 8 * time.Second: 10, 60 * time.Second: 75,
		150 * time.Second: 165, time.Hour: 3615,
	} {
		if got := app.DrainTimeLimit(budget); got != want {
			t.Errorf("app.DrainTimeLimit(%v) = %d, want %d", budget, got, want)
		}
	}
	for content, want := range map[string]string{`{}`: "75\n", `{"drain":{"budget":"2m30s"}}`: "165\n", `{"drain":{"budget":"1s"}}`: "3\n"} {
		path := filepath.Join(t.TempDir(), "cellguard.json")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := runCLI(t, "drain", "timeout", "--config", path); code != ExitOK || out != want {
			t.Errorf("drain timeout with %s: exit %d, stdout %q, want %q\n%s", content, code, out, want, errOut)
		}
	}
}
