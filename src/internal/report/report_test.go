package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

var ranAt = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)

// blockedDrain is a drain run where an escape blocks and a ghost warns.
func blockedDrain() validator.Report {
	return validator.Report{
		Phase:   validator.Drain,
		Blocked: true,
		Results: []validator.Result{
			{
				ID: "cgroup-integrity", Title: "container processes are in the cgroups their runtime recorded",
				Severity: validator.Blocking, Status: validator.Fail, Blocking: true, Duration: 0.012,
				Fix: "Run `cellguard validate --fix`.",
				Findings: []validator.Finding{
					{Subject: "c1", Status: validator.Fail, Detail: "pid 101 (app) escaped in cpu,cpuacct: in /system.slice/garden.service, state says /garden/c1",
						Data: map[string]string{"pid": "101", "hierarchy": "cpu,cpuacct", "expected": "/garden/c1", "actual": "/system.slice/garden.service"}},
					{Status: validator.Pass, Detail: "1 containers, 2 container processes checked on a hybrid cgroup host"},
				},
			},
			{
				ID: "runtime-ghosts", Title: "runtime state and container processes agree",
				Severity: validator.Warning, Status: validator.Warn, Duration: 0.003, Fix: "runc delete.",
				Findings: []validator.Finding{{Subject: "c2", Status: validator.Fail, Detail: "init pid 200 is gone"}},
			},
			{
				ID: "stuck-runc-init", Title: "no runc init is stuck", Severity: validator.Warning,
				Status: validator.Error, Error: "list /proc: permission denied", Ignored: true,
			},
			{ID: "sysctl", Title: "sysctls", Severity: validator.Blocking, Status: validator.Pass},
		},
	}
}

func TestJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, blockedDrain(), ranAt); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "blocked_drain.json", b.Bytes(), *update)
	// And it decodes back into the framework's types.
	var back struct {
		validator.Report
		GeneratedAt time.Time `json:"generated_at"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Blocked || len(back.Results) != 4 || back.Results[0].Findings[0].Data["actual"] != "/system.slice/garden.service" {
		t.Fatalf("round trip lost data: %+v", back.Report)
	}
}

func TestHuman(t *testing.T) {
	var b bytes.Buffer
	if err := Human(&b, blockedDrain()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"cellguard validate --phase drain: BLOCKED by cgroup-integrity\n",
		"FAIL    cgroup-integrity",
		"warning (ignored)",
		"[FAIL] cgroup-integrity (blocking)\n  c1: pid 101 (app) escaped in cpu,cpuacct: in /system.slice/garden.service, state says /garden/c1\n  fix: Run `cellguard validate --fix`.\n",
		"[warn] runtime-ghosts (warning)\n  c2: init pid 200 is gone\n",
		"[ERROR] stuck-runc-init (warning)\n  could not check: list /proc: permission denied\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[pass]") || strings.Contains(out, "checked on a hybrid") {
		t.Errorf("passing evidence printed:\n%s", out)
	}
}

func TestHumanCapsEvidence(t *testing.T) {
	rep := validator.Report{Phase: validator.PreStart, Results: []validator.Result{{ID: "x", Status: validator.Warn, Severity: validator.Warning}}}
	for i := 0; i < MaxEvidence+5; i++ {
		rep.Results[0].Findings = append(rep.Results[0].Findings, validator.Finding{Status: validator.Warn, Detail: "d"})
	}
	var b bytes.Buffer
	if err := Human(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "... and 5 more (use --format json)") || strings.Count(b.String(), "  d\n") != MaxEvidence {
		t.Fatalf("got:\n%s", b.String())
	}
}
