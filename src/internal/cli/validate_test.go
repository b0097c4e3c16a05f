package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// runValidateCLI runs cellguard validate on a fixture root with config
// cfg (JSON) and returns exit code, stdout, stderr.
func runValidateCLI(t *testing.T, root, cfg string, args ...string) (int, string, string) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "cellguard.json")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"validate", "--config", cfgPath, "--root", root}, args...)
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, all)
	return code, out.String(), errb.String()
}

// cell is a hybrid fixture host with two Garden containers.
func cell(t *testing.T) *fakehost.Host {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 3, 500)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c2", Cgroup: "/garden/c2"}, 200, 2, 600)
	return h
}

// escape is seed-000: systemd moved a container process's cpu and blkio.
func escape(h *fakehost.Host) {
	h.Move(101, "cpu,cpuacct", "/system.slice/garden.service")
	h.Move(101, "blkio", "/system.slice/garden.service")
}

func TestValidatePreStart(t *testing.T) {
	h := cell(t)
	code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start")
	if code != ExitOK {
		t.Fatalf("clean cell: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "pre-start: ok") || !strings.Contains(out, "pass    cgroup-integrity") {
		t.Fatalf("stdout:\n%s", out)
	}
	escape(h)
	code, out, _ = runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start")
	if code != ExitFailed {
		t.Fatalf("escape: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"BLOCKED by cgroup-integrity",
		"c1: pid 101 (app) escaped in cpu,cpuacct: in /system.slice/garden.service, state says /garden/c1",
		"c1: pid 101 (app) escaped in blkio: in /system.slice/garden.service, state says /garden/c1",
		"fix: Run `cellguard validate --fix`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// --phase drain: stdout is the integer 0 when nothing blocks and empty
// when something does, so a wrapper that forgets the exit code still fails
// closed, as the agent fails a drain whose stdout holds no integer.
func TestValidateDrainStdoutIsOnlyTheInteger(t *testing.T) {
	h := cell(t)
	code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "drain")
	if code != ExitOK || out != "0\n" {
		t.Fatalf("clean drain: exit %d, stdout %q\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "drain: ok") {
		t.Fatalf("the report belongs on stderr:\n%s", errOut)
	}
	escape(h)
	for _, format := range []string{"human", "json"} {
		code, out, errOut = runValidateCLI(t, h.Root, `{}`, "--phase", "drain", "--format", format)
		if code != ExitFailed || out != "" {
			t.Fatalf("%s: blocked drain: exit %d, stdout %q, want 1 and nothing", format, code, out)
		}
		if !strings.Contains(errOut, "/system.slice/garden.service") {
			t.Fatalf("%s: evidence missing from stderr:\n%s", format, errOut)
		}
	}
}

// validate --phase drain decides as the next update's drain: for every
// outcome drain.Decide has, the same stdout (what bosh-agent reads,
// whatever the exit status) and the same exit code as `cellguard drain
// job_changed`, on the same host with the same config and lift.
func TestValidateDrainDecidesAsDrain(t *testing.T) {
	const badID = `{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`
	testCases := []struct {
		name, cfg string
		setup     func(t *testing.T, h *fakehost.Host, d *drainHost)
		wantCode  int
		wantOut   string
		outcome   string
	}{
		{"pass", `{}`, nil, ExitOK, "0\n", "pass"},
		{"blocked", `{}`, escapedCell, ExitFailed, "", "blocked"},
		{"lifted", `{}`, liftedCell, ExitOK, "0\n", "lifted"},
		{"budget expired", `{"drain":{"budget":"1s"}}`, hungRuntime, ExitOK, "0\n", "budget_expired"},
		{"blocked although the budget expired", `{"drain":{"budget":"1s"}}`, hungEscapedRuntime, ExitFailed, "", "blocked"},
		{"could not run", badID, escapedCell, ExitCantRun, "0\n", "could_not_run"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			h := cell(t)
			d := newDrainHost(t, h.Root, tc.cfg)
			if tc.setup != nil {
				tc.setup(t, h, d)
			}
			dc, dout, derr := d.drain(t, jobChanged...)
			vc, vout, verr := d.run(t, "validate", "--phase", "drain", "--config", d.cfg, "--root", d.root,
				"--log-file", d.log, "--lift-file", d.lift)
			if dc != tc.wantCode || dout != tc.wantOut {
				t.Fatalf("drain: exit %d stdout %q, want %d %q\n%s", dc, dout, tc.wantCode, tc.wantOut, derr)
			}
			if vc != dc || vout != dout {
				t.Fatalf("validate --phase drain: exit %d stdout %q; drain: exit %d stdout %q\n%s", vc, vout, dc, dout, verr)
			}
			mustContainAll(t, "drain's stderr", derr, ": "+tc.outcome+": ")
			mustContainAll(t, "validate's stderr", verr, "cellguard validate --phase drain: "+tc.outcome+": ")
			mustContainAll(t, "validate's log", d.read(t, d.log), `"message":"cellguard.validate.decided"`, `"outcome":"`+tc.outcome+`"`)
			if tc.outcome == "could_not_run" {
				return
			}
			// --format json: stderr is one JSON document (tools and the
			// errand's --json form parse it), the same verdict.
			jc, jout, jerr := d.run(t, "validate", "--phase", "drain", "--format", "json", "--config", d.cfg, "--root", d.root,
				"--log-file", d.log, "--lift-file", d.lift)
			var rep map[string]any
			if jc != dc || jout != dout || json.Unmarshal([]byte(jerr), &rep) != nil {
				t.Fatalf("--format json: exit %d stdout %q, stderr not one JSON document:\n%s", jc, jout, jerr)
			}
		})
	}
}

// A flag validate cannot read, in the drain phase, is could not run as in
// cellguard drain: the integer 0 and exit 2. --help stays help.
func TestValidateDrainBadFlagKeepsTheContract(t *testing.T) {
	h := cell(t)
	for _, tc := range []struct {
		args    []string
		code    int
		wantOut string
	}{
		{[]string{"--phase", "drain", "--no-such-flag"}, ExitCantRun, "0\n"},
		{[]string{"--no-such-flag", "--phase=drain"}, ExitCantRun, "0\n"},
		{[]string{"--phase", "drain", "--budget", "soon"}, ExitCantRun, "0\n"},
		{[]string{"--budget", "soon", "--phase", "drain"}, ExitCantRun, "0\n"},
		{[]string{"--phase", "pre-start", "--no-such-flag"}, ExitCantRun, ""},
		{[]string{"--no-such-flag"}, ExitCantRun, ""},
		// Help is asked for by a person, never by the agent: it goes to stdout.
		{[]string{"--phase", "drain", "--help"}, ExitOK, "usage: cellguard validate"},
	} {
		code, out, errOut := runValidateCLI(t, h.Root, `{}`, tc.args...)
		if code != tc.code || (out != tc.wantOut && !(strings.HasPrefix(tc.wantOut, "usage:") && strings.HasPrefix(out, tc.wantOut))) {
			t.Errorf("%q: exit %d stdout %q, want %d %q\n%s", tc.args, code, out, tc.code, tc.wantOut, errOut)
		}
	}
}

// escapedCell is seed-000 on the drain host's cell.
func escapedCell(_ *testing.T, h *fakehost.Host, _ *drainHost) { escape(h) }

// liftedCell is an escaped cell whose block an operator lifted.
func liftedCell(t *testing.T, h *fakehost.Host, d *drainHost) {
	escape(h)
	d.env["USER"] = "alice"
	if code, _, errOut := d.lifted(t, "--reason", "INC-7: escapes known"); code != ExitOK {
		t.Fatalf("lift: exit %d\n%s", code, errOut)
	}
}

// hungEscapedRuntime is hungRuntime on an escaped cell: cgroup-integrity
// finishes and blocks, whatever did not finish.
func hungEscapedRuntime(t *testing.T, h *fakehost.Host, d *drainHost) {
	escape(h)
	hungRuntime(t, h, d)
}

// hungRuntime is a cell whose containerd hangs on --version, past any
// short budget.
func hungRuntime(t *testing.T, h *fakehost.Host, _ *drainHost) {
	hang := filepath.Join(h.Root, "usr/bin/containerd")
	writeFile(t, hang, "#!/bin/sh\nexec sleep 300\n")
	if err := os.Chmod(hang, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestValidateJSONAndPrometheus(t *testing.T) {
	h := cell(t)
	escape(h)
	h.Kill(200) // c2's init is gone: a ghost, a warning
	prom := filepath.Join(t.TempDir(), "cellguard.prom")
	code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start", "--format", "json", "--prometheus-textfile", prom)
	if code != ExitFailed {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rep struct {
		Phase   string `json:"phase"`
		Blocked bool   `json:"blocked"`
		Results []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Findings []struct {
				Data map[string]string `json:"data"`
			} `json:"findings"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	status := map[string]string{}
	for _, r := range rep.Results {
		status[r.ID] = r.Status
	}
	if !rep.Blocked || rep.Phase != "pre-start" || status["cgroup-integrity"] != "fail" || status["runtime-ghosts"] != "warn" {
		t.Fatalf("report %+v", rep)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`cellguard_check_status{check="cgroup-integrity",phase="pre-start"} 2`,
		`cellguard_check_findings{check="cgroup-integrity",phase="pre-start"} 2`,
		`cellguard_check_status{check="runtime-ghosts",phase="pre-start"} 1`,
		`cellguard_validate_blocked{phase="pre-start"} 1`,
	} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("textfile lacks %s:\n%s", want, b)
		}
	}
}

func TestValidateIgnoreAndBlockingLists(t *testing.T) {
	h := cell(t)
	escape(h)
	testCases := []struct {
		name string
		cfg  string
		args []string
		want int
	}{
		{"flag ignore", `{}`, []string{"--ignore", "cgroup-integrity"}, ExitOK},
		{"flag ignore all", `{}`, []string{"--ignore", "all"}, ExitOK},
		{"config ignore", `{"validator":{"ignore":["cgroup-integrity"]}}`, nil, ExitOK},
		{"blocking list without the check downgrades it", `{"validator":{"blocking":{"drain":["runtime-ghosts"]}}}`, nil, ExitOK},
		{"blocking list for the other phase changes nothing", `{"validator":{"blocking":{"pre-start":[]}}}`, nil, ExitFailed},
		{"unknown id in --ignore", `{}`, []string{"--ignore", "cgroup-integrty"}, ExitCantRun},
		{"unknown id in a blocking list", `{"validator":{"blocking":{"drain":["nope"]}}}`, nil, ExitCantRun},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--phase", "drain"}, tc.args...)
			code, out, errOut := runValidateCLI(t, h.Root, tc.cfg, args...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr:\n%s", code, tc.want, out, errOut)
			}
			if code == ExitCantRun && out != "0\n" {
				t.Fatalf("could-not-run in the drain phase prints drain's 0, got %q", out)
			}
		})
	}
	// A blocking list that names a check makes it block even as a warning.
	h.Kill(200)
	code, _, _ := runValidateCLI(t, h.Root, `{"validator":{"blocking":{"drain":["runtime-ghosts"]}}}`, "--phase", "drain", "--ignore", "cgroup-integrity")
	if code != ExitFailed {
		t.Fatalf("ghost with runtime-ghosts blocking: exit %d", code)
	}
}

func TestValidateCannotRun(t *testing.T) {
	h := cell(t)
	// In the drain phase, could not run is drain's could_not_run: the
	// integer 0 (a broken guard does not hold the VM) and exit 2.
	testCases := []struct {
		name    string
		root    string
		args    []string
		wantOut string
	}{
		{"no phase", h.Root, nil, ""},
		{"bad phase", h.Root, []string{"--phase", "post-start"}, ""},
		{"bad format", h.Root, []string{"--phase", "pre-start", "--format", "yaml"}, ""},
		{"bad format, drain", h.Root, []string{"--phase", "drain", "--format", "yaml"}, "0\n"},
		{"stray argument", h.Root, []string{"--phase", "drain", "job_changed"}, "0\n"},
		{"drain's flag without drain", h.Root, []string{"--phase", "pre-start", "--lift-file", "/x"}, ""},
		{"no proc under root", t.TempDir(), []string{"--phase", "pre-start"}, ""},
		{"no proc under root, drain", t.TempDir(), []string{"--phase", "drain"}, "0\n"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runValidateCLI(t, tc.root, `{}`, tc.args...)
			if code != ExitCantRun || out != tc.wantOut {
				t.Fatalf("exit %d stdout %q, want 2 and %q\n%s", code, out, tc.wantOut, errOut)
			}
			if !strings.Contains(errOut, "cellguard: error: ") && !strings.Contains(errOut, "flag") {
				t.Fatalf("no error message:\n%s", errOut)
			}
		})
	}
	code, _, _ := runValidateCLI(t, h.Root, `{"validator":{"bogus":1}}`, "--phase", "drain")
	if code != ExitCantRun {
		t.Fatalf("bad config: exit %d", code)
	}
	// A tree with proc/ but no proc/stat: the checks that need the boot
	// time name the missing file, not "process is gone".
	noStat := t.TempDir()
	if err := os.MkdirAll(filepath.Join(noStat, "proc", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runValidateCLI(t, noStat, `{}`, "--phase", "pre-start", "--format", "json")
	if want := filepath.Join(noStat, "proc", "stat") + " does not exist"; code != ExitFailed || !strings.Contains(out, want) || strings.Contains(out, "process is gone") {
		t.Fatalf("no proc/stat: exit %d, want %q in\n%s%s", code, want, out, errOut)
	}
}

func TestValidateHelpDocumentsExitCodesAndDrain(t *testing.T) {
	code, errOut, out := runValidateCLI(t, "/", `{}`, "--help")
	if code != ExitOK || out != "" {
		t.Fatalf("exit %d stderr %q", code, out)
	}
	for _, want := range []string{"Exit codes:", "nothing at all when it blocks", "same decision as \"cellguard drain job_changed\"", "--fix", "cgroup-integrity", "never signals or kills"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("help lacks %q:\n%s", want, errOut)
		}
	}
}

// A textfile that cannot be written is reported; the verdict stands (a
// missing collector directory must not fail a drain).
func TestValidatePrometheusWriteFailureKeepsVerdict(t *testing.T) {
	h := cell(t)
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "cellguard.prom")
	code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "drain", "--prometheus-textfile", bad)
	if code != ExitOK || out != "0\n" {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	if !strings.Contains(errOut, "cellguard: error: write prometheus textfile") {
		t.Fatalf("write failure not reported:\n%s", errOut)
	}
	// The config's textfile is used when the flag is absent.
	prom := filepath.Join(t.TempDir(), "from-config.prom")
	code, _, errOut = runValidateCLI(t, h.Root, `{"validator":{"prometheus_textfile":"`+prom+`"}}`, "--phase", "pre-start")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if b, err := os.ReadFile(prom); err != nil || !strings.Contains(string(b), `cellguard_validate_blocked{phase="pre-start"} 0`) {
		t.Fatalf("config textfile: %v\n%s", err, b)
	}
}

// --runtime-root replaces the config's roots; containers elsewhere are not
// looked at.
func TestValidateRuntimeRootFlag(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/var/vcap/data/garden/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 2, 500)
	h.Move(101, "", "/system.slice/garden.service")
	code, _, _ := runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start")
	if code != ExitOK {
		t.Fatalf("default roots do not hold c1: exit %d", code)
	}
	code, out, _ := runValidateCLI(t, h.Root, `{"validator":{"runtime_roots":["/run/runc"]}}`, "--phase", "pre-start",
		"--runtime-root", "/var/vcap/data/garden/runc")
	if code != ExitFailed || !strings.Contains(out, "c1: pid 101 (app) escaped in unified") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// With cellguard.drain.heal, validate --phase drain predicts drain's heal
// without moving anything: an escape whose recorded cgroup is there is one
// drain would move back (healed, exit 0, the integer), one whose cgroup is
// gone one it could not (blocked, naming why, as drain's reason does); the
// fixture's cgroup.procs files are left as they were. Heal off, any escape
// blocks, as drain does.
func TestValidateDrainPredictsDrainsHeal(t *testing.T) {
	const healOn = `{"drain":{"heal":true}}`
	procs := func(h *fakehost.Host) string {
		b, err := os.ReadFile(filepath.Join(h.Root, "sys/fs/cgroup/blkio/garden/c1/cgroup.procs"))
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	validate := func(d *drainHost) (int, string, string) {
		return d.run(t, "validate", "--phase", "drain", "--config", d.cfg, "--root", d.root, "--log-file", d.log, "--lift-file", d.lift)
	}

	h := cell(t)
	escape(h)
	before := procs(h)
	d := newDrainHost(t, h.Root, healOn)
	code, out, errOut := validate(d)
	if code != ExitOK || out != "0\n" {
		t.Errorf("healable: exit %d stdout %q, want 0 and \"0\" (drain would heal)\n%s", code, out, errOut)
	}
	t.Logf("healable: %s", decisionLine(errOut))
	mustContainAll(t, "healable: stderr", errOut, "cellguard validate --phase drain: healed: ",
		"drain would move 1 escaped process back into the cgroups their runtime recorded")
	if after := procs(h); after != before {
		t.Errorf("the prediction wrote cgroup.procs: %q, was %q", after, before)
	}

	d = newDrainHost(t, h.Root, `{}`)
	if code, out, errOut := validate(d); code != ExitFailed || out != "" || !strings.Contains(errOut, ": blocked: ") {
		t.Errorf("heal off: exit %d stdout %q, want 1 and nothing, blocked\n%s", code, out, errOut)
	}

	// The recorded blkio cgroup is gone (the fleet's drain_unhealable):
	// drain blocks, naming it, and the prediction says the same.
	h = cell(t)
	escape(h)
	if err := os.RemoveAll(filepath.Join(h.Root, "sys/fs/cgroup/blkio/garden/c1")); err != nil {
		t.Fatal(err)
	}
	d = newDrainHost(t, h.Root, healOn)
	vc, vout, verr := validate(d)
	dc, dout, derr := d.drain(t, jobChanged...)
	// (Drain also names c1's cpu move, which a fixture cannot verify: it
	// is no kernel, and /proc/101/cgroup does not change.)
	if dc != ExitFailed || dout != "" || !strings.Contains(derr, "pid 101 (app) of c1 in blkio: moving it back failed") {
		t.Fatalf("unhealable: drain exit %d stdout %q, want blocked naming pid 101 in blkio\n%s", dc, dout, derr)
	}
	if vc != dc || vout != dout {
		t.Errorf("unhealable: validate exit %d stdout %q; drain exit %d stdout %q\n%s", vc, vout, dc, dout, verr)
	}
	t.Logf("unhealable: %s", decisionLine(verr))
	mustContainAll(t, "unhealable: validate's stderr", verr, "cellguard validate --phase drain: blocked: ",
		"drain would not heal 1 (cellguard.drain.heal): pid 101 (app) of c1 in blkio: moving it back would fail")
}

// decisionLine is validate --phase drain's decision, its last line on
// stderr (the report's heading starts alike).
func decisionLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

// Today's Garden with CPU throttling on, on cgroup v2: a privileged
// container's record names /garden/good/<h>, which nothing made, while runc
// put it at /system.slice/<h>. pre-start is not blocked, --fix moves
// nothing and makes no cgroup, and the report says the record is false.
func TestValidateFixLeavesFalseRecords(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Cgroup("/garden/good")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "p2",
		Cgroup: "/system.slice/p2", Recorded: "/garden/good/p2"}, 1445, 1, 900)
	h.Write("sys/fs/cgroup/system.slice/p2/cgroup.type", "domain\n")
	code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start", "--fix")
	if code != ExitOK {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitOK, out, errOut)
	}
	mustContainAll(t, "stdout", out, "warn    cgroup-integrity",
		"pid 1445 (garden-init) is in /system.slice/p2, but state says /garden/good/p2 (unified), a cgroup that does not exist")
	if strings.Contains(out, "escaped") || strings.Contains(out, "could not read") {
		t.Errorf("stdout:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(h.Root, "sys/fs/cgroup/garden/good/p2")); !os.IsNotExist(err) {
		t.Fatalf("--fix made the false record's cgroup: %v", err)
	}
}
