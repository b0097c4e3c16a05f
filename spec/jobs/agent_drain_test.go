package jobs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// agentDrain runs the installed bin/drain as the agent does and returns
// the script's error (what the agent records for the job) and the step's
// (what the director's task fails with).
func agentDrain(t *testing.T, v vcap, params boshdrain.ScriptParams) (scriptErr, stepErr error) {
	t.Helper()
	logger := boshlog.NewLogger(boshlog.LevelNone)
	fs := boshsys.NewOsFileSystem(logger)
	runner := boshsys.NewExecCmdRunner(logger)
	path := filepath.Join(v.root, "vcap/jobs/cellguard/bin/drain")
	script := boshdrain.NewConcreteScript(fs, runner, "cellguard", path, params, clock.NewClock(), logger)
	if !script.Exists() {
		t.Fatalf("the agent does not find %s", path)
	}
	scriptErr = script.Run()
	stepErr = boshscript.NewParallelScript("drain", []boshscript.Script{
		boshdrain.NewConcreteScript(fs, runner, "cellguard", path, params, clock.NewClock(), logger),
	}, logger).Run()
	return scriptErr, stepErr
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
			if scriptErr, stepErr := agentDrain(t, v, tc.params); scriptErr != nil || stepErr != nil {
				t.Fatalf("agent: script %v, step %v\nlog:\n%s", scriptErr, stepErr, v.drainLog(t))
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
		stub    string
		wantErr bool
	}{
		{"pass", false}, {"blocked", true}, {"could-not-run", false}, {"could-not-run-silent", false},
		{"crash", false}, {"hang", false}, {"garbage", false},
	} {
		t.Run(tc.stub, func(t *testing.T) {
			v := install(t, r, "")
			t.Setenv("STUB_CALLS", v.calls)
			t.Setenv("STUB_DRAIN", tc.stub)
			scriptErr, stepErr := agentDrain(t, v, update)
			if !tc.wantErr {
				if scriptErr != nil || stepErr != nil {
					t.Fatalf("the agent failed the step: script %v, step %v\nlog:\n%s", scriptErr, stepErr, v.drainLog(t))
				}
				return
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
	if scriptErr, stepErr := agentDrain(t, v, update); scriptErr != nil || stepErr != nil {
		t.Fatalf("the agent failed the step: script %v, step %v\nlog:\n%s", scriptErr, stepErr, v.drainLog(t))
	}
	for _, want := range []string{`unknown check id \"cgroup-integrty\"`, "cellguard could not run (exit 2)"} {
		if !strings.Contains(v.drainLog(t), want) {
			t.Errorf("drain.log lacks %q:\n%s", want, v.drainLog(t))
		}
	}
}
