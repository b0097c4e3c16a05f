package metrics

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cloudfoundry/cellguard/src/internal/drain"
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
			{ID: "cgroup-integrity", Severity: validator.Blocking, Status: validator.Fail, Blocking: true, Duration: 0.012,
				Findings: []validator.Finding{
					{Subject: "c1", Status: validator.Fail, Detail: "pid 101 escaped"},
					{Status: validator.Pass, Detail: "1 containers, 2 container processes checked"},
				}},
			{ID: "runtime-ghosts", Severity: validator.Warning, Status: validator.Warn, Duration: 0.003,
				Findings: []validator.Finding{{Subject: "c2", Status: validator.Fail, Detail: "init pid 200 is gone"}}},
			{ID: "stuck-runc-init", Severity: validator.Warning, Status: validator.Error, Error: "list /proc: permission denied", Ignored: true},
			{ID: "sysctl", Severity: validator.Blocking, Status: validator.Pass},
		},
	}
}

func TestValidateTextfileGolden(t *testing.T) {
	b, err := Encode(ValidateTextfile(blockedDrain(), ranAt), true)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "validate_blocked_drain.prom", b, *update)
}

// The names, labels and values validate wrote before client_golang took
// over are unchanged (values are read back as numbers: the library
// writes 1.796022e+09 where the hand-written encoder wrote 1796022000).
func TestValidateTextfileValues(t *testing.T) {
	b, err := Encode(ValidateTextfile(blockedDrain(), ranAt), true)
	if err != nil {
		t.Fatal(err)
	}
	got := samples(t, b)
	for want, v := range map[string]float64{
		`cellguard_check_status{check="cgroup-integrity",phase="drain"}`:           2,
		`cellguard_check_status{check="runtime-ghosts",phase="drain"}`:             1,
		`cellguard_check_status{check="stuck-runc-init",phase="drain"}`:            3,
		`cellguard_check_status{check="sysctl",phase="drain"}`:                     0,
		`cellguard_check_blocking{check="cgroup-integrity",phase="drain"}`:         1,
		`cellguard_check_blocking{check="stuck-runc-init",phase="drain"}`:          0,
		`cellguard_check_findings{check="cgroup-integrity",phase="drain"}`:         1,
		`cellguard_check_duration_seconds{check="cgroup-integrity",phase="drain"}`: 0.012,
		`cellguard_validate_blocked{phase="drain"}`:                                1,
		`cellguard_validate_timestamp_seconds{phase="drain"}`:                      1796022000,
	} {
		if g, ok := got[want]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", want, g, ok, v)
		}
	}
	if n := strings.Count(string(b), "# TYPE "); n != 6 {
		t.Errorf("want 6 metric families, got %d:\n%s", n, b)
	}
}

// samples parses exposition text back with the library's own parser.
func samples(t *testing.T, b []byte) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, b)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestWriteTextfileIsAtomicReplaceOfOwnFamilies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellguard.prom")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := ValidateTextfile(blockedDrain(), ranAt)
	// A family node_exporter exports itself stays out of the textfile.
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "process_open_fds", Help: "x"}))
	if err := WriteTextfile(path, reg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Encode(ValidateTextfile(blockedDrain(), ranAt), true)
	if !bytes.Equal(b, want) || strings.Contains(string(b), "process_open_fds") {
		t.Fatalf("file holds %q", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
	if err := WriteTextfile(filepath.Join(t.TempDir(), "no/such/dir/x.prom"), reg); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

// A drain's textfile: the validator's families, then what drain did. A
// drain that could not run has only the drain families, and says so.
func TestDrainTextfile(t *testing.T) {
	rep := blockedDrain()
	shutdown := drain.Parse([]string{"job_shutdown", "hash_unchanged"})
	b, err := Encode(DrainTextfile(&rep, shutdown, drain.Decide(drain.Input{Call: shutdown, Report: &rep}), ranAt), true)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "drain_released_on_shutdown.prom", b, *update)
	got := samples(t, b)
	for want, v := range map[string]float64{
		`cellguard_validate_blocked{phase="drain"}`:                                1,
		`cellguard_drain_outcome{event="shutdown",outcome="released_on_shutdown"}`: 1,
		`cellguard_drain_outcome{event="shutdown",outcome="blocked"}`:              0,
		`cellguard_drain_could_not_run{event="shutdown"}`:                          0,
		`cellguard_drain_timestamp_seconds{event="shutdown"}`:                      1796022000,
	} {
		if g, ok := got[want]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", want, g, ok, v)
		}
	}

	update := drain.Parse([]string{"job_changed", "hash_changed"})
	b, err = Encode(DrainTextfile(nil, update, drain.Decide(drain.Input{Call: update, CouldNotRun: errors.New("parse config")}), ranAt), true)
	if err != nil {
		t.Fatal(err)
	}
	got = samples(t, b)
	if got[`cellguard_drain_could_not_run{event="update"}`] != 1 || got[`cellguard_drain_outcome{event="update",outcome="could_not_run"}`] != 1 {
		t.Errorf("could-not-run textfile:\n%s", b)
	}
	if strings.Contains(string(b), "cellguard_check_status") {
		t.Errorf("could-not-run textfile has check families:\n%s", b)
	}
}
