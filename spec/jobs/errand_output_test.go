package jobs_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	boshcmd "github.com/cloudfoundry/bosh-cli/v7/cmd"
	boshopts "github.com/cloudfoundry/bosh-cli/v7/cmd/opts"
	boshdir "github.com/cloudfoundry/bosh-cli/v7/director"
	"github.com/cloudfoundry/bosh-cli/v7/director/directorfakes"
	boshui "github.com/cloudfoundry/bosh-cli/v7/ui"
	boshuifmt "github.com/cloudfoundry/bosh-cli/v7/ui/fmt"
	boshlog "github.com/cloudfoundry/bosh-utils/logger"

	"github.com/cloudfoundry/cellguard/spec/render"
)

var updateErrand = flag.Bool("update-errand", false, "rewrite the fleet-summary errand fixtures in src/internal/cli/testdata/fleetsummary")

// fleetSummaryData is where cellguard fleet-summary's table tests read
// their fixtures.
var fleetSummaryData = filepath.Join(repoRoot, "src/internal/cli/testdata/fleetsummary")

// errandCell is one instance of the fixture fleet: what validate does on
// it. report names validate's own output on a fakehost cell, kept current
// by cli's TestFleetSummaryValidateReports; empty means the real binary
// runs against an empty root and cannot run (exit 2).
type errandCell struct {
	group, id, report string
	code              int
}

var mixedFleet = []errandCell{
	{"cell", "0b7c2a4e-5a51-4f1e-9d53-7d1f64a4c001", "blocked", 1},
	{"cell", "6e3f9c2d-1b8a-4c47-8e0f-2a9d5b7c0002", "ok", 0},
	{"cell", "a91d4f60-3c2e-4b8d-b7a1-5e6f8d9c0003", "", 2},
}

// The fixtures of cellguard fleet-summary are what bosh-cli v7.9.12 prints
// for `bosh --json run-errand cellguard-validate` on a three-cell fleet: every
// instance's stdout, stderr and exit code come from running the rendered
// errand (bin/run) with the validator's own reports, and bosh-cli's own
// RunErrandCmd and UI stack print them (cmd.go's configureUI: a terminal,
// a pipe with its data-only table, and --json), then main.go's ending. The
// director passes the agent's result through unchanged
// (bosh-director errand/result.rb), and bosh-agent v2.759.0's run_errand
// returns whole streams (platform runner, bosh-utils exec_process), so
// nothing between the VM and bosh-cli changes the bytes. Not from a real
// director yet: the run's preamble (environment, task events) is missing.
func TestErrandOutputFixtures(t *testing.T) {
	// fleet-summary reads the --json form with the JSON report (the
	// default), and says it counts no checks from the human report and
	// refuses a terminal's table.
	forms := map[string][]string{"json": {"json", "tty"}, "human": {"json"}}
	for _, format := range []string{"human", "json"} {
		results := runErrandOnFleet(t, format, mixedFleet)
		for _, form := range forms[format] {
			got := boshRunErrandOutput(t, results, form)
			path := filepath.Join(fleetSummaryData, fmt.Sprintf("errand-mixed-%s.%s", format, form))
			if *updateErrand {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./jobs -run TestErrandOutputFixtures -update-errand creates it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not what the errand and bosh-cli print now; got:\n%s", path, got)
			}
		}
	}
}

// runErrandOnFleet runs the rendered errand once per cell, as the agent
// would, and returns what the director hands bosh-cli.
func runErrandOnFleet(t *testing.T, format string, fleet []errandCell) []boshdir.ErrandResult {
	t.Helper()
	j, err := render.Load(filepath.Join(repoRoot, "jobs", "cellguard-validate"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := j.Render(fmt.Sprintf("{cellguard_validate: {format: %s}}", format))
	if err != nil {
		t.Fatal(err)
	}
	var results []boshdir.ErrandResult
	for _, c := range fleet {
		root := t.TempDir()
		script := strings.ReplaceAll(string(r["bin/run"]), "/var/vcap/", root+"/vcap/")
		bin := filepath.Join(root, "vcap/packages/cellguard/bin")
		stubs := filepath.Join(root, "stubs")
		for _, d := range []string{bin, stubs, filepath.Join(root, "vcap/jobs/cellguard/config")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// The cellguard job is on every cell: bin/run passes its config.
		if err := os.WriteFile(filepath.Join(root, "vcap/jobs/cellguard/config/cellguard.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		cellguard := "#!/usr/bin/env bash\nexec " + cellguardBin + " \"$@\" --root " + filepath.Join(root, "empty") + "\n"
		if c.report != "" {
			report := filepath.Join(fleetSummaryData, "validate-"+c.report+"."+format)
			cellguard = fmt.Sprintf("#!/usr/bin/env bash\ncat %s\nexit %d\n", report, c.code)
		}
		writeExec(t, filepath.Join(bin, "cellguard"), cellguard)
		// A BOSH VM's hostname is its agent id; the clock is fixed so the
		// fixture is stable.
		writeExec(t, filepath.Join(stubs, "hostname"), "#!/bin/sh\necho "+c.id+"\n")
		writeExec(t, filepath.Join(stubs, "date"), "#!/bin/sh\necho 2026-12-02T14:00:00Z\n")
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Fatalf("%s/%s: errand exit %d, want %d\n%s\n%s", c.group, c.id, code, c.code, stdout.String(), stderr.String())
		}
		results = append(results, boshdir.ErrandResult{InstanceGroup: c.group, InstanceID: c.id, ExitCode: code,
			Stdout: stdout.String(), Stderr: strings.ReplaceAll(stderr.String(), root, "")})
	}
	return results
}

// boshRunErrandOutput prints results as bosh-cli v7.9.12 does, stdout and
// stderr in one stream (2>&1): form tty is a terminal (or --tty), piped a
// pipe or file, json --json.
func boshRunErrandOutput(t *testing.T, results []boshdir.ErrandResult, form string) []byte {
	t.Helper()
	var out bytes.Buffer
	logger := boshlog.NewLogger(boshlog.LevelNone)
	var ui boshui.UI = boshui.NewPaddingUI(boshui.NewWriterUI(&out, &out, logger))
	if form != "tty" {
		ui = boshui.NewNonTTYUI(ui)
	}
	if form == "json" {
		ui = boshui.NewJSONUI(ui, logger)
	}
	dep := &directorfakes.FakeDeployment{}
	dep.RunErrandReturns(results, nil)
	err := boshcmd.NewRunErrandCmd(dep, nil, ui).Run(boshopts.RunErrandOpts{Args: boshopts.RunErrandArgs{Name: "cellguard-validate"}})
	// main.go's fail and success.
	if err != nil {
		ui.ErrorLinef(boshuifmt.MultilineError(err))
		ui.ErrorLinef("Exit code 1")
	} else {
		ui.PrintLinef("Succeeded")
	}
	ui.Flush()
	return out.Bytes()
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := render.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
