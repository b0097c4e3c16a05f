package jobs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// The rendered scripts run here against a /var/vcap relocated into a temp
// dir, with cellguard either a stub that records its calls or the real
// binary.

const stub = `#!/usr/bin/env bash
printf '%s\n' "$*" >>"${STUB_CALLS}"
echo "stub: a log line on stderr" >&2
if [ "$1 $2 $3" = "validate --phase drain" ]; then
  printf '%s' "${STUB_DRAIN_OUT-0
}"
  exit "${STUB_DRAIN_RC:-0}"
fi
echo "stub: chatter on stdout"
[ "$1" != "${STUB_FAIL_AT:-}" ] || exit 1
`

type vcap struct {
	root, calls string
}

// install lays the rendered job out under root/vcap/jobs/cellguard with every
// /var/vcap/ path in the scripts pointed at root/vcap/, and cellguard at bin.
func install(t *testing.T, r render.Rendered, bin string) vcap {
	t.Helper()
	root := t.TempDir()
	v := vcap{root: root, calls: filepath.Join(root, "calls")}
	relocated := render.Rendered{}
	for dst, b := range r {
		relocated[dst] = bytes.ReplaceAll(b, []byte("/var/vcap/"), []byte(root+"/vcap/"))
	}
	if err := relocated.WriteTo(filepath.Join(root, "vcap/jobs/cellguard")); err != nil {
		t.Fatal(err)
	}
	pkgBin := filepath.Join(root, "vcap/packages/cellguard/bin")
	if err := os.MkdirAll(pkgBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if bin == "" {
		if err := os.WriteFile(filepath.Join(pkgBin, "cellguard"), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Symlink(bin, filepath.Join(pkgBin, "cellguard")); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v vcap) run(t *testing.T, script string, env ...string) (stdout string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(v.root, "vcap/jobs/cellguard", script), "job_changed", "hash_changed", "cellguard")
	cmd.Env = append(os.Environ(), append([]string{"STUB_CALLS=" + v.calls}, env...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s stderr:\n%s", script, errOut.String())
		}
	})
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

func (v vcap) callList(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(v.calls)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (v vcap) drainLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(v.root, "vcap/sys/log/cellguard/drain.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDrainPrintsOnlyTheInteger(t *testing.T) {
	r := mustRender(t, "")
	testCases := []struct {
		name       string
		env        []string
		wantStdout string
		wantCode   int
	}{
		{name: "pass", wantStdout: "0\n"},
		{name: "wait seconds passed through", env: []string{"STUB_DRAIN_OUT=30\n"}, wantStdout: "30\n"},
		{name: "blocking failure blocks with nothing on stdout", env: []string{"STUB_DRAIN_RC=1", "STUB_DRAIN_OUT="}, wantCode: 1},
		{name: "could not run blocks", env: []string{"STUB_DRAIN_RC=2", "STUB_DRAIN_OUT="}, wantCode: 2},
		{name: "stray stdout becomes 0", env: []string{"STUB_DRAIN_OUT=validated 3 containers\n0\n"}, wantStdout: "0\n"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			v := install(t, r, "")
			out, code := v.run(t, "bin/drain", tc.env...)
			if code != tc.wantCode || out != tc.wantStdout {
				t.Fatalf("drain: exit %d stdout %q, want exit %d stdout %q\nlog:\n%s", code, out, tc.wantCode, tc.wantStdout, v.drainLog(t))
			}
			calls := v.callList(t)
			want := "validate --phase drain --config " + v.root + "/vcap/jobs/cellguard/config/cellguard.json --log-file " + v.root + "/vcap/sys/log/cellguard/drain.log"
			if len(calls) != 1 || calls[0] != want {
				t.Fatalf("calls %q, want [%q]", calls, want)
			}
			log := v.drainLog(t)
			for _, s := range []string{"stub: a log line on stderr", "drain job_changed hash_changed cellguard"} {
				if !strings.Contains(log, s) {
					t.Errorf("drain.log lacks %q:\n%s", s, log)
				}
			}
		})
	}
}

// With the real binary, whatever validate decides on this host, stdout is
// one integer and exit 0, or empty and non-zero.
func TestDrainWithTheRealBinary(t *testing.T) {
	v := install(t, mustRender(t, ""), cellguardBin)
	out, code := v.run(t, "bin/drain")
	switch {
	case code == 0 && regexp.MustCompile(`^[0-9]+\n$`).MatchString(out):
	case code != 0 && out == "":
	default:
		t.Fatalf("drain with the real cellguard: exit %d, stdout %q\nlog:\n%s", code, out, v.drainLog(t))
	}
	t.Logf("drain on this host: exit %d, stdout %q", code, out)
}

func TestPreStartSteps(t *testing.T) {
	r := mustRender(t, propertySets[1].props) // garden cell
	v := install(t, r, "")
	cfg := v.root + "/vcap/jobs/cellguard/config/cellguard.json"
	want := []string{
		"config check --config " + cfg,
		"sysctl apply --config " + cfg,
		"unit install garden --start /var/vcap/jobs/garden/bin/garden_start --stop /var/vcap/jobs/garden/bin/garden_stop --pidfile /var/vcap/sys/run/garden/garden.pid --type forking --config " + cfg,
		"unit protect-supervisor --config " + cfg,
		"validate --phase pre-start --config " + cfg,
	}
	// Daemon commands keep /var/vcap: they are the monit jobs' paths, not
	// cellguard's; the relocation above only rewrote cellguard's own.
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], "/var/vcap/jobs/garden", v.root+"/vcap/jobs/garden")
		want[i] = strings.ReplaceAll(want[i], "/var/vcap/sys/run/garden", v.root+"/vcap/sys/run/garden")
	}
	for run := 1; run <= 2; run++ {
		if err := os.Remove(v.calls); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if _, code := v.run(t, "bin/pre-start"); code != 0 {
			t.Fatalf("run %d: pre-start exit %d", run, code)
		}
		if got := v.callList(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: calls\n%s\nwant\n%s", run, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// set -e: a failing step stops pre-start, so BOSH fails the deploy before
// monit starts anything.
func TestPreStartStopsAtTheFirstFailure(t *testing.T) {
	v := install(t, mustRender(t, ""), "")
	_, code := v.run(t, "bin/pre-start", "STUB_FAIL_AT=sysctl")
	if code == 0 {
		t.Fatal("pre-start exited 0 although sysctl apply failed")
	}
	calls := v.callList(t)
	if len(calls) != 2 || !strings.HasPrefix(calls[1], "sysctl apply") {
		t.Fatalf("calls after a failing sysctl apply: %q", calls)
	}
}

// pre-start's first step is the real config check, on the real rendered file.
func TestPreStartConfigCheckWithTheRealBinary(t *testing.T) {
	v := install(t, mustRender(t, propertySets[2].props), cellguardBin)
	cmd := exec.Command(filepath.Join(v.root, "vcap/packages/cellguard/bin/cellguard"), "config", "check",
		"--config", filepath.Join(v.root, "vcap/jobs/cellguard/config/cellguard.json"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: 1 daemons, supervisor protect=false") {
		t.Fatalf("config check: %v\n%s", err, out)
	}
}

// A configured monit pidfile is read before protect-supervisor runs; when it
// is missing pre-start stops there instead of passing an empty --pid.
func TestPreStartMonitPidfile(t *testing.T) {
	v := install(t, mustRender(t, `{cellguard: {supervisor: {pidfile: /var/vcap/monit/monit.pid}}}`), "")
	if _, code := v.run(t, "bin/pre-start"); code == 0 {
		t.Fatal("pre-start exited 0 without the monit pidfile")
	}
	for _, c := range v.callList(t) {
		if strings.HasPrefix(c, "unit protect-supervisor") {
			t.Fatalf("protect-supervisor ran without a pid: %q", c)
		}
	}
	pidfile := filepath.Join(v.root, "vcap/monit/monit.pid")
	if err := os.MkdirAll(filepath.Dir(pidfile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pidfile, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(v.calls)
	if _, code := v.run(t, "bin/pre-start"); code != 0 {
		t.Fatalf("pre-start exit %d with the monit pidfile", code)
	}
	want := "unit protect-supervisor --pid 4242 --config " + v.root + "/vcap/jobs/cellguard/config/cellguard.json"
	found := false
	for _, c := range v.callList(t) {
		found = found || c == want
	}
	if !found {
		t.Fatalf("calls %q lack %q", v.callList(t), want)
	}
}
