package jobs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/spec/render"
)

const repoRoot = "../.."

// cellguardBin is the real binary, built from the main module once, so the
// rendered config is parsed by the same code (config.Parse with
// DisallowUnknownFields) that parses it on a VM.
var cellguardBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cellguard-spec-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cellguardBin = filepath.Join(dir, "cellguard")
	build := exec.Command("go", "build", "-o", cellguardBin, "./src/cmd/cellguard")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build cellguard: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func loadJob(t *testing.T) *render.Job {
	t.Helper()
	j, err := render.Load(filepath.Join(repoRoot, "jobs", "cellguard"))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func mustRender(t *testing.T, props string) render.Rendered {
	t.Helper()
	r, err := loadJob(t).Render(props)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// configCheck runs `cellguard config check` on a rendered config, under a
// root that holds the runtime binaries it names, as the VM does once the
// runtime's release is there.
func configCheck(t *testing.T, cfg []byte) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "cellguard.json")
	if err := os.WriteFile(p, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	var c struct {
		Validator struct {
			RuntimeBinaries map[string]string `json:"runtime_binaries"`
		} `json:"validator"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatalf("rendered config is not JSON: %v", err)
	}
	for _, bin := range c.Validator.RuntimeBinaries {
		hp := filepath.Join(root, bin)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := render.WriteFile(hp, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(cellguardBin, "config", "check", "--config", p, "--root", root).CombinedOutput()
	if err != nil {
		t.Fatalf("cellguard config check rejected the rendered config: %v\n%s\nconfig:\n%s", err, out, cfg)
	}
}

// checkIDsKnown runs the real validator on the rendered config against an
// empty root. It resolves the config's blocking and ignore lists first
// (naming any check id it does not have) and only then finds no /proc: so
// exit 2 for the missing /proc, and nothing else, means every id resolved.
func checkIDsKnown(t *testing.T, cfg []byte) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "cellguard.json")
	if err := os.WriteFile(p, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	emptyRoot := filepath.Join(dir, "empty-root")
	for _, phase := range []string{"pre-start", "drain"} {
		cmd := exec.Command(cellguardBin, "validate", "--phase", phase, "--config", p,
			"--root", emptyRoot, "--log-file", filepath.Join(dir, "log"))
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || strings.Contains(string(out), "unknown check id") ||
			!strings.Contains(string(out), "cellguard: error: open "+emptyRoot+"/proc: no such file or directory") {
			t.Errorf("validate --phase %s on an empty root: %v, want exit 2 for the missing /proc only, after the check ids resolved:\n%s", phase, err, out)
		}
	}
}

func decode(t *testing.T, cfg []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		t.Fatalf("rendered config is not JSON: %v\n%s", err, cfg)
	}
	return m
}

// lookup walks a dotted path through decoded JSON.
func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// configKey maps every job property to where it lands in the config file.
// A property missing here fails TestEveryPropertyIsMapped, so a new property
// cannot skip the defaults test.
var configKey = map[string]string{
	"cellguard.log.time_format":               "log.time_format",
	"cellguard.log.level":                     "log.level",
	"cellguard.daemons":                       "daemons",
	"cellguard.supervisor.protect":            "supervisor.protect",
	"cellguard.supervisor.pidfile":            "supervisor.pidfile",
	"cellguard.sysctl.profile":                "sysctl.profile",
	"cellguard.sysctl.set":                    "sysctl.set",
	"cellguard.sysctl.remove":                 "sysctl.remove",
	"cellguard.validator.runtime_roots":       "validator.runtime_roots",
	"cellguard.validator.namespaces":          "validator.namespaces",
	"cellguard.validator.runtime_binaries":    "validator.runtime_binaries",
	"cellguard.validator.ignore":              "validator.ignore",
	"cellguard.validator.blocking.pre_start":  "validator.blocking.pre-start",
	"cellguard.validator.blocking.drain":      "validator.blocking.drain",
	"cellguard.validator.fix":                 "validator.fix",
	"cellguard.validator.netns_probe":         "validator.netns_probe",
	"cellguard.validator.bpf_stat_iterator":   "validator.bpf_stat_iterator",
	"cellguard.validator.prometheus_textfile": "validator.prometheus_textfile",
	"cellguard.validator.runc_init_max_age":   "validator.runc_init_max_age",
	"cellguard.validator.probe_timeout":       "validator.probe_timeout",
	"cellguard.validator.budget":              "validator.budget",
	"cellguard.validator.extra_cgroup_roots":  "validator.extra_cgroup_roots",
	"cellguard.validator.extra_cgroup_slices": "validator.extra_cgroup_slices",
	"cellguard.delegate_units":                "delegate_units",
	"cellguard.validator.advisories":          "validator.advisories",
	"cellguard.validator.blocking_advisories": "validator.blocking_advisories",
	"cellguard.watch.listen":                  "watch.listen",
	"cellguard.watch.heal":                    "watch.heal",
	"cellguard.watch.heal_per_minute":         "watch.heal_per_minute",
	"cellguard.watch.period":                  "watch.period",
	"cellguard.drain.budget":                  "drain.budget",
	"cellguard.drain.block_on_shutdown":       "drain.block_on_shutdown",
	"cellguard.drain.heal":                    "drain.heal",
}

// renderedElsewhere are the properties that do not land in the config key
// for key, and where they go instead (each tested in watch_test.go).
var renderedElsewhere = map[string]string{
	"cellguard.watch.enabled":             "monit",
	"cellguard.watch.textfile_dir":        "watch.textfile (the directory plus cellguard_watch.prom) and pre-start's mkdir",
	"cellguard.watch.metrics.cert":        "config/certs/metrics.crt, watch.tls",
	"cellguard.watch.metrics.key":         "config/certs/metrics.key, watch.tls",
	"cellguard.watch.metrics.ca_cert":     "config/certs/metrics_ca.crt, watch.tls",
	"cellguard.watch.metrics.server_name": "config/prom_scraper_config.yml",
	"cellguard.watch.metrics.source_id":   "config/prom_scraper_config.yml, config/metric_targets.yml",
}

func TestEveryPropertyIsMappedAndDescribed(t *testing.T) {
	j := loadJob(t)
	for name, def := range j.Manifest.Properties {
		_, inConfig := configKey[name]
		if _, elsewhere := renderedElsewhere[name]; !inConfig && !elsewhere {
			t.Errorf("property %s is not in configKey: say where it lands in config/cellguard.json", name)
		}
		if !regexp.MustCompile(`^\((string|boolean|integer|list|hash)[^)]*\) \S`).MatchString(def.Description) {
			t.Errorf("property %s: description must start with its type, e.g. \"(string) ...\": %q", name, def.Description)
		}
	}
	for _, m := range []map[string]string{configKey, renderedElsewhere} {
		for name := range m {
			if _, ok := j.Manifest.Properties[name]; !ok {
				t.Errorf("%s is mapped, but the job spec does not declare it", name)
			}
		}
	}
}

// With no properties at all (the addon's plain form) the job renders, the
// config parses, and every default lands in the config unchanged; properties
// without a default are left out of the config.
func TestDefaultsMatchTheSpec(t *testing.T) {
	j := loadJob(t)
	r, err := j.Render("")
	if err != nil {
		t.Fatalf("render with no properties: %v", err)
	}
	cfg := r["config/cellguard.json"]
	configCheck(t, cfg)
	m := decode(t, cfg)
	for name, def := range j.Manifest.Properties {
		if _, elsewhere := renderedElsewhere[name]; elsewhere {
			continue
		}
		got, ok := lookup(m, configKey[name])
		if def.Default == nil {
			if ok {
				t.Errorf("%s has no default but the config sets %s = %v", name, configKey[name], got)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: config lacks %s", name, configKey[name])
			continue
		}
		want := roundTrip(t, def.Default)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: config %s = %#v, spec default %#v", name, configKey[name], got, want)
		}
	}
	if got, _ := lookup(m, "log.file"); got != "/var/vcap/sys/log/cellguard/cellguard.log" {
		t.Errorf("log.file = %v, want the job's log dir", got)
	}
}

// roundTrip turns a YAML default into what encoding/json would decode.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(yamlToJSON(v))
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func yamlToJSON(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := map[string]any{}
		for k, val := range x {
			m[fmt.Sprint(k)] = yamlToJSON(val)
		}
		return m
	case map[string]any:
		m := map[string]any{}
		for k, val := range x {
			m[k] = yamlToJSON(val)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, val := range x {
			l[i] = yamlToJSON(val)
		}
		return l
	default:
		return v
	}
}

// Representative deployments: each renders, parses with the real binary,
// and its scripts are valid bash.
var propertySets = []struct {
	name  string
	props string
	check func(t *testing.T, cfg map[string]any, r render.Rendered)
}{
	{name: "defaults", props: ``,
		check: func(t *testing.T, cfg map[string]any, r render.Rendered) {
			pre := string(r["bin/pre-start"])
			mustContain(t, pre, `unit protect-supervisor --config "${CONFIG}"`)
			mustNotContain(t, pre, "unit install")
			mustContain(t, pre, `"${CELLGUARD}" unit prune --config "${CONFIG}"`)
			if got := drainTimeout(t, r["config/cellguard.json"]); got != "75" {
				t.Errorf("cellguard drain timeout on the default config: %q, want 75 (60s and 15s)", got)
			}
			mustContain(t, string(r["bin/drain"]), "TEXTFILE=''")
			// Drain heals by default: a blocked drain leaves an evacuated cell
			// (docs/lifecycle.md, "Healing at drain").
			wantJSON(t, cfg, "drain", `{"budget":"60s","block_on_shutdown":false,"heal":true}`)
		}},
	{name: "garden cell", props: readTestdata("garden-cell.yml"),
		check: func(t *testing.T, cfg map[string]any, r render.Rendered) {
			pre := string(r["bin/pre-start"])
			mustContain(t, pre, `"${CELLGUARD}" unit install garden --start /var/vcap/jobs/garden/bin/garden_start --stop /var/vcap/jobs/garden/bin/garden_stop --pidfile /var/vcap/sys/run/garden/garden.pid --type forking --config "${CONFIG}"`)
			wantJSON(t, cfg, "daemons", `[{"name":"garden","start":"/var/vcap/jobs/garden/bin/garden_start","stop":"/var/vcap/jobs/garden/bin/garden_stop","pidfile":"/var/vcap/sys/run/garden/garden.pid","type":"forking","stop_timeout":"120s"}]`)
			wantJSON(t, cfg, "validator.daemons", `["garden"]`)
			wantJSON(t, cfg, "validator.blocking", `{"pre-start":["cgroup-integrity","runtime-versions"],"drain":[]}`)
			// Unquoted numbers in a manifest become the strings the config holds.
			wantJSON(t, cfg, "sysctl.set", `{"fs.inotify.max_user_watches":"524288","kernel.pid_max":"4194304"}`)
		}},
	{name: "concourse worker, protection off, everything set", props: `
cellguard:
  log: {time_format: unix-epoch, level: debug}
  daemons:
  - name: worker
    start: /var/vcap/jobs/worker/bin/worker_ctl start
    stop: /var/vcap/jobs/worker/bin/worker_ctl stop
    pidfile: /var/vcap/sys/run/worker/worker.pid
  supervisor: {protect: false}
  delegate_units: [concourse.service, other\x2dd.service]
  sysctl: {profile: none, set: {kernel.keys.maxkeys: "20000", kernel.pid_max: ">=4194304"}}
  validator:
    runtime_roots: [/run/containerd/runc]
    namespaces: [concourse]
    ignore: [runtime-versions]
    fix: true
    prometheus_textfile: /var/vcap/data/node_exporter/textfile/cellguard.prom
    blocking: {drain: [cgroup-integrity]}
    runc_init_max_age: 1m30s
    extra_cgroup_roots: [/system.slice/runit.service/garden, /concourse]
    extra_cgroup_slices: [/kubepods.slice]
    advisories:
    - {id: SITE-1, modified: "2026-12-06T00:00:00Z", summary: site rule,
       affected: [{package: {ecosystem: Go, name: github.com/opencontainers/runc},
                   ranges: [{type: SEMVER, events: [{introduced: "0"}, {fixed: 1.1.12}]}]}]}
    blocking_advisories: [CVE-2024-21626]
  drain: {budget: 2m30s, block_on_shutdown: true, heal: false}
`,
		check: func(t *testing.T, cfg map[string]any, r render.Rendered) {
			pre := string(r["bin/pre-start"])
			// Arguments with spaces reach cellguard as one word.
			mustContain(t, pre, `unit install worker --start /var/vcap/jobs/worker/bin/worker_ctl\ start --stop /var/vcap/jobs/worker/bin/worker_ctl\ stop --pidfile /var/vcap/sys/run/worker/worker.pid --config`)
			mustNotContain(t, pre, "protect-supervisor")
			wantJSON(t, cfg, "supervisor.protect", `false`)
			wantJSON(t, cfg, "validator.blocking", `{"drain":["cgroup-integrity"]}`)
			wantJSON(t, cfg, "validator.fix", `true`)
			wantJSON(t, cfg, "validator.runc_init_max_age", `"1m30s"`)
			wantJSON(t, cfg, "validator.extra_cgroup_roots", `["/system.slice/runit.service/garden","/concourse"]`)
			wantJSON(t, cfg, "validator.extra_cgroup_slices", `["/kubepods.slice"]`)
			wantJSON(t, cfg, "delegate_units", `["concourse.service","other\\x2dd.service"]`)
			mustContain(t, pre, `unit delegate concourse.service --config "${CONFIG}"`)
			mustContain(t, pre, `unit delegate other\\x2dd.service --config "${CONFIG}"`)
			wantJSON(t, cfg, "validator.advisories", `[{"affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[{"events":[{"introduced":"0"},{"fixed":"1.1.12"}],"type":"SEMVER"}]}],"id":"SITE-1","modified":"2026-12-06T00:00:00Z","summary":"site rule"}]`)
			wantJSON(t, cfg, "validator.blocking_advisories", `["CVE-2024-21626"]`)
			// A floor reaches the config as written; cellguard parses ">=".
			wantJSON(t, cfg, "sysctl.set", `{"kernel.keys.maxkeys":"20000","kernel.pid_max":">=4194304"}`)
			wantJSON(t, cfg, "log", `{"file":"/var/vcap/sys/log/cellguard/cellguard.log","time_format":"unix-epoch","level":"debug"}`)
			wantJSON(t, cfg, "drain", `{"budget":"2m30s","block_on_shutdown":true,"heal":false}`)
			// bin/drain asks cellguard for its bound: the budget plus a quarter
			// of it, at most 15s (Go's rule; no copy in the template).
			mustContain(t, string(r["bin/drain"]), `LIMIT=$(timeout --foreground --kill-after=2 10 "${CELLGUARD}" drain timeout --config "${CONFIG}" 3>&-)`)
			mustNotContain(t, string(r["bin/drain"]), "150")
			if got := drainTimeout(t, r["config/cellguard.json"]); got != "165" {
				t.Errorf("cellguard drain timeout on the rendered config: %q, want 165 (150s and 15s)", got)
			}
			mustContain(t, string(r["bin/drain"]), "TEXTFILE=/var/vcap/data/node_exporter/textfile/cellguard.prom")
		}},
	{name: "monit pidfile given", props: `{cellguard: {supervisor: {pidfile: /var/vcap/monit/monit.pid}}}`,
		check: func(t *testing.T, cfg map[string]any, r render.Rendered) {
			mustContain(t, string(r["bin/pre-start"]), `monit_pid=$(cat -- /var/vcap/monit/monit.pid)`)
			mustContain(t, string(r["bin/pre-start"]), `unit protect-supervisor --pid "${monit_pid}" --config "${CONFIG}"`)
		}},
}

func TestPropertySets(t *testing.T) {
	for _, tc := range propertySets {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.props)
			configCheck(t, r["config/cellguard.json"])
			checkIDsKnown(t, r["config/cellguard.json"])
			for _, script := range []string{"bin/pre-start", "bin/drain", "bin/watch_ctl"} {
				bashN(t, script, r[script])
			}
			mustContain(t, string(r["monit"]), "check process cellguard-watch")
			tc.check(t, decode(t, r["config/cellguard.json"]), r)
		})
	}
}

// Bad properties fail at render time with the property's name: a wrong
// type, and a name, command or path that reaches the job's scripts (the
// template's two render-time refusals; the rest is config.Load's).
func TestBadPropertiesFailToRender(t *testing.T) {
	testCases := []struct{ name, props, want string }{
		{"daemon without start", `{cellguard: {daemons: [{name: garden}]}}`, "cellguard.daemons[0].start is required"},
		{"daemon without name", `{cellguard: {daemons: [{start: /bin/true}]}}`, "cellguard.daemons[0].name is required"},
		{"daemons not a list", `{cellguard: {daemons: {name: g}}}`, "cellguard.daemons must be a list"},
		{"protect as string", `{cellguard: {supervisor: {protect: "yes"}}}`, "cellguard.supervisor.protect must be true or false"},
		{"roots as string", `{cellguard: {validator: {runtime_roots: /run/runc}}}`, "cellguard.validator.runtime_roots must be a list of strings"},
		{"blocking not a list", `{cellguard: {validator: {blocking: {drain: cgroup-integrity}}}}`, "cellguard.validator.blocking.drain must be a list of strings"},
		{"sysctl value a list", `{cellguard: {sysctl: {set: {kernel.pid_max: [1]}}}}`, "cellguard.sysctl.set.kernel.pid_max must be a string"},
		{"binaries value a number", `{cellguard: {validator: {runtime_binaries: {runc: 1}}}}`, "cellguard.validator.runtime_binaries.runc must be a string"},
		{"runc init age a number", `{cellguard: {validator: {runc_init_max_age: 300}}}`, "cellguard.validator.runc_init_max_age must be a string"},
		{"budget a number", `{cellguard: {drain: {budget: 60}}}`, "cellguard.drain.budget must be a string"},
		{"ignore not a list", `{cellguard: {validator: {ignore: all}}}`, "cellguard.validator.ignore must be a list of strings"},
		{"extra roots as string", `{cellguard: {validator: {extra_cgroup_roots: /garden}}}`, "cellguard.validator.extra_cgroup_roots must be a list of strings"},
		{"slices as string", `{cellguard: {validator: {extra_cgroup_slices: /kubepods.slice}}}`, "cellguard.validator.extra_cgroup_slices must be a list of strings"},
		{"delegate units as string", `{cellguard: {delegate_units: concourse.service}}`, "cellguard.delegate_units must be a list of strings"},
		{"delegate unit not a service", `{cellguard: {delegate_units: [concourse.scope]}}`, `cellguard.delegate_units[0]: "concourse.scope" must be a service unit name`},
		{"delegate unit a path", `{cellguard: {delegate_units: [/lib/systemd/system/concourse.service]}}`, `must be a service unit name`},
		{"advisories a record, not a list", `{cellguard: {validator: {advisories: {id: X}}}}`, "cellguard.validator.advisories must be a list of OSV records"},
		{"blocking advisories a string", `{cellguard: {validator: {blocking_advisories: CVE-2024-21626}}}`, "cellguard.validator.blocking_advisories must be a list of strings"},
		// What would reach a root shell script: refused here with the
		// property's name, by the rules config.Load applies.
		{"daemon name runs a command", `{cellguard: {daemons: [{name: "garden$(echo INJECTED >&2)", start: /bin/true}]}}`, "cellguard.daemons[0].name must be 1 to 64 letters"},
		{"daemon name starts with -", `{cellguard: {daemons: [{name: -garden, start: /bin/true}]}}`, "cellguard.daemons[0].name must be 1 to 64 letters"},
		{"daemon start ends a command", `{cellguard: {daemons: [{name: g, start: "/bin/true; touch /x"}]}}`, "cellguard.daemons[0].start (its executable) must be an absolute, clean path"},
		{"daemon start relative", `{cellguard: {daemons: [{name: g, start: "bin/true"}]}}`, "cellguard.daemons[0].start (its executable) must be an absolute, clean path"},
		{"daemon stop with a newline", `{cellguard: {daemons: [{name: g, start: /bin/true, stop: "/bin/true\ntouch /x"}]}}`, "cellguard.daemons[0].stop (its executable) must be an absolute, clean path"},
		{"daemon pidfile climbs", `{cellguard: {daemons: [{name: g, start: /bin/true, pidfile: /var/vcap/sys/run/../../../etc/shadow}]}}`, "cellguard.daemons[0].pidfile must be an absolute, clean path"},
		{"textfile dir ends the quote", `{cellguard: {watch: {textfile_dir: '/tmp/x"; echo INJECTED >&2; echo "'}}}`, "cellguard.watch.textfile_dir must be an absolute, clean path"},
		{"textfile dir climbs", `{cellguard: {watch: {textfile_dir: /var/vcap/data/../../../etc}}}`, "cellguard.watch.textfile_dir must be an absolute, clean path"},
		{"drain textfile relative", `{cellguard: {validator: {prometheus_textfile: cellguard.prom}}}`, "cellguard.validator.prometheus_textfile must be an absolute, clean path"},
		{"monit pidfile runs a command", `{cellguard: {supervisor: {pidfile: "/var/vcap/monit/$(touch /x)"}}}`, "cellguard.supervisor.pidfile must be an absolute, clean path"},
		{"delegate unit runs a command", `{cellguard: {delegate_units: ["$(touch /x).service"]}}`, "cellguard.delegate_units[0]: "},
		{"block on shutdown as string", `{cellguard: {drain: {block_on_shutdown: "yes"}}}`, "cellguard.drain.block_on_shutdown must be true or false"},
		{"drain heal as string", `{cellguard: {drain: {heal: "yes"}}}`, "cellguard.drain.heal must be true or false"},
	}
	j := loadJob(t)
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := j.Render(tc.props)
			if err == nil {
				t.Fatalf("rendered; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// Values have one judge, config.Load, which every subcommand runs and
// `cellguard config check` (pre-start's first step) reports: the template
// passes them through type-checked, and each bad value is refused on the
// rendered config, naming its key, the job property behind it and what
// would be accepted (issue 40: the Ruby copies of the duration grammar, the
// id list, the enums and the paths that reach no script are gone).
func TestConfigCheckJudgesDurationsAndCheckIDs(t *testing.T) {
	testCases := []struct{ name, props, want string }{
		{"runc init age without unit", `{cellguard: {validator: {runc_init_max_age: "300"}}}`, `validator.runc_init_max_age "300": time: missing unit in duration "300": want Go's form such as "90s" or "1m30s", above zero; leave it out for the default (job property cellguard.validator.runc_init_max_age)`},
		{"runc init age zero", `{cellguard: {validator: {runc_init_max_age: 0s}}}`, `validator.runc_init_max_age "0s": must be above zero; leave it out for the default`},
		{"probe timeout below 1s", `{cellguard: {validator: {probe_timeout: 500ms}}}`, `validator.probe_timeout "500ms": must be from 1s to 5m; leave it out for the default (job property cellguard.validator.probe_timeout)`},
		{"runc init age negative", `{cellguard: {validator: {runc_init_max_age: -5m}}}`, `validator.runc_init_max_age "-5m": must not be negative`},
		{"runc init age overflows", `{cellguard: {validator: {runc_init_max_age: 2562048h}}}`, `invalid duration "2562048h"`},
		{"watch period in microseconds of zero", `{cellguard: {watch: {period: 0µs}}}`, `watch.period "0µs": must be above zero`},
		{"budget without unit", `{cellguard: {drain: {budget: "60"}}}`, `drain.budget "60": time: missing unit in duration "60"`},
		{"budget zero", `{cellguard: {drain: {budget: 0s}}}`, `drain.budget "0s": must be from 1s to 1h; leave it out for the default (job property cellguard.drain.budget)`},
		{"budget below 1s", `{cellguard: {drain: {budget: 500ms}}}`, `drain.budget "500ms": must be from 1s to 1h`},
		{"budget above 1h", `{cellguard: {drain: {budget: 2h}}}`, `drain.budget "2h": must be from 1s to 1h`},
		{"validator budget without unit", `{cellguard: {validator: {budget: "60"}}}`, `validator.budget "60": time: missing unit in duration "60"`},
		{"validator budget below 1s", `{cellguard: {validator: {budget: 500ms}}}`, `validator.budget "500ms": must be from 1s to 1h`},
		{"validator budget above 1h", `{cellguard: {validator: {budget: 2h}}}`, `validator.budget "2h": must be from 1s to 1h`},
		{"daemon stop timeout zero", `{cellguard: {daemons: [{name: g, start: /bin/true, stop_timeout: 0s}]}}`, `daemons[0].stop_timeout "0s": must be above zero; leave it out for the default (job property cellguard.daemons[0].stop_timeout)`},
		{"unknown drain blocking id", `{cellguard: {validator: {blocking: {drain: [cgroup-integrty]}}}}`, `validator.blocking.drain "cgroup-integrty": unknown check id; want one of cgroup-integrity, `},
		{"unknown pre-start blocking id", `{cellguard: {validator: {blocking: {pre_start: [no-such-check]}}}}`, `validator.blocking.pre-start "no-such-check": unknown check id; want one of `},
		{"pre-start blocking names the property", `{cellguard: {validator: {blocking: {pre_start: [no-such-check]}}}}`, `(job property cellguard.validator.blocking.pre_start)`},
		{"unknown ignored id", `{cellguard: {validator: {ignore: [ghosts]}}}`, `validator.ignore "ghosts": unknown check id`},
		{"all is no blocking id", `{cellguard: {validator: {blocking: {drain: [all]}}}}`, `validator.blocking.drain "all": unknown check id`},
		// The rest of what reaches no shell.
		{"duplicate daemon", `{cellguard: {daemons: [{name: g, start: /bin/true}, {name: g, start: /bin/true}]}}`, `daemons[1].name "g": another daemon has this name`},
		{"daemon type", `{cellguard: {daemons: [{name: g, start: /bin/true, type: "exec; touch /x"}]}}`, `daemons[0].type "exec; touch /x": want exec or forking`},
		{"daemon with unknown key", `{cellguard: {daemons: [{name: g, start: /bin/true, pid_file: /x}]}}`, `daemons[0].pid_file: unknown key (known: name, pidfile, `},
		{"time format", `{cellguard: {log: {time_format: iso}}}`, `log.time_format: unknown log time format "iso"`},
		{"level", `{cellguard: {log: {level: verbose}}}`, `log.level: unknown log level "verbose"`},
		{"extra root relative", `{cellguard: {validator: {extra_cgroup_roots: [garden]}}}`, `validator.extra_cgroup_roots[0] "garden": want an absolute cgroup path`},
		{"extra root is the root", `{cellguard: {validator: {extra_cgroup_roots: [/]}}}`, `validator.extra_cgroup_roots[0] "/": holds more than a runtime's containers`},
		{"extra root is a unit", `{cellguard: {validator: {extra_cgroup_roots: [/system.slice/runit.service]}}}`, `"/system.slice/runit.service": holds more than a runtime's containers`},
		{"extra root is a slice", `{cellguard: {validator: {extra_cgroup_roots: [/system.slice/]}}}`, `"/system.slice/": holds more than a runtime's containers`},
		{"slice root not a slice", `{cellguard: {validator: {extra_cgroup_slices: [/garden]}}}`, `validator.extra_cgroup_slices[0] "/garden": want an absolute path ending in a slice`},
		{"slice root relative", `{cellguard: {validator: {extra_cgroup_slices: [kubepods.slice]}}}`, `"kubepods.slice": want an absolute path ending in a slice`},
		{"slice root system.slice", `{cellguard: {validator: {extra_cgroup_slices: [/system.slice]}}}`, `"/system.slice": holds every other service`},
		{"slice root user.slice", `{cellguard: {validator: {extra_cgroup_slices: [/user.slice]}}}`, `"/user.slice": holds every other service`},
		{"tls cert alone", `{cellguard: {watch: {metrics: {cert: C}}}}`, "watch.tls: set cert, key and ca together (mutual TLS), or none (job property cellguard.watch.metrics.cert, .key and .ca_cert)"},
		{"heal per minute zero", `{cellguard: {watch: {heal_per_minute: 0}}}`, "watch.heal_per_minute 0: must be a whole number above zero"},
		{"listen without host", `{cellguard: {watch: {listen: "14875"}}}`, `watch.listen "14875": want host:port`},
		{"listen port too big", `{cellguard: {watch: {listen: "127.0.0.1:99999"}}}`, `port "99999": want 0 to 65535`},
		{"listen on the VM without TLS", `{cellguard: {watch: {listen: "10.0.16.5:14875"}}}`, `watch.listen "10.0.16.5:14875": serves /metrics beyond this VM without TLS: keep a loopback address`},
		// Paths that reach no script (the template passed them through).
		// OSV records: the template passes them through, config judges them.
		{"advisory without modified", `{cellguard: {validator: {advisories: [{id: SITE-1, summary: s}]}}}`, `validator.advisories[0]: advisory SITE-1: modified "": want an RFC 3339 time`},
		{"promoting an unknown id", `{cellguard: {validator: {blocking_advisories: [CVE-2024-2162]}}}`, `validator.blocking_advisories[0] "CVE-2024-2162": want the id of a shipped advisory`},
		{"runtime root with a space", `{cellguard: {validator: {runtime_roots: ["/run/runc /etc"]}}}`, `validator.runtime_roots[0]: unit: invalid path`},
		{"runtime binary runs a command", "{cellguard: {validator: {runtime_binaries: {runc: \"/usr/bin/`touch /x`\"}}}}", `validator.runtime_binaries.runc: unit: invalid path`},
	}
	j := loadJob(t)
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := j.Render(tc.props)
			if err != nil {
				t.Fatalf("the template judged it (a second home of the rule): %v", err)
			}
			p := filepath.Join(t.TempDir(), "cellguard.json")
			if err := os.WriteFile(p, r["config/cellguard.json"], 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(cellguardBin, "config", "check", "--config", p).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("config check: %v, want exit 2 naming %q:\n%s", err, tc.want, out)
			}
		})
	}
}

// drainTimeout is what the real `cellguard drain timeout` says for cfg.
func drainTimeout(t *testing.T, cfg []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cellguard.json")
	if err := os.WriteFile(p, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cellguardBin, "drain", "timeout", "--config", p).Output()
	if err != nil {
		t.Fatalf("cellguard drain timeout: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// bin/drain's one number of its own, the bound it uses when cellguard
// cannot give one, is Go's for the default budget.
func TestDrainDefaultLimitIsGos(t *testing.T) {
	r := mustRender(t, "")
	m := regexp.MustCompile(`(?m)^DEFAULT_LIMIT=([0-9]+)$`).FindSubmatch(r["bin/drain"])
	if m == nil {
		t.Fatalf("bin/drain has no DEFAULT_LIMIT:\n%s", r["bin/drain"])
	}
	if got := drainTimeout(t, []byte(`{}`)); string(m[1]) != got {
		t.Errorf("bin/drain DEFAULT_LIMIT=%s, cellguard drain timeout with the default budget: %s", m[1], got)
	}
	if got := drainTimeout(t, r["config/cellguard.json"]); string(m[1]) != got {
		t.Errorf("bin/drain DEFAULT_LIMIT=%s, cellguard drain timeout with the spec's default budget: %s", m[1], got)
	}
}

// A config that names an unknown id anyway (rendered by an older release,
// or edited on the VM) is refused by config check, pre-start's first step,
// and drain does not block on it: the id check above would say nothing if
// the binary stopped naming unknown ids, so this keeps it honest.
func TestUnknownCheckIDIsNamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cellguard.json")
	if err := os.WriteFile(p, []byte(`{"validator":{"blocking":{"pre-start":["no-such-check"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(cellguardBin, "validate", "--phase", "pre-start", "--config", p,
		"--root", filepath.Join(dir, "empty-root"), "--log-file", filepath.Join(dir, "log")).CombinedOutput()
	if !strings.Contains(string(out), `"no-such-check": unknown check id`) {
		t.Fatalf("validate did not name the unknown id:\n%s", out)
	}
	out, err := exec.Command(cellguardBin, "config", "check", "--config", p).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `validator.blocking.pre-start "no-such-check": unknown check id`) {
		t.Fatalf("config check: %v\n%s", err, out)
	}
}

// A property the templates read with p() but the spec does not declare is
// what BOSH reports as "Can't find property"; the fixture job proves the
// renderer surfaces BOSH's own message, so TestDefaultsMatchTheSpec would
// fail with it if a template read an undeclared or default-less property
// with p().
func TestRequiredPropertyMissingGivesBOSHError(t *testing.T) {
	j, err := render.Load("testdata/required")
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Render(`{}`)
	if err == nil || !strings.Contains(err.Error(), "Can't find property 'required.name'") {
		t.Fatalf("want BOSH's Can't find property error, got %v", err)
	}
	r, err := j.Render(`{required: {name: x}}`)
	if err != nil {
		t.Fatalf("render with the property set: %v", err)
	}
	if got := strings.TrimSpace(string(r["out"])); got != "x" {
		t.Errorf("rendered %q, want x", got)
	}
}

// readTestdata reads a property set at package init.
func readTestdata(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("want\n  %s\nin:\n%s", sub, s)
	}
}

func mustNotContain(t *testing.T, s, sub string) {
	t.Helper()
	if strings.Contains(s, sub) {
		t.Errorf("do not want %q in:\n%s", sub, s)
	}
}

func wantJSON(t *testing.T, cfg map[string]any, path, want string) {
	t.Helper()
	got, ok := lookup(cfg, path)
	if !ok {
		t.Errorf("config lacks %s", path)
		return
	}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("config %s = %s, want %s", path, g, want)
	}
}

func bashN(t *testing.T, name string, script []byte) {
	t.Helper()
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(string(script))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s\n%s", name, err, out, script)
	}
	if !strings.HasPrefix(string(script), "#!/usr/bin/env bash\n") {
		t.Errorf("%s must start with #!/usr/bin/env bash", name)
	}
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Every duration form the template accepts, the real binary and the schema
// accept too (the template is stricter than Go only in refusing zero).
func TestRuncInitMaxAgeForms(t *testing.T) {
	s := compileSchema(t)
	for _, d := range []string{"5m", "90s", "1m30s", "1.5h", ".5h", "300ms", "2562047h"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			props := fmt.Sprintf("{cellguard: {validator: {runc_init_max_age: %q}}}", d)
			r := mustRender(t, props)
			configCheck(t, r["config/cellguard.json"])
			wantJSON(t, decode(t, r["config/cellguard.json"]), "validator.runc_init_max_age", fmt.Sprintf("%q", d))
			if err := s.Validate(resolve(t, props)); err != nil {
				t.Errorf("schema rejects %s: %v", d, err)
			}
		})
	}
}

// The rendered advisories reach the real validator's runtime-versions
// check: with a fake runc 1.1.11 in a --root, the shipped CVE-2024-21626
// (a security advisory) reports without blocking; promoted through
// blocking_advisories it blocks; an operator's OSV record from the property
// is matched, and as a hazard blocks.
func TestAdvisoriesPropertyReachesTheValidator(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"proc/sys/fs", "usr/sbin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/fs/pipe-user-pages-soft"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeExec(t, filepath.Join(root, "usr/sbin/runc"),
		"#!/bin/sh\n[ \"$1\" = --version ] || exit 3\nprintf 'runc version 1.1.11\\ncommit: v1.1.11-0-g4bccb38c\\nspec: 1.0.2-dev\\n'\n")
	type finding struct {
		Status string
		Data   map[string]string
	}
	validate := func(props string) (blocked bool, byID map[string]finding) {
		p := filepath.Join(t.TempDir(), "cellguard.json")
		if err := os.WriteFile(p, mustRender(t, "{cellguard: {validator: {runtime_binaries: {runc: /usr/sbin/runc}"+props+"}}}")["config/cellguard.json"], 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(cellguardBin, "validate", "--phase", "pre-start", "--config", p, "--root", root,
			"--format", "json", "--log-file", filepath.Join(dir, "log")).Output()
		var report struct {
			Results []struct {
				ID       string
				Blocking bool
				Findings []finding
			}
		}
		if err := json.Unmarshal(out, &report); err != nil {
			t.Fatalf("validate printed no JSON report: %v\n%s", err, out)
		}
		byID = map[string]finding{}
		for _, r := range report.Results {
			if r.ID != "runtime-versions" {
				continue
			}
			for _, f := range r.Findings {
				if id := f.Data["advisory"]; id != "" {
					byID[id] = f
				}
			}
			return r.Blocking, byID
		}
		t.Fatalf("no runtime-versions result in:\n%s", out)
		return false, nil
	}
	blocked, by := validate("")
	if f := by["CVE-2024-21626"]; blocked || f.Status != "warn" || f.Data["class"] != "security" {
		t.Errorf("shipped CVE alone: blocking %v, finding %+v; want a warning that does not block", blocked, f)
	}
	blocked, by = validate(", blocking_advisories: [CVE-2024-21626]")
	if f := by["CVE-2024-21626"]; !blocked || f.Status != "fail" || f.Data["promoted"] != "true" {
		t.Errorf("promoted: blocking %v, finding %+v; want it to block", blocked, f)
	}
	blocked, by = validate(`, advisories: [{id: SITE-1, modified: "2026-12-06T00:00:00Z", summary: "site: runc before 1.1.12 hangs our health checks",
	    affected: [{package: {ecosystem: Go, name: github.com/opencontainers/runc}, ranges: [{type: SEMVER, events: [{introduced: "0"}, {fixed: 1.1.12}]}]}],
	    database_specific: {cellguard: {class: hazard, impact: hang}}}]`)
	if f := by["SITE-1"]; !blocked || f.Status != "fail" || f.Data["class"] != "hazard" {
		t.Errorf("operator's hazard: blocking %v, finding %+v; want it to block", blocked, f)
	}
}
