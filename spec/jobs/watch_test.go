package jobs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// promScraperConfig is what loggregator-agent-release's prom scraper reads
// (scraper.PromScraperConfig in src/pkg/scraper/config_provider.go at
// 8f54bce7); port is a string there.
type promScraperConfig struct {
	Port       string `yaml:"port"`
	SourceID   string `yaml:"source_id"`
	InstanceID string `yaml:"instance_id"`
	Scheme     string `yaml:"scheme"`
	ServerName string `yaml:"server_name"`
	Path       string `yaml:"path"`
	// Labels become tags on every envelope; origin names the metrics
	// firehose_exporter makes of them (docs/monitoring.md).
	Origin string `yaml:"-"`
	Labels struct {
		Origin string `yaml:"origin"`
	} `yaml:"labels"`
}

// metricTarget is what metrics-discovery-release's registrar reads
// (target.Target in src/internal/target/target.go at ac42f95e).
type metricTarget struct {
	Targets []string          `yaml:"targets"`
	Labels  map[string]string `yaml:"labels"`
	Source  string            `yaml:"source"`
}

func TestPromScraperConfig(t *testing.T) {
	testCases := []struct {
		name, props string
		want        promScraperConfig
	}{
		{"defaults: plain http on localhost", ``,
			promScraperConfig{Port: "14875", SourceID: "cellguard", InstanceID: "id", Scheme: "http", Path: "/metrics", Origin: "cellguard"}},
		{"mutual TLS", `{cellguard: {watch: {listen: "127.0.0.1:9999", metrics: {cert: C, key: K, ca_cert: A, server_name: cg, source_id: cellguard-cell}}}}`,
			promScraperConfig{Port: "9999", SourceID: "cellguard-cell", InstanceID: "id", Scheme: "https", ServerName: "cg", Path: "/metrics", Origin: "cellguard"}},
		{"watch off", `{cellguard: {watch: {enabled: false}}}`, promScraperConfig{}},
		{"no listener", `{cellguard: {watch: {listen: ""}}}`, promScraperConfig{}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.props)
			var got promScraperConfig
			if err := yaml.Unmarshal(r["config/prom_scraper_config.yml"], &got); err != nil {
				t.Fatalf("%v\n%s", err, r["config/prom_scraper_config.yml"])
			}
			// bosh-cli's renderer gives each render a random spec.id.
			if tc.want.Port != "" && got.InstanceID == "" {
				t.Error("no instance_id")
			}
			got.InstanceID = tc.want.InstanceID
			got.Origin, got.Labels.Origin = got.Labels.Origin, ""
			if got != tc.want {
				t.Errorf("got %+v, want %+v\n%s", got, tc.want, r["config/prom_scraper_config.yml"])
			}
		})
	}
}

func TestMetricTargets(t *testing.T) {
	testCases := []struct {
		name, props string
		want        []metricTarget
	}{
		{"loopback: the prom scraper's job, no target", ``, []metricTarget{}},
		{"an address of the VM", `{cellguard: {watch: {listen: "10.0.16.5:14875"}}}`, []metricTarget{{
			Targets: []string{"10.0.16.5:14875"},
			Labels:  map[string]string{"source_id": "cellguard", "deployment": "cellguard-spec"},
			Source:  "cellguard__",
		}}},
		{"watch off", `{cellguard: {watch: {enabled: false, listen: "10.0.16.5:14875"}}}`, []metricTarget{}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.props)
			var got []metricTarget
			if err := yaml.Unmarshal(r["config/metric_targets.yml"], &got); err != nil {
				t.Fatalf("%v\n%s", err, r["config/metric_targets.yml"])
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				id := got[i].Labels["instance_id"]
				if id == "" || got[i].Source != tc.want[i].Source+id || strings.Join(got[i].Targets, ",") != strings.Join(tc.want[i].Targets, ",") ||
					got[i].Labels["source_id"] != "cellguard" || got[i].Labels["deployment"] != "cellguard-spec" {
					t.Errorf("target %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
				// BOSH's labels, as the alerts (jobs/cellguard-alerts) read them;
				// bosh-cli's renderer leaves spec.name and spec.ip empty.
				_, name := got[i].Labels["bosh_job_name"]
				_, ip := got[i].Labels["bosh_job_ip"]
				if got[i].Labels["bosh_deployment"] != "cellguard-spec" || got[i].Labels["bosh_job_id"] != id || !name || !ip {
					t.Errorf("target %d: no BOSH labels: %+v", i, got[i].Labels)
				}
			}
		})
	}
}

// The watch section reaches the config the binary parses, with the TLS
// files where the job renders them.
func TestWatchConfig(t *testing.T) {
	r := mustRender(t, `{cellguard: {watch: {heal: true, heal_per_minute: 10, period: 30s, textfile_dir: /var/vcap/jobs/node_exporter/config,
  metrics: {cert: CERT, key: KEY, ca_cert: CA}}}}`)
	cfg := r["config/cellguard.json"]
	configCheck(t, cfg)
	m := decode(t, cfg)
	wantJSON(t, m, "watch", `{"listen":"127.0.0.1:14875","heal":true,"heal_per_minute":10,"period":"30s",
	  "textfile":"/var/vcap/jobs/node_exporter/config/cellguard_watch.prom",
	  "tls":{"cert":"/var/vcap/jobs/cellguard/config/certs/metrics.crt","key":"/var/vcap/jobs/cellguard/config/certs/metrics.key","ca":"/var/vcap/jobs/cellguard/config/certs/metrics_ca.crt"}}`)
	for f, want := range map[string]string{"config/certs/metrics.crt": "CERT", "config/certs/metrics.key": "KEY", "config/certs/metrics_ca.crt": "CA"} {
		if strings.TrimSpace(string(r[f])) != want {
			t.Errorf("%s = %q", f, r[f])
		}
	}
	mustContain(t, string(r["bin/pre-start"]), "mkdir -p -- /var/vcap/jobs/node_exporter/config")
	d := decode(t, mustRender(t, `{cellguard: {watch: {textfile_dir: ""}}}`)["config/cellguard.json"])
	wantJSON(t, d, "watch.textfile", `""`)
	if strings.TrimSpace(stripComments(string(mustRender(t, `{cellguard: {watch: {enabled: false}}}`)["monit"]))) != "" {
		t.Error("monit is not empty with cellguard.watch.enabled false")
	}
}

func TestBadWatchPropertiesFailToRender(t *testing.T) {
	j := loadJob(t)
	for props, want := range map[string]string{
		`{cellguard: {watch: {heal_per_minute: "5"}}}`:    "cellguard.watch.heal_per_minute must be a whole number",
		`{cellguard: {watch: {period: 60}}}`:              "cellguard.watch.period must be a string",
		`{cellguard: {watch: {textfile_dir: "metrics"}}}`: "cellguard.watch.textfile_dir must be an absolute, clean path",
		`{cellguard: {watch: {heal: "yes"}}}`:             "cellguard.watch.heal must be true or false",
		`{cellguard: {watch: {listen: "0.0.0.0:14875"}}}`: "the instance has no address for metric_targets.yml",
	} {
		_, err := j.Render(props)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", props, err, want)
		}
		if want != "the instance has no address for metric_targets.yml" {
			if err := compileSchema(t).Validate(resolve(t, props)); err == nil {
				t.Errorf("schema accepts %s", props)
			}
		}
	}
}

// watch_ctl start returns at once with the daemon running and its pid in
// the pidfile; a second start keeps it; stop ends it.
func TestWatchCtl(t *testing.T) {
	v := install(t, mustRender(t, ""), "")
	// A cellguard that, as watch, stays up until signalled; watch status
	// is the real binary's, the rule watch_ctl asks.
	stub := "#!/usr/bin/env bash\n[ \"$1 ${2:-}\" = 'watch status' ] && exec " + cellguardBin + " \"$@\"\n" +
		"printf '%s\\n' \"$*\" >>\"${STUB_CALLS}\"\n[ \"$1\" = watch ] && while :; do sleep 0.05; done\n"
	if err := render.WriteFile(filepath.Join(v.root, "vcap/packages/cellguard/bin/cellguard"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, code := v.runArgs(t, "bin/watch_ctl", "start"); code != 0 {
		t.Fatalf("start exited %d", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("start took %v: it must not wait for the daemon", d)
	}
	pidfile := filepath.Join(v.root, "vcap/sys/run/cellguard/watch.pid")
	pid := readPid(t, pidfile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("pid %d from the pidfile is not running: %v", pid, err)
	}
	if _, code := v.runArgs(t, "bin/watch_ctl", "start"); code != 0 || readPid(t, pidfile) != pid {
		t.Fatalf("a second start replaced the running watch (exit %d)", code)
	}
	calls := v.callList(t)
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "watch --config "+v.root+"/vcap/jobs/cellguard/config/cellguard.json --log-file "+v.root+"/vcap/sys/log/cellguard/watch.log") {
		t.Fatalf("calls: %q", calls)
	}
	if _, code := v.runArgs(t, "bin/watch_ctl", "stop"); code != 0 {
		t.Fatalf("stop exited %d", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("watch still runs after stop")
		}
		// Reap it if it is our child's child gone zombie: it is not ours,
		// so poll until init reaps it.
		time.Sleep(20 * time.Millisecond)
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pidfile left after stop: %v", err)
	}
}

// A pid in the pidfile that another program got since is not watch:
// stop signals nothing, start starts watch. The judge is cellguard watch
// status, the rule uninstall also uses. Before, watch_ctl grepped the
// space-joined cmdline for "cellguard watch": this process, whose argv[0]
// only reads like it, was SIGTERMed by stop and kept start from starting.
func TestWatchCtlSignalsOnlyWatch(t *testing.T) {
	v := install(t, mustRender(t, ""), cellguardBin)
	other := &exec.Cmd{Path: "/bin/sleep", Args: []string{"cellguard watch", "300"}}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- other.Wait() }()
	t.Cleanup(func() { other.Process.Kill(); <-ended })
	pidfile := filepath.Join(v.root, "vcap/sys/run/cellguard/watch.pid")
	if err := os.MkdirAll(filepath.Dir(pidfile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := v.runArgs(t, "bin/watch_ctl", "stop"); code != 0 {
		t.Fatalf("stop exited %d\n%s", code, out)
	}
	select {
	case err := <-ended:
		ended <- err // for the cleanup
		t.Fatalf("stop ended pid %d (%v), which runs %q, not cellguard watch", other.Process.Pid, err, other.Args)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("stop left the pidfile of a process that is not watch: %v", err)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// runArgs runs a rendered script with the given arguments.
func (v vcap) runArgs(t *testing.T, script string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(v.root, "vcap/jobs/cellguard", script), args...)
	cmd.Env = append(os.Environ(), "STUB_CALLS="+v.calls)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// renderErrand renders the cellguard-validate job with no properties.
func renderErrand(t *testing.T) (*render.Job, render.Rendered) {
	t.Helper()
	j, err := render.Load(filepath.Join(repoRoot, "jobs", "cellguard-validate"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := j.Render("")
	if err != nil {
		t.Fatal(err)
	}
	return j, r
}

// The errand renders, its script is valid bash, and it runs the real
// validator with the cellguard job's config when there is one.
func TestErrandRenders(t *testing.T) {
	j, r := renderErrand(t)
	bashN(t, "bin/run", r["bin/run"])
	mustContain(t, string(r["bin/run"]), "args=(validate --phase pre-start --format json")
	if strings.TrimSpace(stripComments(string(r["monit"]))) != "" {
		t.Errorf("an errand has no monit process:\n%s", r["monit"])
	}
	r, err := j.Render(`{cellguard_validate: {phase: drain, format: human}}`)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(r["bin/run"]), "args=(validate --phase drain --format human")
	mustContain(t, string(r["bin/run"]), `"${CELLGUARD}" "${args[@]}" 2>&1 >/dev/null`)
	if _, err := j.Render(`{cellguard_validate: {phase: later}}`); err == nil || !strings.Contains(err.Error(), "cellguard_validate.phase must be pre-start or drain") {
		t.Errorf("bad phase: %v", err)
	}
}

// Run as BOSH would, with the real binary against an empty root: the
// report reaches stdout for every VM, and the exit code is validate's.
func TestErrandRunsTheValidator(t *testing.T) {
	_, r := renderErrand(t)
	root := t.TempDir()
	script := strings.ReplaceAll(string(r["bin/run"]), "/var/vcap/", root+"/vcap/")
	// Point validate at an empty root through a wrapper: no /proc there, so
	// it cannot run (exit 2) and says why, on this machine without touching it.
	bin := filepath.Join(root, "vcap/packages/cellguard/bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/usr/bin/env bash\nexec " + cellguardBin + " \"$@\" --root " + filepath.Join(root, "empty") + "\n"
	if err := render.WriteFile(filepath.Join(bin, "cellguard"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", script)
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("errand exit %v, want validate's 2 (could not run)\n%s", err, out)
	}
	mustContain(t, string(out), "cellguard-validate: no cellguard job on this VM")
	mustContain(t, string(out), "cellguard: error:")
	mustContain(t, string(out), ": exit 2 (0 passed, 1 a blocking check failed, 2 could not run)")
}
