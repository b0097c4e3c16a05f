package jobs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// The rendered scripts run here against a /var/vcap relocated into a temp
// dir, with cellguard either a stub that records its calls or the real
// binary.

const stub = `#!/usr/bin/env bash
# bin/drain's bound on cellguard drain is Go's (cellguard drain timeout),
# and so is pre-start's on validate (cellguard validate timeout): the real
# binary answers, on the rendered config, unrecorded.
if [ "$1 ${2:-}" = "drain timeout" ] || [ "$1 ${2:-}" = "validate timeout" ]; then
  exec @REAL_CELLGUARD@ "$@"
fi
printf '%s\n' "$*" >>"${STUB_CALLS}"
# bin/drain's fallback textfile is written by the real binary: what it
# writes, and how, is what the tests check.
if [ "$1 ${2:-}" = "drain could-not-run" ]; then
  exec @REAL_CELLGUARD@ "$@"
fi
env | grep -E '^BOSH_JOB_(NEXT_)?STATE=' | sort >"${STUB_CALLS}.env"
echo "stub: a log line on stderr" >&2
if [ "$1" = drain ]; then
  case "${STUB_DRAIN:-pass}" in
    pass) echo 0 ;;
    wait) echo 30 ;;
    blocked) exit 1 ;;
    blocked-but-printed) echo 0; exit 1 ;;
    could-not-run) echo 0; exit 2 ;;
    could-not-run-silent) exit 2 ;;
    crash) kill -SEGV $$ ;;
    hang) exec sleep 300 ;;
    hang-ignoring-term) trap '' TERM; exec sleep 300 ;;
    # A probe left behind in a process group of its own (as boundedexec
    # runs probes), holding every descriptor cellguard had, and cellguard
    # hung, deaf to SIGTERM.
    # The probe writes its pid once it has left this group, and the stub
    # its own once it ignores SIGTERM: then the test cancels.
    hang-with-probe)
      setsid bash -c 'echo "$$" >"$1.probe"; exec sleep 300' _ "${STUB_CALLS}" </dev/null &
      trap '' TERM
      echo "$$" >"${STUB_CALLS}.pid"
      exec sleep 300
      ;;
    garbage) echo "validated 3 containers" ;;
    negative) echo -5 ;;
  esac
  exit 0
fi
if [ "$1" = validate ]; then
  case "${STUB_VALIDATE:-pass}" in
    hang) exec sleep 300 ;;
    blocked) exit 1 ;;
  esac
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
		text := strings.ReplaceAll(stub, "@REAL_CELLGUARD@", cellguardBin)
		if err := render.WriteFile(filepath.Join(pkgBin, "cellguard"), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Symlink(bin, filepath.Join(pkgBin, "cellguard")); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v vcap) run(t *testing.T, script string, env ...string) (stdout string, code int) {
	t.Helper()
	return v.runWith(t, script, []string{"job_changed", "hash_changed", "cellguard"}, env...)
}

func (v vcap) runWith(t *testing.T, script string, args []string, env ...string) (stdout string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(v.root, "vcap/jobs/cellguard", script), args...)
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

// textfileProps sets the textfile into the relocated /var/vcap, so the
// wrapper's own could-not-run metrics can be read.
const textfileProps = `{cellguard: {drain: {budget: 1s}, validator: {prometheus_textfile: /var/vcap/data/node_exporter/cellguard.prom}}}`

// The wrapper lets exactly one verdict fail the agent's step: cellguard
// exiting 1 with nothing on stdout. Every other outcome prints 0 and says
// why in the log; where cellguard could not say so itself, the textfile
// says the guard could not run.
func TestDrainWrapperLetsOnlyTheVerdictBlock(t *testing.T) {
	r := mustRender(t, textfileProps)
	testCases := []struct {
		name       string
		stub       string // STUB_DRAIN, or "missing", "not-executable"
		wantStdout string
		wantCode   int
		wantLog    string
		wantMetric bool // the wrapper wrote cellguard_drain_could_not_run 1
	}{
		{name: "pass", stub: "pass", wantStdout: "0\n", wantLog: "cellguard drain printed 0"},
		{name: "an integer is passed through", stub: "wait", wantStdout: "30\n", wantLog: "cellguard drain printed 30"},
		{name: "blocked: nothing on stdout, exit 1", stub: "blocked", wantCode: 1, wantLog: "BLOCKED: cellguard found blocking findings"},
		{name: "exit 1 with an integer is no verdict", stub: "blocked-but-printed", wantStdout: "0\n", wantLog: "NOT BLOCKING"},
		{name: "could not run", stub: "could-not-run", wantStdout: "0\n", wantLog: "cellguard could not run (exit 2)"},
		// Exit 2 without the integer cellguard prints before its own exit
		// 2 is Go's exit on a panic or fatal error: a crash.
		{name: "exit 2, nothing printed: a Go crash", stub: "could-not-run-silent", wantStdout: "0\n", wantLog: "exited 2 with no integer: a Go panic or fatal error", wantMetric: true},
		{name: "crash", stub: "crash", wantStdout: "0\n", wantLog: "ended with exit 139 (a signal or a crash)", wantMetric: true},
		{name: "hang: ended at budget + grace", stub: "hang", wantStdout: "0\n", wantLog: "did not end within 3s (its budget and grace); timeout ended it", wantMetric: true},
		{name: "hang ignoring SIGTERM: killed", stub: "hang-ignoring-term", wantStdout: "0\n", wantLog: "did not end on SIGTERM; timeout killed it", wantMetric: true},
		{name: "garbage on stdout", stub: "garbage", wantStdout: "0\n", wantLog: "stdout that is not its verdict: 'validated 3 containers'"},
		{name: "a negative integer is no verdict", stub: "negative", wantStdout: "0\n", wantLog: "stdout that is not its verdict: '-5'"},
		// With no cellguard to run, nothing writes the textfile: bash
		// would write it through a name others can plant (issue 23).
		{name: "binary missing", stub: "missing", wantStdout: "0\n", wantLog: "cellguard is missing or not executable", wantMetric: false},
		{name: "binary not executable", stub: "not-executable", wantStdout: "0\n", wantLog: "cellguard is missing or not executable", wantMetric: false},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := install(t, r, "")
			bin := filepath.Join(v.root, "vcap/packages/cellguard/bin/cellguard")
			switch tc.stub {
			case "missing":
				if err := os.Remove(bin); err != nil {
					t.Fatal(err)
				}
			case "not-executable":
				if err := os.Chmod(bin, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			prom := filepath.Join(v.root, "vcap/data/node_exporter/cellguard.prom")
			if err := os.MkdirAll(filepath.Dir(prom), 0o755); err != nil {
				t.Fatal(err)
			}
			out, code := v.runWith(t, "bin/drain", []string{"job_changed", "hash_changed", "cellguard"}, "STUB_DRAIN="+tc.stub)
			log := v.drainLog(t)
			if code != tc.wantCode || out != tc.wantStdout {
				t.Fatalf("drain: exit %d stdout %q, want exit %d stdout %q\nlog:\n%s", code, out, tc.wantCode, tc.wantStdout, log)
			}
			for _, want := range []string{tc.wantLog, "bin/drain: called: job_changed hash_changed cellguard"} {
				if !strings.Contains(log, want) {
					t.Errorf("drain.log lacks %q:\n%s", want, log)
				}
			}
			b, err := os.ReadFile(prom)
			switch {
			case tc.wantMetric && (err != nil || !strings.Contains(string(b), `cellguard_drain_could_not_run{event="update"} 1`) ||
				!strings.Contains(string(b), `cellguard_drain_outcome{event="update",outcome="could_not_run"} 1`)):
				t.Errorf("no could-not-run textfile (%v):\n%s", err, b)
			case !tc.wantMetric && err == nil:
				t.Errorf("the wrapper wrote a textfile although cellguard ran:\n%s", b)
			}
			if ents, _ := os.ReadDir(filepath.Dir(prom)); len(ents) > 1 {
				t.Errorf("temp files left beside the textfile: %v", ents)
			}
			if tc.stub == "missing" || tc.stub == "not-executable" {
				if !strings.Contains(log, "could not record in "+prom+" that the guard could not run") {
					t.Errorf("drain.log does not say the textfile is stale:\n%s", log)
				}
				return
			}
			calls := v.callList(t)
			want := "drain --config " + v.root + "/vcap/jobs/cellguard/config/cellguard.json --log-file " + v.root +
				"/vcap/sys/log/cellguard/drain.log --prometheus-textfile " + prom + " -- job_changed hash_changed cellguard"
			// Where cellguard could not write its textfile, bin/drain has
			// the real binary's could-not-run write it (the stub execs it).
			fallback := "drain could-not-run --log-file " + v.root + "/vcap/sys/log/cellguard/drain.log --prometheus-textfile " + prom + " --why "
			switch {
			case len(calls) == 0 || calls[0] != want:
				t.Fatalf("calls %q, want %q first", calls, want)
			case !tc.wantMetric && len(calls) != 1:
				t.Fatalf("calls %q, want only %q", calls, want)
			case tc.wantMetric && (len(calls) != 2 || !strings.HasPrefix(calls[1], fallback) || !strings.HasSuffix(calls[1], " -- job_changed hash_changed cellguard")):
				t.Fatalf("calls %q, want %q then %q...", calls, want, fallback)
			}
		})
	}
}

// The wrapper passes the agent's arguments through untouched, and with no
// textfile configured passes no --prometheus-textfile.
func TestDrainWrapperArguments(t *testing.T) {
	v := install(t, mustRender(t, ""), "")
	if out, code := v.runWith(t, "bin/drain", []string{"job_shutdown", "hash_unchanged"}); code != 0 || out != "0\n" {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	want := "drain --config " + v.root + "/vcap/jobs/cellguard/config/cellguard.json --log-file " + v.root +
		"/vcap/sys/log/cellguard/drain.log -- job_shutdown hash_unchanged"
	if calls := v.callList(t); len(calls) != 1 || calls[0] != want {
		t.Fatalf("calls %q, want [%q]", calls, want)
	}
}

// A log that cannot be written must not become a block: a failed
// redirection ends a bash script, which would print no integer.
func TestDrainWrapperWithoutItsLog(t *testing.T) {
	v := install(t, mustRender(t, ""), "")
	logDir := filepath.Join(v.root, "vcap/sys/log/cellguard")
	if err := os.MkdirAll(filepath.Dir(logDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logDir, []byte("a file where the log dir should be"), 0o644); err != nil {
		t.Fatal(err)
	}
	for stub, want := range map[string]string{"pass": "0\n", "crash": "0\n", "blocked": ""} {
		if out, _ := v.runWith(t, "bin/drain", []string{"job_changed", "hash_changed"}, "STUB_DRAIN="+stub); out != want {
			t.Errorf("%s without a log: stdout %q, want %q", stub, out, want)
		}
	}
}

// With the real binary on this host (no config file at the rendered path:
// cellguard cannot run), drain prints 0 and does not block.
func TestDrainWithTheRealBinary(t *testing.T) {
	v := install(t, mustRender(t, ""), cellguardBin)
	if err := os.Remove(filepath.Join(v.root, "vcap/jobs/cellguard/config/cellguard.json")); err != nil {
		t.Fatal(err)
	}
	out, code := v.run(t, "bin/drain")
	if code != 0 || out != "0\n" {
		t.Fatalf("drain with the real cellguard and no config: exit %d, stdout %q\nlog:\n%s", code, out, v.drainLog(t))
	}
	for _, want := range []string{`"message":"cellguard.drain.could-not-run"`, "cellguard could not run (exit 2)"} {
		if !strings.Contains(v.drainLog(t), want) {
			t.Errorf("drain.log lacks %q:\n%s", want, v.drainLog(t))
		}
	}
}

func TestPreStartSteps(t *testing.T) {
	r := mustRender(t, propertySets[1].props) // garden cell
	v := install(t, r, "")
	cfg := v.root + "/vcap/jobs/cellguard/config/cellguard.json"
	want := []string{
		"config check --config " + cfg,
		"sysctl apply --config " + cfg,
		"unit install garden --start /var/vcap/jobs/garden/bin/garden_start --stop /var/vcap/jobs/garden/bin/garden_stop --pidfile /var/vcap/sys/run/garden/garden.pid --type forking --config " + cfg,
		"unit prune --config " + cfg,
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

// pre-start bounds validate by `cellguard validate timeout` (the budget and
// a grace): a validate that outlives it is ended and pre-start goes on,
// saying so, so a stuck check cannot wedge a rollout; a blocked validate
// (a finished blocking check) still fails pre-start (issue 38, hole 3).
func TestPreStartBoundsValidate(t *testing.T) {
	v := install(t, mustRender(t, `{cellguard: {validator: {budget: 1s}}}`), "")
	start := time.Now()
	out, code := v.run(t, "bin/pre-start", "STUB_VALIDATE=hang")
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "NOT BLOCKING: cellguard validate did not end within 3s") {
		t.Fatalf("pre-start with a hung validate: exit %d after %v, stdout:\n%s", code, took, out)
	}
	if took > 20*time.Second {
		t.Fatalf("pre-start took %v with a 3s bound", took)
	}
	if _, code := v.run(t, "bin/pre-start", "STUB_VALIDATE=blocked"); code != 1 {
		t.Fatalf("pre-start with a blocked validate: exit %d, want 1", code)
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
