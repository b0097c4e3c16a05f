package jobs_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// The alert rules (jobs/cellguard-alerts, rendered into manifests/prometheus)
// and the Grafana dashboard parse with Prometheus's own rule and PromQL
// parsers and pass promtool's checks and unit tests, and every metric they
// name is one `cellguard watch` or its drain exports, directly or under
// firehose_exporter's name for it: the names are read from the real
// binary's /metrics output (watch --once) and from the textfile its drain
// writes.

const promDir = "manifests/prometheus"

// update rewrites the files generated from the jobs (the rendered alert
// rules, docs/properties.md) instead of comparing them: `make generate`.
var update = flag.Bool("update", false, "rewrite the files generated from jobs/ (manifests/prometheus/*.alerts.yml, docs/properties.md)")

// regenerate is the one command that rewrites every generated file.
const regenerate = "make generate (cd spec && go test -mod=mod -count=1 -run 'TestAlertsJobRendersTheShippedRules|TestPropertiesDoc' ./jobs -update)"

// checkGenerated compares got with the file rel (under the repository) or,
// with -update, writes it.
func checkGenerated(t *testing.T, rel string, got []byte) {
	t.Helper()
	path := filepath.Join(repoRoot, rel)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with %s", err, regenerate)
	}
	if !bytes.Equal(want, got) {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
		i := 0
		for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s is stale (its source changed): regenerate it with %s\nline %d: file has %q, the source gives %q", rel, regenerate, i+1, line(wl), line(gl))
	}
}

// alertRenders are the rules the cellguard-alerts job renders for each
// metrics_source, shipped rendered with the defaults.
var alertRenders = []struct{ source, file string }{
	{"direct", "cellguard.alerts.yml"},
	{"firehose", "cellguard.firehose.alerts.yml"},
}

func renderAlerts(props string) ([]byte, error) {
	j, err := render.Load(filepath.Join(repoRoot, "jobs", "cellguard-alerts"))
	if err != nil {
		return nil, err
	}
	r, err := j.Render(props)
	if err != nil {
		return nil, err
	}
	return r["cellguard.alerts.yml"], nil
}

func TestAlertsJobRendersTheShippedRules(t *testing.T) {
	for _, ar := range alertRenders {
		t.Run(ar.source, func(t *testing.T) {
			b, err := renderAlerts(`{cellguard_alerts: {metrics_source: ` + ar.source + `}}`)
			if err != nil {
				t.Fatal(err)
			}
			checkGenerated(t, filepath.Join(promDir, ar.file), b)
		})
	}
}

// Thresholds reach the rules; a value Prometheus would refuse fails the
// render (the deploy), not the rule load on the Prometheus VM.
func TestAlertsJobParameters(t *testing.T) {
	// Every property of the job reaches the template.
	tmpl, err := os.ReadFile(filepath.Join(repoRoot, "jobs", "cellguard-alerts", "templates", "cellguard.alerts.yml.erb"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range readSpec(t, "cellguard-alerts").properties {
		if !strings.Contains(string(tmpl), "p('"+p.name+"')") && !strings.Contains(string(tmpl), "('"+p.name+"')") {
			t.Errorf("the template never reads %s", p.name)
		}
	}
	b, err := renderAlerts(`{cellguard_alerts: {escaped_processes: {threshold: 3, evaluation_time: 7m}, watch_gone: {lookback: 2h}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"expr: cellguard_escaped_processes > 3\n    for: 7m\n", "max_over_time(cellguard_last_scan_timestamp_seconds[2h])"} {
		mustContain(t, string(b), want)
	}
	for props, want := range map[string]string{
		`{cellguard_alerts: {metrics_source: loggregator}}`:                  "cellguard_alerts.metrics_source must be direct or firehose",
		`{cellguard_alerts: {healing: {window: "30 minutes"}}}`:              "cellguard_alerts.healing.window must be a Prometheus duration",
		`{cellguard_alerts: {check_failing: {status: "2; drop table"}}}`:     "cellguard_alerts.check_failing.status must be a number",
		`{cellguard_alerts: {watch_stale: {evaluation_time: "1m\nfoo: x"}}}`: "cellguard_alerts.watch_stale.evaluation_time must be a Prometheus duration",
	} {
		if _, err := renderAlerts(props); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", props, err, want)
		}
	}
}

// requireTool returns the path of name, or ends the test as testkit's
// Unavailable does (spec/ cannot import the main module's internal
// packages): loudly skipped on a developer's machine, failed under CI=true.
func requireTool(t *testing.T, name, from string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	why := name + " is not on PATH (" + from + "; make deps installs it)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("NOT RUN: %s [CI=true: failing instead of skipping]", why)
	}
	t.Skipf("!!! NOT RUN: %s !!!", why)
	return ""
}

// promtool checks the shipped rules as Prometheus loads them, and its unit
// tests (spec/jobs/testdata/promtool) show each alert firing, and staying
// quiet, on input series shaped as each path delivers them.
func TestAlertRulesPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool", "Debian's prometheus package")
	for _, ar := range alertRenders {
		out, err := exec.Command(promtool, "check", "rules", filepath.Join(repoRoot, promDir, ar.file)).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", ar.file, err, out)
		}
	}
	var tests []string
	for _, ar := range alertRenders {
		// Every alert of a rules file fires in its unit tests.
		test := filepath.Join("testdata", "promtool", ar.source+".test.yml")
		tests = append(tests, test)
		b, err := os.ReadFile(test)
		if err != nil {
			t.Fatal(err)
		}
		groups, errs := rulefmt.ParseFile(filepath.Join(repoRoot, promDir, ar.file), false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if !regexp.MustCompile(`alertname: ` + r.Alert + `\n\s+exp_alerts:\n\s+- exp_labels`).Match(b) {
					t.Errorf("%s: no test where %s fires", test, r.Alert)
				}
			}
		}
	}
	out, err := exec.Command(promtool, append([]string{"test", "rules"}, tests...)...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules %s:\n%s", strings.Join(tests, " "), out)
}

// watchOnce runs `cellguard watch --once` on an empty root and returns
// what it printed: the /metrics exposition.
func watchOnce(t *testing.T) []byte {
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
	return out
}

// exported returns the metric names `cellguard watch --once` printed
// (histograms with their _bucket, _sum, _count).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	out := watchOnce(t)
	names := exposedNames(out)
	for _, want := range []string{"cellguard_check_status", "cellguard_escaped_processes", "cellguard_healed_processes_total",
		"cellguard_scans_total", "cellguard_scan_duration_seconds_bucket", "cellguard_last_scan_timestamp_seconds"} {
		if !names[want] {
			t.Fatalf("watch --once does not export %s:\n%s", want, out)
		}
	}
	return names
}

// firehoseNames maps firehose_exporter's name for each of watch's own
// families (out is its exposition) to the name watch exports. The prom
// scraper forwards a gauge as a gauge and a counter as a counter (a
// histogram as its _sum gauge and _count and _bucket counters;
// loggregator-agent-release src/pkg/scraper/scraper.go), and the cellguard
// job gives it origin cellguard; firehose_exporter then names a gauge
// firehose_value_metric_<origin>_<name> and a counter
// firehose_counter_event_<origin>_<name>_total (metricmaker/compat.go).
func firehoseNames(out []byte) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" || !strings.HasPrefix(f[2], "cellguard_") {
			continue
		}
		name := f[2]
		switch f[3] {
		case "gauge":
			m[firehoseGauge+name] = name
		case "counter":
			m[firehoseCounter+name+"_total"] = name
		case "histogram":
			m[firehoseGauge+name+"_sum"] = name + "_sum"
			m[firehoseCounter+name+"_count_total"] = name + "_count"
			m[firehoseCounter+name+"_bucket_total"] = name + "_bucket"
		}
	}
	return m
}

const (
	firehoseGauge   = "firehose_value_metric_cellguard_"
	firehoseCounter = "firehose_counter_event_cellguard_"
)

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

// selectors are the vector selectors of a PromQL expression.
func selectors(t *testing.T, expr string) []*parser.VectorSelector {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("PromQL %q: %v", expr, err)
	}
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// metricNames are the metrics a PromQL expression selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	var out []string
	for _, vs := range selectors(t, expr) {
		out = append(out, vs.Name)
	}
	return out
}

func TestAlertRulesParseAndNameExportedMetrics(t *testing.T) {
	out := watchOnce(t)
	names := exposedNames(out)
	for m := range drainExported(t) {
		names[m] = true
	}
	firehose := firehoseNames(out)
	for _, ar := range alertRenders {
		t.Run(ar.source, func(t *testing.T) {
			path := filepath.Join(repoRoot, promDir, ar.file)
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
						// up: Prometheus's own, for a target it scrapes itself.
						if names[m] || ar.source == "direct" && m == "up" || ar.source == "firehose" && firehose[m] != "" {
							continue
						}
						t.Errorf("alert %s uses %s, which neither cellguard watch nor its drain exports on the %s path", r.Alert, m, ar.source)
					}
				}
			}
			if n == 0 {
				t.Fatal("no rules")
			}
		})
	}
}

func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	names := exported(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, promDir, "cellguard.dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
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
	// Variables for BOSH's deployment and job, from labels the series carry.
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Definition
	}
	for name, label := range map[string]string{"deployment": "bosh_deployment", "job": "bosh_job_name"} {
		if !strings.Contains(vars[name], "label_values(cellguard_last_scan_timestamp_seconds") || !strings.Contains(vars[name], ", "+label+")") {
			t.Errorf("dashboard variable %s is %q, want the label_values of %s", name, vars[name], label)
		}
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, vs := range selectors(t, tg.Expr) {
				used[vs.Name] = true
				if !names[vs.Name] {
					t.Errorf("panel %q uses %s, which cellguard watch does not export", p.Title, vs.Name)
				}
				// Every query follows the variables.
				var dep, job bool
				for _, m := range vs.LabelMatchers {
					dep = dep || m.Name == "bosh_deployment" && m.Type == labels.MatchRegexp && m.Value == "$deployment"
					job = job || m.Name == "bosh_job_name" && m.Type == labels.MatchRegexp && m.Value == "$job"
				}
				if !dep || !job {
					t.Errorf("panel %q: %s does not select bosh_deployment=~\"$deployment\" and bosh_job_name=~\"$job\"", p.Title, vs)
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

// internalSeed is how the project's own notes name incidents ("seed-000",
// "seed 001"): words an operator reading an alert, a dashboard or a
// property was never told.
var internalSeed = regexp.MustCompile(`(?i)seed[- _]?[0-9]{3}`)

// Operator-facing text says what happens, not which internal incident it
// was: the manifests (alerts, dashboard, runtime config, ops files), every
// job's spec and templates, the generated properties doc and
// docs/monitoring.md.
func TestNoInternalSeedNumbersForOperators(t *testing.T) {
	var files []string
	for _, root := range []string{"manifests", "jobs"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, root), func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, filepath.Join(repoRoot, "docs", "properties.md"), filepath.Join(repoRoot, "docs", "monitoring.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		for i, l := range strings.Split(string(b), "\n") {
			if m := internalSeed.FindString(l); m != "" {
				rel, _ := filepath.Rel(repoRoot, f)
				t.Errorf("%s:%d says %q: say what happens instead", rel, i+1, m)
			}
		}
	}
}

// docs/monitoring.md names each of watch's families as firehose_exporter
// names it, so an operator on the firehose path finds them.
func TestMonitoringDocNamesFirehoseMetrics(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	fh := firehoseNames(watchOnce(t))
	if len(fh) < 10 {
		t.Fatalf("only %d firehose names from watch --once", len(fh))
	}
	for f, d := range fh {
		if !strings.Contains(string(doc), "`"+f+"`") {
			t.Errorf("docs/monitoring.md does not name %s's firehose name `%s`", d, f)
		}
	}
}
