package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/clock"
	boshas "github.com/cloudfoundry/bosh-agent/v2/agent/applier/applyspec"
	boshscript "github.com/cloudfoundry/bosh-agent/v2/agent/script"
	boshdrain "github.com/cloudfoundry/bosh-agent/v2/agent/script/drain"
	boshlog "github.com/cloudfoundry/bosh-utils/logger"
	boshsys "github.com/cloudfoundry/bosh-utils/system"
)

// The rendered bin/drain run by bosh-agent v2.759.0's own drain code: the
// arguments and BOSH_JOB_STATE / BOSH_JOB_NEXT_STATE built from apply
// specs by agent/script/drain/script_params.go, the script run and its
// stdout parsed by concrete_script.go with the agent's exec runner, and
// the step's verdict summarized by agent/script/parallel_script.go, as
// agent/action/drain.go composes them. What fails here fails the director's
// task; the director shows the error text below to bosh-cli.

// applySpec decodes an apply spec as the director sends it.
func applySpec(t *testing.T, doc string) boshas.V1ApplySpec {
	t.Helper()
	var s boshas.V1ApplySpec
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatalf("apply spec: %v", err)
	}
	return s
}

const (
	// specV1 is a cell running cellguard; specV2 changes its package and
	// configuration, as a deploy of a new cellguard release does.
	specV1 = `{"job":{"name":"diego-cell","templates":[{"name":"cellguard","version":"j1"}]},
	  "packages":{"cellguard":{"name":"cellguard","version":"p1","sha1":"1111111111111111111111111111111111111111"},
	              "golang-1-linux":{"name":"golang-1-linux","version":"g1","sha1":"2222222222222222222222222222222222222222"}},
	  "configuration_hash":"c1","persistent_disk":0,"rendered_templates_archive":{"blobstore_id":"b1","sha1":"3333333333333333333333333333333333333333"}}`
	specV2 = `{"job":{"name":"diego-cell","templates":[{"name":"cellguard","version":"j2"}]},
	  "packages":{"cellguard":{"name":"cellguard","version":"p2","sha1":"4444444444444444444444444444444444444444"},
	              "golang-1-linux":{"name":"golang-1-linux","version":"g1","sha1":"2222222222222222222222222222222222222222"}},
	  "configuration_hash":"c2","persistent_disk":1024,"rendered_templates_archive":{"blobstore_id":"b2","sha1":"5555555555555555555555555555555555555555"}}`
	// specEmpty is a VM with no jobs yet (its first deploy).
	specEmpty = `{"job":{"name":"diego-cell","templates":[]},"packages":{},"configuration_hash":"","persistent_disk":0}`
)

// sleepRecorder is the agent's clock with Sleep recorded, not slept:
// ConcreteScript.Run sleeps for the integer the script printed (seconds),
// which is how the agent takes the drain's answer.
type sleepRecorder struct {
	clock.Clock
	mu    sync.Mutex
	slept []time.Duration
}

func (c *sleepRecorder) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
}

// agentDrain runs the installed bin/drain as the agent does and returns
// what the agent slept for the script's integer, the script's error (what
// the agent records for the job) and the step's (what the director's task
// fails with).
func agentDrain(t *testing.T, v vcap, params boshdrain.ScriptParams) (slept []time.Duration, scriptErr, stepErr error) {
	t.Helper()
	logger := boshlog.NewLogger(boshlog.LevelNone)
	fs := boshsys.NewOsFileSystem(logger)
	runner := boshsys.NewExecCmdRunner(logger)
	path := filepath.Join(v.root, "vcap/jobs/cellguard/bin/drain")
	clk := &sleepRecorder{Clock: clock.NewClock()}
	script := boshdrain.NewConcreteScript(fs, runner, "cellguard", path, params, clk, logger)
	if !script.Exists() {
		t.Fatalf("the agent does not find %s", path)
	}
	scriptErr = script.Run()
	stepErr = boshscript.NewParallelScript("drain", []boshscript.Script{
		boshdrain.NewConcreteScript(fs, runner, "cellguard", path, params, &sleepRecorder{Clock: clock.NewClock()}, logger),
	}, logger).Run()
	return clk.slept, scriptErr, stepErr
}

func TestAgentDrainArgumentsAndEnvironment(t *testing.T) {
	v1, v2, empty := applySpec(t, specV1), applySpec(t, specV2), applySpec(t, specEmpty)
	testCases := []struct {
		name   string
		params boshdrain.ScriptParams
		args   string
		env    string
	}{
		{"shutdown: bosh stop, recreate, delete-deployment, scale-in", boshdrain.NewShutdownParams(v1, nil),
			"job_shutdown hash_unchanged", `BOSH_JOB_STATE={"persistent_disk":0}`},
		{"shutdown with the next spec", boshdrain.NewShutdownParams(v1, &v2),
			"job_shutdown hash_unchanged", "BOSH_JOB_NEXT_STATE={\"persistent_disk\":1024}\nBOSH_JOB_STATE={\"persistent_disk\":0}"},
		{"update of a deployed job", boshdrain.NewUpdateParams(v1, v2),
			"job_changed hash_changed cellguard", "BOSH_JOB_NEXT_STATE={\"persistent_disk\":1024}\nBOSH_JOB_STATE={\"persistent_disk\":0}"},
		{"first deploy", boshdrain.NewUpdateParams(empty, v1),
			"job_new hash_new cellguard golang-1-linux", "BOSH_JOB_NEXT_STATE={\"persistent_disk\":0}\nBOSH_JOB_STATE={\"persistent_disk\":0}"},
	}
	r := mustRender(t, "")
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			v := install(t, r, "")
			t.Setenv("STUB_CALLS", v.calls)
			t.Setenv("STUB_DRAIN", "pass")
			slept, scriptErr, stepErr := agentDrain(t, v, tc.params)
			if scriptErr != nil || stepErr != nil {
				t.Fatalf("agent: script %v, step %v\nlog:\n%s", scriptErr, stepErr, v.drainLog(t))
			}
			if len(slept) != 1 || slept[0] != 0 {
				t.Fatalf("the agent slept %v for the drain's answer, want [0s]", slept)
			}
			calls := v.callList(t)
			if len(calls) != 2 || !strings.HasSuffix(calls[0], " -- "+tc.args) {
				t.Fatalf("cellguard got %q, want ... -- %s", calls, tc.args)
			}
			b, err := os.ReadFile(v.calls + ".env")
			if err != nil || strings.TrimSpace(string(b)) != tc.env {
				t.Fatalf("environment %q (%v), want %q", b, err, tc.env)
			}
			if !strings.Contains(v.drainLog(t), "bin/drain: called: "+tc.args) {
				t.Errorf("drain.log lacks the call:\n%s", v.drainLog(t))
			}
		})
	}
}

// The one verdict that fails the step, and the error the director then
// reports; every other outcome lets the VM go.
func TestAgentDrainVerdicts(t *testing.T) {
	update := boshdrain.NewUpdateParams(applySpec(t, specV1), applySpec(t, specV2))
	r := mustRender(t, `{cellguard: {drain: {budget: 1s}}}`)
	for _, tc := range []struct {
		stub      string
		wantErr   bool
		wantSleep time.Duration // the integer the agent took, as it takes it
	}{
		{"pass", false, 0}, {"wait", false, 30 * time.Second}, {"blocked", true, 0}, {"could-not-run", false, 0},
		{"could-not-run-silent", false, 0}, {"crash", false, 0}, {"hang", false, 0}, {"garbage", false, 0},
	} {
		t.Run(tc.stub, func(t *testing.T) {
			v := install(t, r, "")
			t.Setenv("STUB_CALLS", v.calls)
			t.Setenv("STUB_DRAIN", tc.stub)
			slept, scriptErr, stepErr := agentDrain(t, v, update)
			if !tc.wantErr {
				if scriptErr != nil || stepErr != nil {
					t.Fatalf("the agent failed the step: script %v, step %v\nlog:\n%s", scriptErr, stepErr, v.drainLog(t))
				}
				if len(slept) != 1 || slept[0] != tc.wantSleep {
					t.Fatalf("the agent slept %v for the drain's answer, want [%v]", slept, tc.wantSleep)
				}
				return
			}
			if len(slept) != 0 {
				t.Errorf("the agent took an integer from a blocked drain: slept %v", slept)
			}
			if scriptErr == nil || !strings.Contains(scriptErr.Error(), "Script did not return a signed integer") {
				t.Errorf("script error %v, want the agent's \"Script did not return a signed integer\"", scriptErr)
			}
			if stepErr == nil || stepErr.Error() != "1 of 1 drain scripts failed. Failed Jobs: cellguard." {
				t.Errorf("step error %v, want \"1 of 1 drain scripts failed. Failed Jobs: cellguard.\"", stepErr)
			}
			t.Logf("the agent's errors: script %q; step %q", scriptErr, stepErr)
		})
	}
}

// The real binary with a config it cannot run with (an unknown check id,
// as an older release may have rendered): the agent lets the VM go.
func TestAgentDrainRealBinaryCouldNotRun(t *testing.T) {
	v := install(t, mustRender(t, ""), cellguardBin)
	cfg := filepath.Join(v.root, "vcap/jobs/cellguard/config/cellguard.json")
	if err := os.WriteFile(cfg, []byte(`{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	update := boshdrain.NewUpdateParams(applySpec(t, specV1), applySpec(t, specV2))
	if slept, scriptErr, stepErr := agentDrain(t, v, update); scriptErr != nil || stepErr != nil || len(slept) != 1 || slept[0] != 0 {
		t.Fatalf("the agent failed the step or took no 0: script %v, step %v, slept %v\nlog:\n%s", scriptErr, stepErr, slept, v.drainLog(t))
	}
	for _, want := range []string{`\"cgroup-integrty\": unknown check id`, "cellguard could not run (exit 2)"} {
		if !strings.Contains(v.drainLog(t), want) {
			t.Errorf("drain.log lacks %q:\n%s", want, v.drainLog(t))
		}
	}
}

// The agent's cancel of a drain (a task cancelled on the director):
// ConcreteScript.Cancel sends SIGTERM to the script's process group and
// SIGKILL 10s later (bosh-utils execProcess.TerminateNicely, Setpgid at
// start), and Run returns only when the script's stdout, read into a
// buffer by cmd.Wait, reaches EOF. cellguard is hung, deaf to SIGTERM,
// and has left a probe behind in a process group of its own holding every
// descriptor it had. The agent must get EOF and its answer all the same:
// nothing bin/drain starts may hold the agent's stdout (fd 3), and
// cellguard must be in the group the agent signals.
func TestAgentCancelEndsTheDrainDespiteAHungProbe(t *testing.T) {
	v := install(t, mustRender(t, `{cellguard: {drain: {budget: 1h}}}`), "")
	t.Setenv("STUB_CALLS", v.calls)
	t.Setenv("STUB_DRAIN", "hang-with-probe")
	probe := 0
	t.Cleanup(func() {
		// What this test's stub started: its probe, and the stub itself
		// (which a drain that fails this test leaves running).
		if probe > 0 {
			_ = syscall.Kill(probe, syscall.SIGKILL)
		}
		if b, err := os.ReadFile(v.calls + ".pid"); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	logger := boshlog.NewLogger(boshlog.LevelNone)
	fs := boshsys.NewOsFileSystem(logger)
	update := boshdrain.NewUpdateParams(applySpec(t, specV1), applySpec(t, specV2))
	script := boshdrain.NewConcreteScript(fs, boshsys.NewExecCmdRunner(logger), "cellguard",
		filepath.Join(v.root, "vcap/jobs/cellguard/bin/drain"), update, clock.NewClock(), logger)
	done := make(chan error, 1)
	go func() { done <- script.Run() }()

	// Cancel once cellguard ignores SIGTERM and its probe has left the
	// script's process group (each writes its pid then).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for stub := 0; probe == 0 || stub == 0; {
		if b, err := os.ReadFile(v.calls + ".probe"); err == nil && strings.HasSuffix(string(b), "\n") {
			probe, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if b, err := os.ReadFile(v.calls + ".pid"); err == nil && strings.HasSuffix(string(b), "\n") {
			stub, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		select {
		case err := <-done:
			t.Fatalf("the drain ended before the test could cancel it: %v\nlog:\n%s", err, v.drainLog(t))
		case <-ctx.Done():
			t.Fatalf("the stub never started its probe\nlog:\n%s", v.drainLog(t))
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := script.Cancel(); err != nil {
		t.Fatal(err)
	}
	// The agent's own grace is 10s; 15s bounds the whole cancel.
	ctx15, cancel15 := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel15()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "Script was cancelled by user request") {
			t.Fatalf("the agent's answer: %v, want \"Script was cancelled by user request\"", err)
		}
		t.Logf("the agent's answer: %v", err)
	case <-ctx15.Done():
		fd3, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", probe))
		t.Fatalf("the agent's read of the drain's stdout did not reach EOF within 15s of its cancel (the probe's fd 3: %q)\nlog:\n%s", fd3, v.drainLog(t))
	}
	// The probe is still there (the case was real), and holds nothing of
	// the agent's; cellguard itself went with the script's group.
	if !alive(probe) {
		t.Fatalf("the probe %d is gone: this test proved nothing", probe)
	}
	if fd3, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", probe)); err == nil {
		t.Errorf("the probe holds fd 3: %s", fd3)
	}
	b, err := os.ReadFile(v.calls + ".pid")
	if err != nil {
		t.Fatal(err)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || alive(pid) {
		t.Errorf("cellguard (pid %d) outlived the agent's cancel", pid)
	}
}

// alive: pid runs (a zombie waiting for its reaper has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
