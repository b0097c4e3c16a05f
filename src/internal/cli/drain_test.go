package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// drainHost is a fixture cell and the files a drain reads and writes
// beside it: config, log, lift and textfile.
type drainHost struct {
	root, cfg, log, lift, prom string
	now                        time.Time
	env                        map[string]string
}

func newDrainHost(t *testing.T, root, cfg string) *drainHost {
	t.Helper()
	dir := t.TempDir()
	d := &drainHost{root: root, cfg: filepath.Join(dir, "cellguard.json"), log: filepath.Join(dir, "drain.log"),
		lift: filepath.Join(dir, "data", "cellguard", "drain-lift.json"), prom: filepath.Join(dir, "cellguard.prom"),
		now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		env: map[string]string{"BOSH_JOB_STATE": `{"persistent_disk":0}`, "BOSH_JOB_NEXT_STATE": `{"persistent_disk":0}`}}
	writeFile(t, d.cfg, cfg)
	return d
}

// run runs `cellguard ARGS` with the host's clock and environment; drain
// and drain lift get the host's files.
func (d *drainHost) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return d.env[k] },
		Now: func() time.Time { return d.now }}
	code := Main(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// drain runs `cellguard drain` as bin/drain does, with the agent's
// arguments after --.
func (d *drainHost) drain(t *testing.T, agentArgs ...string) (int, string, string) {
	t.Helper()
	return d.run(t, append([]string{"drain", "--config", d.cfg, "--root", d.root, "--log-file", d.log,
		"--lift-file", d.lift, "--prometheus-textfile", d.prom, "--"}, agentArgs...)...)
}

func (d *drainHost) lifted(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return d.run(t, append([]string{"drain", "lift", "--config", d.cfg, "--log-file", d.log, "--lift-file", d.lift}, args...)...)
}

func (d *drainHost) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustContainAll(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// The agent's arguments, as bosh-agent v2.759.0 passes them.
var (
	jobShutdown    = []string{"job_shutdown", "hash_unchanged"}
	jobChanged     = []string{"job_changed", "hash_changed", "cellguard"}
	jobNew         = []string{"job_new", "hash_new", "cellguard", "golang-1-linux"}
	jobCheckStatus = []string{"job_check_status", "hash_unchanged"}
)

// On job_shutdown (stop, recreate, delete, scale-in) escapes are reported,
// logged and in the metrics, and the VM goes: 0 on stdout, exit 0.
func TestDrainShutdownWithEscapesLetsTheVMGo(t *testing.T) {
	h := cell(t)
	escape(h)
	d := newDrainHost(t, h.Root, `{}`)
	code, out, errOut := d.drain(t, jobShutdown...)
	if code != ExitOK || out != "0\n" {
		t.Fatalf("shutdown: exit %d stdout %q, want 0 and \"0\"\n%s", code, out, errOut)
	}
	mustContainAll(t, "stderr", errOut,
		"c1: pid 101 (app) escaped in cpu,cpuacct", "c1: pid 101 (app) escaped in blkio",
		"cellguard drain job_shutdown hash_unchanged: released_on_shutdown")
	log := d.read(t, d.log)
	mustContainAll(t, "log", log, `"message":"cellguard.drain.called"`, `"job_change":"job_shutdown"`,
		`"BOSH_JOB_STATE":"{\"persistent_disk\":0}"`, `"outcome":"released_on_shutdown"`, `"blocking_checks":["cgroup-integrity"]`,
		`"pid":"101"`)
	mustContainAll(t, "textfile", d.read(t, d.prom),
		`cellguard_validate_blocked{phase="drain"} 1`,
		`cellguard_drain_outcome{event="shutdown",outcome="released_on_shutdown"} 1`,
		`cellguard_drain_outcome{event="shutdown",outcome="blocked"} 0`,
		`cellguard_drain_could_not_run{event="shutdown"} 0`)

	// cellguard.drain.block_on_shutdown makes it block there too.
	d = newDrainHost(t, h.Root, `{"drain":{"block_on_shutdown":true}}`)
	if code, out, _ := d.drain(t, jobShutdown...); code != ExitFailed || out != "" {
		t.Fatalf("shutdown with block_on_shutdown: exit %d stdout %q, want 1 and nothing", code, out)
	}
}

// An update blocks on a blocking finding in the one way the agent
// honours: no integer on stdout (exit 1). The log names the pids.
func TestDrainUpdateWithEscapesBlocks(t *testing.T) {
	h := cell(t)
	d := newDrainHost(t, h.Root, `{}`)
	if code, out, errOut := d.drain(t, jobChanged...); code != ExitOK || out != "0\n" {
		t.Fatalf("clean update: exit %d stdout %q\n%s", code, out, errOut)
	}
	escape(h)
	for _, args := range [][]string{jobChanged, jobNew, jobCheckStatus, nil, {"job_unchanged", "hash_unchanged"}} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			d := newDrainHost(t, h.Root, `{}`)
			code, out, errOut := d.drain(t, args...)
			if code != ExitFailed || out != "" {
				t.Fatalf("exit %d stdout %q, want 1 and nothing\n%s", code, out, errOut)
			}
			mustContainAll(t, "stderr", errOut, "BLOCKED by cgroup-integrity", ": blocked: blocking findings on")
			mustContainAll(t, "log", d.read(t, d.log), `"outcome":"blocked"`, `"pid":"101"`, `"hierarchy":"blkio"`)
			mustContainAll(t, "textfile", d.read(t, d.prom), `outcome="blocked"} 1`)
		})
	}
	// validator.fix that cannot verify the move (the fixture is no kernel:
	// /proc/<pid>/cgroup does not change) still blocks.
	d = newDrainHost(t, h.Root, `{"validator":{"fix":true}}`)
	if code, out, errOut := d.drain(t, jobChanged...); code != ExitFailed || out != "" || !strings.Contains(errOut, "moved it back but it is still outside") {
		t.Fatalf("unverified fix: exit %d stdout %q\n%s", code, out, errOut)
	}
	// cellguard.drain.heal likewise, and it says per process why (a host
	// of its own: the fix above wrote the pid into the fixture's
	// cgroup.procs).
	h = cell(t)
	escape(h)
	d = newDrainHost(t, h.Root, `{"drain":{"heal":true}}`)
	if code, out, errOut := d.drain(t, jobChanged...); code != ExitFailed || out != "" ||
		!strings.Contains(errOut, "could not heal 2 (cellguard.drain.heal): pid 101 (") || !strings.Contains(errOut, "moved it back but it is still in /") {
		t.Fatalf("unverified heal: exit %d stdout %q\n%s", code, out, errOut)
	}
	mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain.heal"`, `"result":"still-outside"`)
	// The operator's blocking list decides: [] blocks nothing.
	d = newDrainHost(t, h.Root, `{"validator":{"blocking":{"drain":[]}}}`)
	if code, out, _ := d.drain(t, jobChanged...); code != ExitOK || out != "0\n" {
		t.Fatalf("blocking.drain []: exit %d stdout %q", code, out)
	}
}

// The lift unblocks a blocked update on this VM, says who and why, and
// expires on its own clock.
func TestDrainLiftUnblocksThenExpires(t *testing.T) {
	h := cell(t)
	escape(h)
	d := newDrainHost(t, h.Root, `{}`)
	if code, _, _ := d.drain(t, jobChanged...); code != ExitFailed {
		t.Fatalf("before the lift: exit %d, want blocked", code)
	}
	d.env["SUDO_USER"], d.env["SUDO_UID"] = "bosh_4f2a", "1001"
	code, out, errOut := d.lifted(t, "--reason", "INC-42: escapes known, VM recreated next", "--for", "1h")
	if code != ExitOK || !strings.Contains(out, "lifted on this VM until 2026-12-01T11:00:00Z (1h0m0s), by bosh_4f2a: INC-42") {
		t.Fatalf("lift: exit %d\n%s%s", code, out, errOut)
	}
	st, err := os.Stat(d.lift)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("lift file: %v %v, want mode 0600", st, err)
	}
	mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain-lift.lift-written"`, `"sudo_user":"bosh_4f2a"`, `"reason":"INC-42`)

	d.now = d.now.Add(59 * time.Minute)
	code, out, errOut = d.drain(t, jobChanged...)
	if code != ExitOK || out != "0\n" {
		t.Fatalf("lifted update: exit %d stdout %q, want 0 and \"0\"\n%s", code, out, errOut)
	}
	mustContainAll(t, "stderr", errOut, "BLOCKED by cgroup-integrity", ": lifted: blocking findings, let go by the lift of bosh_4f2a")
	mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain.drain-block-lifted"`, `"by":"bosh_4f2a"`, `"expires":"2026-12-01T11:00:00Z"`)
	mustContainAll(t, "textfile", d.read(t, d.prom), `cellguard_drain_outcome{event="update",outcome="lifted"} 1`)
	if _, out, _ := d.lifted(t, "--show"); !strings.Contains(out, "lift active until 2026-12-01T11:00:00Z (1m0s left), by bosh_4f2a") {
		t.Errorf("--show: %s", out)
	}

	d.now = d.now.Add(time.Minute) // 11:00: expired, nobody touched it
	code, out, _ = d.drain(t, jobChanged...)
	if code != ExitFailed || out != "" {
		t.Fatalf("after expiry: exit %d stdout %q, want blocked again", code, out)
	}
	mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain.lift-not-used"`, `"state":"expired"`)
	if _, out, _ := d.lifted(t, "--show"); !strings.Contains(out, "lift expired at 2026-12-01T11:00:00Z") {
		t.Errorf("--show after expiry: %s", out)
	}
	if code, out, _ := d.lifted(t, "--cancel"); code != ExitOK || !strings.Contains(out, "lift cancelled") {
		t.Errorf("--cancel: exit %d %s", code, out)
	}
	if _, out, _ := d.lifted(t, "--show"); !strings.Contains(out, "no lift") {
		t.Errorf("--show after cancel: %s", out)
	}
}

// A lift someone other than root could have written lifts nothing, and
// says so.
func TestDrainUntrustedLiftIsIgnored(t *testing.T) {
	h := cell(t)
	escape(h)
	d := newDrainHost(t, h.Root, `{}`)
	d.env["USER"] = "alice"
	if code, _, errOut := d.lifted(t, "--reason", "r"); code != ExitOK {
		t.Fatalf("lift: exit %d\n%s", code, errOut)
	}
	if err := os.Chmod(d.lift, 0o666); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := d.drain(t, jobChanged...)
	if code != ExitFailed || out != "" || !strings.Contains(errOut, "lift ignored") {
		t.Fatalf("untrusted lift: exit %d stdout %q\n%s", code, out, errOut)
	}
	if code, _, _ := d.lifted(t, "--show"); code != ExitFailed {
		t.Errorf("--show of an untrusted lift: exit %d, want 1", code)
	}
}

func TestDrainLiftRefusesBadInput(t *testing.T) {
	d := newDrainHost(t, t.TempDir(), `{}`)
	d.env["USER"] = "alice"
	for _, args := range [][]string{
		{},                                  // no reason
		{"--reason", "r", "--for", "25h"},   // past the cap
		{"--reason", "r", "--for", "-1m"},   // negative
		{"--reason", "r", "--show"},         // two actions
		{"--reason", "r", "extra-argument"}, // stray argument
	} {
		if code, _, errOut := d.lifted(t, args...); code != ExitCantRun {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, errOut)
		}
	}
	if _, err := os.Stat(d.lift); !os.IsNotExist(err) {
		t.Errorf("a refused lift left a file: %v", err)
	}
}

// When cellguard cannot run, drain never blocks: it prints 0, exits 2,
// says why on stderr and in the log, and the textfile (the flag's: the
// config may be what is broken) says the guard could not run.
func TestDrainCouldNotRunNeverBlocks(t *testing.T) {
	h := cell(t)
	escape(h)
	for _, tc := range []struct {
		name, cfg, root, want string
	}{
		{"unknown config key", `{"validator":{"bogus":1}}`, h.Root, `validator.bogus: unknown key`},
		{"unknown check id", `{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`, h.Root, `"cgroup-integrty": unknown check id`},
		{"unknown ignored id", `{"validator":{"ignore":["nope"]}}`, h.Root, `"nope": unknown check id`},
		{"no /proc under the root", `{}`, t.TempDir(), "proc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDrainHost(t, tc.root, tc.cfg)
			code, out, errOut := d.drain(t, jobChanged...)
			if code != ExitCantRun || out != "0\n" {
				t.Fatalf("exit %d stdout %q, want 2 and \"0\"\n%s", code, out, errOut)
			}
			mustContainAll(t, "stderr", errOut, tc.want, ": could_not_run: cellguard could not validate")
			mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain.could-not-run"`, `"outcome":"could_not_run"`)
			prom := d.read(t, d.prom)
			mustContainAll(t, "textfile", prom, `cellguard_drain_could_not_run{event="update"} 1`, `outcome="could_not_run"} 1`)
		})
	}
	// A bad flag: still the integer.
	var out, errb bytes.Buffer
	code := Main(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }},
		[]string{"drain", "--no-such-flag", "job_changed", "hash_changed"})
	if code != ExitCantRun || out.String() != "0\n" {
		t.Fatalf("bad flag: exit %d stdout %q", code, out.String())
	}
}

// The budget bounds the validation: a runtime binary that hangs on
// --version outlives it. With a confirmed escape, cgroup-integrity finished
// and blocks whatever did not finish (issue 38, hole 3: at 88f9e12 drain
// printed 0, budget_expired); on a clean cell drain reports what finished
// and lets the VM go.
func TestDrainBudgetExpiredReportsWhatFinished(t *testing.T) {
	for _, tc := range []struct {
		name    string
		escaped bool
		code    int
		out     string
		outcome string
	}{
		{"escape confirmed, another check unfinished", true, ExitFailed, "", ": blocked: blocking findings on an update"},
		{"clean, a check unfinished", false, ExitOK, "0\n", ": budget_expired: the checks did not all finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cell(t)
			if tc.escaped {
				escape(h)
			}
			hang := filepath.Join(h.Root, "usr/bin/containerd")
			writeFile(t, hang, "#!/bin/sh\nexec sleep 300\n")
			if err := os.Chmod(hang, 0o755); err != nil {
				t.Fatal(err)
			}
			d := newDrainHost(t, h.Root, `{"drain":{"budget":"1s"}}`) // the least config.Load accepts
			start := time.Now()
			code, out, errOut := d.drain(t, jobChanged...)
			if code != tc.code || out != tc.out {
				t.Fatalf("exit %d stdout %q, want %d and %q\n%s", code, out, tc.code, tc.out, errOut)
			}
			took := time.Since(start)
			mustContainAll(t, "stderr", errOut, "[ERROR] runtime-versions", "did not finish before the run ended", tc.outcome)
			if tc.escaped {
				mustContainAll(t, "stderr", errOut, "c1: pid 101 (app) escaped in blkio") // finished, reported
			}
			mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain.budget-expired"`, `"unfinished":["runtime-versions"]`)
			outcome := "budget_expired"
			if tc.escaped {
				outcome = "blocked"
			}
			mustContainAll(t, "textfile", d.read(t, d.prom), `outcome="`+outcome+`"} 1`, `cellguard_check_status{check="runtime-versions",phase="drain"} 3`)
			t.Logf("drain with a 300ms budget and a hung runtime returned after %v", took)
		})
	}
}

func TestDrainHelpStatesTheContract(t *testing.T) {
	d := newDrainHost(t, t.TempDir(), `{}`)
	code, out, errOut := d.run(t, "drain", "--help")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	mustContainAll(t, "help", out, "bosh-agent v2.759.0", "job_shutdown", "Exit codes:", "cellguard drain lift --reason TEXT")
}
