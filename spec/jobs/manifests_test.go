package jobs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The example manifests' cellguard properties render and parse, so what an
// operator copies works.
func TestRuntimeConfigAddons(t *testing.T) {
	var rc struct {
		Releases []struct{ Name, Version string } `yaml:"releases"`
		Addons   []struct {
			Name    string `yaml:"name"`
			Include struct {
				Jobs []struct{ Name, Release string } `yaml:"jobs"`
			} `yaml:"include"`
			Jobs []struct {
				Name       string         `yaml:"name"`
				Release    string         `yaml:"release"`
				Properties map[string]any `yaml:"properties"`
			} `yaml:"jobs"`
		} `yaml:"addons"`
	}
	readManifest(t, "runtime-config.yml", &rc)
	if len(rc.Releases) != 1 || rc.Releases[0].Name != "cellguard" || rc.Releases[0].Version == "latest" {
		t.Errorf("releases %+v: want cellguard at an exact version (runtime configs refuse latest)", rc.Releases)
	}
	included := map[string]bool{}
	for _, a := range rc.Addons {
		for _, inc := range a.Include.Jobs {
			included[inc.Release+"/"+inc.Name] = true
		}
		if len(a.Jobs) != 1 || a.Jobs[0].Name != "cellguard" || a.Jobs[0].Release != "cellguard" {
			t.Errorf("addon %s: jobs %+v, want the cellguard job", a.Name, a.Jobs)
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			props, err := yaml.Marshal(a.Jobs[0].Properties)
			if err != nil {
				t.Fatal(err)
			}
			r := mustRender(t, string(props))
			configCheck(t, r["config/cellguard.json"])
			checkIDsKnown(t, r["config/cellguard.json"])
			if err := compileSchema(t).Validate(resolve(t, string(props))); err != nil {
				t.Errorf("properties_schema.json rejects the addon's properties: %v", err)
			}
		})
	}
	for _, want := range []string{"garden-runc/garden", "concourse/worker"} {
		if !included[want] {
			t.Errorf("runtime config covers no %s", want)
		}
	}
}

// hashOp is one op of an ops file whose value is a hash.
type hashOp struct {
	Type  string         `yaml:"type"`
	Path  string         `yaml:"path"`
	Value map[string]any `yaml:"value"`
}

func TestCFDeploymentOpsFile(t *testing.T) {
	var ops []hashOp
	readManifest(t, "operations/add-cellguard-to-diego-cells.yml", &ops)
	var job map[string]any
	for _, op := range ops {
		if op.Type != "replace" {
			t.Errorf("op %s: type %q", op.Path, op.Type)
		}
		if op.Path == "/instance_groups/name=diego-cell/jobs/name=cellguard?" {
			job = op.Value
		}
	}
	if job == nil {
		t.Fatal("no op adds the cellguard job to diego-cell")
	}
	props, err := yaml.Marshal(job["properties"])
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustRender(t, string(props))["config/cellguard.json"]
	configCheck(t, cfg)
	checkIDsKnown(t, cfg)
}

func readManifest(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("parse manifests/%s: %v", name, err)
	}
}

// The prometheus-boshrelease ops file adds the alerts job where that
// release's rule_files glob finds what it renders, with properties it
// renders with.
func TestPrometheusOpsFile(t *testing.T) {
	var ops []struct {
		Type  string `yaml:"type"`
		Path  string `yaml:"path"`
		Value any    `yaml:"value"`
	}
	readManifest(t, "prometheus/add-cellguard-alerts.yml", &ops)
	var job map[string]any
	var glob string
	for _, op := range ops {
		switch op.Path {
		case "/instance_groups/name=prometheus2/jobs/name=cellguard-alerts?":
			job, _ = op.Value.(map[string]any)
		case "/instance_groups/name=prometheus2/jobs/name=prometheus2/properties/prometheus/rule_files/-":
			glob, _ = op.Value.(string)
		}
	}
	if job == nil || job["name"] != "cellguard-alerts" || job["release"] != "cellguard" {
		t.Fatalf("no op adds the cellguard-alerts job to prometheus2: %v", job)
	}
	for _, source := range []string{"direct", "firehose"} {
		props, err := yaml.Marshal(job["properties"])
		if err != nil {
			t.Fatal(err)
		}
		b, err := renderAlerts(strings.ReplaceAll(string(props), "((cellguard_metrics_source))", source))
		if err != nil {
			t.Fatalf("render with %s: %v", props, err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cellguard.alerts.yml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// The glob, taken from the job's directory, finds the rendered rules.
		m, err := filepath.Glob(filepath.Join(dir, strings.TrimPrefix(glob, "/var/vcap/jobs/cellguard-alerts/")))
		if err != nil || len(m) != 1 || !strings.HasPrefix(glob, "/var/vcap/jobs/cellguard-alerts/") {
			t.Errorf("rule_files %q does not find the job's cellguard.alerts.yml (%v %v)", glob, m, err)
		}
	}
}

// The metrics TLS ops file gives cellguard what cf-deployment gives every
// job whose metrics the prom scraper reads (cf-deployment v58.0.0,
// cf-deployment.yml: loggregator_agent's metrics block and its
// loggregator_agent_metrics_tls variable): properties metrics.ca_cert,
// cert, key and server_name from a certificate variable signed by
// metric_scraper_ca for server_auth, named as the server_name. Rendered,
// they turn on mutual TLS and https in the prom scraper's config.
func TestMetricsTLSOpsFile(t *testing.T) {
	var ops []hashOp
	readManifest(t, "operations/cellguard-metrics-tls.yml", &ops)
	var metrics, variable map[string]any
	for _, op := range ops {
		switch op.Path {
		case "/instance_groups/name=diego-cell/jobs/name=cellguard/properties/cellguard/watch/metrics?":
			metrics = op.Value
		case "/variables/name=cellguard_metrics_tls?":
			variable = op.Value
		}
	}
	if metrics == nil || variable == nil {
		t.Fatalf("want an op setting diego-cell's cellguard.watch.metrics and one adding cellguard_metrics_tls: %+v", ops)
	}
	wantMetrics := map[string]any{"ca_cert": "((cellguard_metrics_tls.ca))", "cert": "((cellguard_metrics_tls.certificate))",
		"key": "((cellguard_metrics_tls.private_key))", "server_name": "cellguard_metrics"}
	for k, v := range wantMetrics {
		if metrics[k] != v {
			t.Errorf("metrics.%s = %v, want %v", k, metrics[k], v)
		}
	}
	opts, _ := variable["options"].(map[string]any)
	if variable["type"] != "certificate" || opts["ca"] != "metric_scraper_ca" || opts["common_name"] != "cellguard_metrics" ||
		!sameList(opts["alternative_names"], "cellguard_metrics") || !sameList(opts["extended_key_usage"], "server_auth") {
		t.Errorf("variable %+v: want a certificate from metric_scraper_ca for server_auth named cellguard_metrics", variable)
	}
	// The director interpolates the variable; the job sees PEM strings.
	props := `{cellguard: {watch: {listen: "127.0.0.1:14875", metrics: {ca_cert: CA, cert: CERT, key: KEY, server_name: cellguard_metrics}}}}`
	r := mustRender(t, props)
	configCheck(t, r["config/cellguard.json"])
	if err := compileSchema(t).Validate(resolve(t, props)); err != nil {
		t.Errorf("properties_schema.json rejects cf-deployment's metrics block: %v", err)
	}
	for f, want := range map[string]string{"config/certs/metrics.crt": "CERT", "config/certs/metrics.key": "KEY", "config/certs/metrics_ca.crt": "CA"} {
		if strings.TrimSpace(string(r[f])) != want {
			t.Errorf("%s = %q, want %q", f, r[f], want)
		}
	}
	mustContain(t, string(r["config/prom_scraper_config.yml"]), "scheme: https")
}

func sameList(v any, want ...string) bool {
	l, _ := v.([]any)
	if len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}
