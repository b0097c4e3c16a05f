package jobs_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// The example alert rules and Grafana dashboard (manifests/prometheus)
// parse with Prometheus's own rule and PromQL parsers, and every metric
// they name is one `cellguard watch` or its drain exports: the names are
// read from the real binary's /metrics output (watch --once) and from the
// textfile its drain writes.

const promDir = "manifests/prometheus"

// exported runs `cellguard watch --once` on an empty root and returns the
// metric names it printed (histograms with their _bucket, _sum, _count).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cellguard.json")
	if err := os.WriteFile(cfg, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cellguardBin, "watch", "--once", "--root", filepath.Join(dir, "root"),
		"--config", cfg, "--log-file", filepath.Join(dir, "log")).Output()
	if err != nil {
		t.Fatalf("cellguard watch --once: %v\n%s", err, out)
	}
	names := exposedNames(out)
	for _, want := range []string{"cellguard_check_status", "cellguard_escaped_processes", "cellguard_healed_processes_total",
		"cellguard_scans_total", "cellguard_scan_duration_seconds_bucket", "cellguard_last_scan_timestamp_seconds"} {
		if !names[want] {
			t.Fatalf("watch --once does not export %s:\n%s", want, out)
		}
	}
	return names
}

// drainExported runs the real `cellguard drain` with a config it cannot
// use (an unknown check id) and returns the metric names of the textfile
// it writes then: the drain's own families, could_not_run included.
func drainExported(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	cfg, prom := filepath.Join(dir, "cellguard.json"), filepath.Join(dir, "drain.prom")
	if err := os.WriteFile(cfg, []byte(`{"validator":{"blocking":{"drain":["no-such-check"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cellguardBin, "drain", "--config", cfg, "--prometheus-textfile", prom,
		"--log-file", filepath.Join(dir, "log"), "job_changed", "hash_changed").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("cellguard drain with an unusable config: %v, want exit 2 (could not run)\n%s", err, out)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatalf("the drain wrote no textfile: %v\n%s", err, out)
	}
	names := exposedNames(b)
	if !strings.Contains(string(b), "cellguard_drain_could_not_run{event=\"update\"} 1") {
		t.Fatalf("the drain's textfile does not say it could not run:\n%s", b)
	}
	return names
}

// exposedNames are the metric names of a Prometheus text exposition
// (/metrics output or a textfile).
func exposedNames(b []byte) map[string]bool {
	names := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, _, _ := strings.Cut(l, "{")
		name, _, _ = strings.Cut(name, " ")
		names[name] = true
	}
	return names
}

// metricNames are the metrics a PromQL expression selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("PromQL %q: %v", expr, err)
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs.Name)
		}
		return nil
	})
	return out
}

func TestAlertRulesParseAndNameExportedMetrics(t *testing.T) {
	names := exported(t)
	for m := range drainExported(t) {
		names[m] = true
	}
	path := filepath.Join(repoRoot, promDir, "cellguard.alerts.yml")
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", path, errs)
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("rule %q: want an alert name, a summary and a severity", r.Alert)
			}
			for _, m := range metricNames(t, r.Expr) {
				if !names[m] {
					t.Errorf("alert %s uses %s, which neither cellguard watch nor its drain exports", r.Alert, m)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no rules")
	}
}

func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	names := exported(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, promDir, "cellguard.dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels")
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricNames(t, tg.Expr) {
				used[m] = true
				if !names[m] {
					t.Errorf("panel %q uses %s, which cellguard watch does not export", p.Title, m)
				}
			}
		}
	}
	// What the issue asks the dashboard to show: escapes, heals, scan cost.
	for _, m := range []string{"cellguard_escaped_processes", "cellguard_healed_processes_total", "cellguard_scan_duration_seconds_bucket", "cellguard_scan_cpu_seconds_total"} {
		if !used[m] {
			var u []string
			for k := range used {
				u = append(u, k)
			}
			sort.Strings(u)
			t.Errorf("the dashboard does not show %s (it uses %v)", m, u)
		}
	}
}
