package jobs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// Manifest values reach a root shell in the job's scripts. Each must arrive
// as one word quoted by Shellwords.escape (Ruby's stdlib): the one quoting
// helper, so there is one thing to get right. Quoting holds only in argument
// position: inside double quotes a quoted newline still ends nothing, but
// in a comment it starts a new line (a command), so no value is written
// there.
var (
	erbOutput = regexp.MustCompile(`<%=(.*?)-?%>`)
	// escaped: Shellwords.escape(X), or a list of words each escaped.
	escaped = regexp.MustCompile(`^\s*(Shellwords\.escape\(.*\)|\w+\.map \{ \|(\w+)\| Shellwords\.escape\(\w+\) \}\.join\(' '\))\s*$`)
)

func TestScriptTemplatesQuoteEveryValue(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot, "jobs/*/templates/bin/*.erb"))
	if err != nil || len(scripts) < 4 {
		t.Fatalf("script templates: %v %v", scripts, err)
	}
	tags := 0
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, loc := range erbOutput.FindAllStringSubmatchIndex(line, -1) {
				tags++
				expr, before := line[loc[2]:loc[3]], line[:loc[0]]
				where := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))) + "/" + filepath.Base(path)
				if !escaped.MatchString(expr) {
					t.Errorf("%s:%d: %q is not quoted by Shellwords.escape", where, i+1, strings.TrimSpace(expr))
				}
				if strings.Count(before, `"`)%2 != 0 || strings.Count(before, `'`)%2 != 0 {
					t.Errorf("%s:%d: a value inside quotes, where Shellwords.escape does not hold: %s", where, i+1, line)
				}
				if strings.HasPrefix(strings.TrimSpace(before), "#") || strings.Contains(before, " #") {
					t.Errorf("%s:%d: a value in a comment, where a newline starts a command: %s", where, i+1, line)
				}
			}
		}
	}
	t.Logf("%d value outputs in %d script templates, each quoted in argument position", tags, len(scripts))
}

// A slot is one place a string goes in the job's properties: a property,
// an element of a list, a hash's value or key.
type slot struct {
	prop string // as the templates name it in a refusal
	set  func(props map[string]any, v string)
	// goKey is the config key `cellguard config check` judges by the same
	// rule (unitfile), and goValue what the template would put there.
	goKey   string
	goValue func(v string) string
}

// at sets a dotted property path in nested maps.
func at(path string) func(map[string]any, string) {
	return func(props map[string]any, v string) { setPath(props, path, v) }
}

func listAt(path string) func(map[string]any, string) {
	return func(props map[string]any, v string) { setPath(props, path, []any{v}) }
}

// hashAt and hashKeyAt add to the hash, so a value's slot and a key's
// slot of the same hash are both set.
func hashAt(path, key string) func(map[string]any, string) {
	return func(props map[string]any, v string) { hashOf(props, path)[key] = v }
}

func hashKeyAt(path, value string) func(map[string]any, string) {
	return func(props map[string]any, v string) { hashOf(props, path)[v] = value }
}

func hashOf(props map[string]any, path string) map[string]any {
	m := props
	for _, k := range strings.Split(path, ".") {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}

// daemonAt sets one key of the one daemon every hostile render has.
func daemonAt(key string) func(map[string]any, string) {
	return func(props map[string]any, v string) {
		d := props["cellguard"].(map[string]any)["daemons"].([]any)[0].(map[string]any)
		d[key] = v
	}
}

// advisoryAt puts v in one field of an operator's OSV record that is
// otherwise valid: the template passes records through, config judges them.
func advisoryAt(field string) func(map[string]any, string) {
	return func(props map[string]any, v string) {
		rec := map[string]any{"id": "SITE-1", "modified": "2026-12-06T00:00:00Z", "summary": "site rule",
			"affected": []any{map[string]any{"package": map[string]any{"ecosystem": "Go", "name": "github.com/opencontainers/runc"},
				"ranges": []any{map[string]any{"type": "SEMVER", "events": []any{map[string]any{"introduced": "0"}, map[string]any{"fixed": "1.1.12"}}}}}}}
		rec[field] = v
		setPath(props, "cellguard.validator.advisories", []any{rec})
	}
}

func same(v string) string { return v }

// cellguardSlots: every string the cellguard job takes. The rule-bearing
// ones (goKey set), the names and paths that reach a shell, are judged by
// the same rule in both places (unitfile's). The rest, cgroup roots and
// slices, runtime roots and binaries included, are
// passed through and judged by config.Load alone; here they still prove
// that no value reaches a shell unquoted.
var cellguardSlots = []slot{
	{prop: "cellguard.log.time_format", set: at("cellguard.log.time_format")},
	{prop: "cellguard.log.level", set: at("cellguard.log.level")},
	{prop: "cellguard.daemons[0].name", set: daemonAt("name"), goKey: "daemons[0].name", goValue: same},
	{prop: "cellguard.daemons[0].start", set: daemonAt("start"), goKey: "daemons[0].start", goValue: same},
	{prop: "cellguard.daemons[0].stop", set: daemonAt("stop"), goKey: "daemons[0].stop", goValue: same},
	{prop: "cellguard.daemons[0].pidfile", set: daemonAt("pidfile"), goKey: "daemons[0].pidfile", goValue: same},
	{prop: "cellguard.daemons[0].type", set: daemonAt("type")},
	{prop: "cellguard.daemons[0].start_timeout", set: daemonAt("start_timeout")},
	{prop: "cellguard.daemons[0].stop_timeout", set: daemonAt("stop_timeout")},
	{prop: "cellguard.supervisor.pidfile", set: at("cellguard.supervisor.pidfile"), goKey: "supervisor.pidfile", goValue: same},
	{prop: "cellguard.delegate_units[0]", set: listAt("cellguard.delegate_units"), goKey: "delegate_units[0]", goValue: same},
	{prop: "cellguard.sysctl.profile", set: at("cellguard.sysctl.profile")},
	{prop: "cellguard.sysctl.set.kernel.pid_max", set: hashAt("cellguard.sysctl.set", "kernel.pid_max")},
	{prop: "cellguard.sysctl.set (a key)", set: hashKeyAt("cellguard.sysctl.set", "1")},
	{prop: "cellguard.sysctl.remove[0]", set: listAt("cellguard.sysctl.remove")},
	{prop: "cellguard.drain.budget", set: at("cellguard.drain.budget")},
	{prop: "cellguard.validator.runtime_roots[0]", set: listAt("cellguard.validator.runtime_roots")},
	{prop: "cellguard.validator.namespaces[0]", set: listAt("cellguard.validator.namespaces")},
	{prop: "cellguard.validator.runtime_binaries.runc", set: hashAt("cellguard.validator.runtime_binaries", "runc")},
	{prop: "cellguard.validator.runtime_binaries (a key)", set: hashKeyAt("cellguard.validator.runtime_binaries", "/usr/bin/runc")},
	{prop: "cellguard.validator.ignore", set: listAt("cellguard.validator.ignore")},
	{prop: "cellguard.validator.blocking_advisories", set: listAt("cellguard.validator.blocking_advisories")},
	{prop: "cellguard.validator.advisories[0].summary", set: advisoryAt("summary")},
	{prop: "cellguard.validator.advisories[0].id", set: advisoryAt("id")},
	{prop: "cellguard.validator.blocking.pre_start", set: listAt("cellguard.validator.blocking.pre_start")},
	{prop: "cellguard.validator.blocking.drain", set: listAt("cellguard.validator.blocking.drain")},
	{prop: "cellguard.validator.prometheus_textfile", set: at("cellguard.validator.prometheus_textfile"), goKey: "validator.prometheus_textfile", goValue: same},
	{prop: "cellguard.validator.runc_init_max_age", set: at("cellguard.validator.runc_init_max_age")},
	{prop: "cellguard.validator.probe_timeout", set: at("cellguard.validator.probe_timeout")},
	{prop: "cellguard.validator.budget", set: at("cellguard.validator.budget")},
	{prop: "cellguard.validator.extra_cgroup_roots", set: listAt("cellguard.validator.extra_cgroup_roots")},
	{prop: "cellguard.validator.extra_cgroup_slices", set: listAt("cellguard.validator.extra_cgroup_slices")},
	{prop: "cellguard.watch.listen", set: at("cellguard.watch.listen")},
	{prop: "cellguard.watch.period", set: at("cellguard.watch.period")},
	{prop: "cellguard.watch.textfile_dir", set: at("cellguard.watch.textfile_dir"), goKey: "watch.textfile",
		goValue: func(v string) string { return v + "/cellguard_watch.prom" }},
	{prop: "cellguard.watch.metrics.cert", set: at("cellguard.watch.metrics.cert")},
	{prop: "cellguard.watch.metrics.key", set: at("cellguard.watch.metrics.key")},
	{prop: "cellguard.watch.metrics.ca_cert", set: at("cellguard.watch.metrics.ca_cert")},
	{prop: "cellguard.watch.metrics.server_name", set: at("cellguard.watch.metrics.server_name")},
	{prop: "cellguard.watch.metrics.source_id", set: at("cellguard.watch.metrics.source_id")},
}

var validateSlots = []slot{
	{prop: "cellguard_validate.phase", set: at("cellguard_validate.phase")},
	{prop: "cellguard_validate.format", set: at("cellguard_validate.format")},
}

// hostileCorpus: each value as an attacker with manifest access would
// write it; M is replaced by a marker file's path, which no value may
// create. Shell syntax of every kind, paths that climb or start with '-',
// 4 KiB strings, and values that are fine, so the scripts also run with
// values the templates accept.
func hostileCorpus(m string) []string {
	return []string{
		"$(touch " + m + ")",
		"`touch " + m + "`",
		`x"; touch ` + m + `; echo "`,
		`x'; touch ` + m + `; echo '`,
		"x\ntouch " + m + "\n",
		"x\rtouch " + m,
		"x;touch " + m,
		"x && touch " + m,
		"x | tee " + m,
		"x >" + m,
		"${HOME:+$(touch " + m + ")}",
		"/var/vcap/data/$(touch${IFS}" + m + ")",
		"/var/vcap/data/cellguard/`touch${IFS}" + m + "`.prom",
		"/var/vcap/sys/run/../../../../etc/cellguard",
		"../../../etc/passwd",
		"-rf",
		"--config=/etc/shadow",
		"-n $(touch " + m + ")",
		"/bin/true --x=$(touch " + m + ")",
		"/bin/sh -c touch%20" + m,
		"%n%h%% $HOME ~root *",
		"garden\u202e.service",
		"<%= %x(touch " + m + ") %>",
		"#{`touch " + m + "`}",
		strings.Repeat("a", 4096),
		strings.Repeat(" ", 4000) + "$(touch " + m + ")",
		"/var/vcap/data/" + strings.Repeat("a", 4081),
		"/var/vcap/data" + strings.Repeat("/abc", 1021),
		// Linux's limits, at and past the edge: 255 bytes a name, 4095 a path.
		"/var/vcap/data/" + strings.Repeat("a", 255),
		"/var/vcap/data/" + strings.Repeat("a", 256),
		"/var/vcap/data" + strings.Repeat("/abc", 1020) + "x",
		"/var/vcap/data" + strings.Repeat("/abc", 1020) + "xy",
		"/var/vcap/data/cellguard-hostile",
		"garden",
	}
}

// names reports whether a render's error names prop (and not a longer
// property that starts with it, such as ...start_timeout for ...start).
func names(msg, prop string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(prop) + `([^A-Za-z0-9_.\[]|$)`).MatchString(msg)
}

// problemLine is the line of a render's error that names prop.
func problemLine(msg, prop string) string {
	for _, l := range strings.Split(msg, "\n") {
		if i := strings.Index(l, "cellguard job: "); i >= 0 && names(l, prop) {
			return l[i:]
		}
	}
	return msg
}

// configOnlyJob is the cellguard job with only its config template, the one
// that refuses: each refusal costs one ruby run instead of ten.
func configOnlyJob(t *testing.T) *render.Job {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cellguard")
	src := filepath.Join(repoRoot, "jobs/cellguard")
	b, err := os.ReadFile(filepath.Join(src, "spec"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	spec["templates"] = map[string]any{"config/cellguard.json.erb": "config/cellguard.json"}
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := os.ReadFile(filepath.Join(src, "templates/config/cellguard.json.erb"))
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string][]byte{"spec": out, "monit": nil, "templates/config/cellguard.json.erb": tpl} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func hostileProps(slots []slot, v string) map[string]any {
	props := map[string]any{"cellguard": map[string]any{
		"daemons": []any{map[string]any{"name": "g", "start": "/bin/true"}},
	}}
	for _, s := range slots {
		s.set(props, v)
	}
	return props
}

// toRaw converts props to the form render.RenderFor takes (what a YAML
// manifest decodes to), without YAML text: keys of 4 KiB are past what a
// YAML implicit key may be.
func toRaw(t *testing.T, props map[string]any) map[interface{}]interface{} {
	t.Helper()
	var conv func(v any) any
	conv = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			m := map[interface{}]interface{}{}
			for k, e := range v {
				m[k] = conv(e)
			}
			return m
		case []any:
			l := make([]interface{}, len(v))
			for i, e := range v {
				l[i] = conv(e)
			}
			return l
		}
		return v
	}
	return conv(props).(map[interface{}]interface{})
}

// renderRefusing renders with every slot set to v. The config template
// names every property at fault in one error; each must be a slot set to
// v, and is then left at its default and the job rendered again, until it
// renders. It returns the rendered files and the refusals by slot.
func renderRefusing(t *testing.T, j *render.Job, slots []slot, v string) (render.Rendered, map[string]string) {
	t.Helper()
	refused := map[string]string{}
	left := append([]slot(nil), slots...)
	for {
		r, err := j.RenderFor(toRaw(t, hostileProps(left, v)), "cellguard-spec", "")
		if err == nil {
			return r, refused
		}
		var keep []slot
		for _, s := range left {
			if names(err.Error(), s.prop) {
				refused[s.prop] = problemLine(err.Error(), s.prop)
			} else {
				keep = append(keep, s)
			}
		}
		if len(keep) == len(left) {
			t.Fatalf("a refusal that names no property set to the value: %v", err)
		}
		left = keep
	}
}

// Every string property of both jobs, set to each value of the corpus:
// what the templates refuse, they refuse by name; what they accept is
// rendered into every template, and the rendered scripts run against a
// stub cellguard without any payload running. Where a property is judged
// by a name or path rule, `cellguard config check` refuses exactly the
// same values (one rule, in Go, that the template mirrors).
func TestHostileProperties(t *testing.T) {
	full, configOnly := loadJob(t), configOnlyJob(t)
	validate, err := render.Load(filepath.Join(repoRoot, "jobs", "cellguard-validate"))
	if err != nil {
		t.Fatal(err)
	}
	base := mustRender(t, `{cellguard: {daemons: [{name: g, start: /bin/true}]}}`)["config/cellguard.json"]
	markers := t.TempDir()
	n := len(hostileCorpus(""))
	var refusals, accepted, agreed atomic.Int64
	// The values run two at a time: each is a dozen ruby runs, and the
	// machine is usually busy with something else too.
	t.Run("values", func(t *testing.T) {
		for i := 0; i < n; i++ {
			marker := filepath.Join(markers, fmt.Sprintf("INJECTED-%02d", i))
			v := hostileCorpus(marker)[i]
			t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
				t.Parallel()
				hostileValue(t, v, marker, full, configOnly, validate, base, &refusals, &accepted, &agreed)
			})
		}
	})
	t.Logf("corpus: %d values x %d string slots (%d cellguard, %d cellguard-validate): %d refused by name, %d accepted and run; no payload ran; %d name/path verdicts agree with cellguard config check",
		n, len(cellguardSlots)+len(validateSlots), len(cellguardSlots), len(validateSlots), refusals.Load(), accepted.Load(), agreed.Load())
}

// hostileValue is one value of the corpus through every slot of both jobs.
func hostileValue(t *testing.T, v, marker string, full, configOnly, validate *render.Job, base []byte, refusals, accepted, agreed *atomic.Int64) {
	t.Logf("value %q", truncate(v))
	_, refused := renderRefusing(t, configOnly, cellguardSlots, v)
	var left []slot
	for _, s := range cellguardSlots {
		if _, ok := refused[s.prop]; !ok {
			left = append(left, s)
		}
	}
	// The whole job, with what the config template accepted.
	r, more := renderRefusing(t, full, left, v)
	for k, msg := range more {
		refused[k] = msg
	}
	rv, validateRefused := renderRefusing(t, validate, validateSlots, v)
	for k, msg := range validateRefused {
		refused[k] = msg
	}
	refusals.Add(int64(len(refused)))
	accepted.Add(int64(len(cellguardSlots) + len(validateSlots) - len(refused)))

	// The rendered scripts, with every accepted slot set to v.
	vc := install(t, r, "")
	vc.runWith(t, "bin/pre-start", nil)
	vc.runWith(t, "bin/drain", []string{"job_changed", "hash_changed", "cellguard"}, "STUB_DRAIN=crash")
	vc.runWith(t, "bin/drain", []string{"job_shutdown", "hash_unchanged"}, "STUB_DRAIN=pass")
	install(t, rv, "").runWith(t, "bin/run", nil)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the payload ran: %s exists", marker)
	}

	// The same verdict from cellguard's Go rules.
	for _, s := range cellguardSlots {
		if s.goKey == "" {
			continue
		}
		_, tplRefused := refused[s.prop]
		goRefused, out := goRefuses(t, base, s.goKey, s.goValue(v))
		if tplRefused != goRefused {
			t.Errorf("%s = %q: the template refuses: %t, cellguard config check refuses: %t\ntemplate: %s\ncellguard: %s",
				s.prop, truncate(v), tplRefused, goRefused, truncate(refused[s.prop]), truncate(out))
		} else {
			agreed.Add(1)
		}
	}
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// goRefuses runs `cellguard config check` on the base config with key set
// to v, and reports whether config.Validate refuses it, naming the key
// (not whether the host has the file: config check's later problems).
func goRefuses(t *testing.T, base []byte, key, v string) (bool, string) {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(base, &cfg); err != nil {
		t.Fatal(err)
	}
	setConfigKey(t, cfg, key, v)
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cellguard.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(cellguardBin, "config", "check", "--config", p, "--root", filepath.Dir(p)).CombinedOutput()
	return strings.Contains(string(out), "error: config "+p+": "+key+": "), string(out)
}

// setConfigKey sets a config key such as daemons[0].start or
// validator.runtime_binaries.runc in decoded JSON.
func setConfigKey(t *testing.T, cfg map[string]any, key string, v string) {
	t.Helper()
	m := cfg
	parts := strings.Split(key, ".")
	if strings.HasPrefix(key, "validator.runtime_binaries.") {
		parts = []string{"validator", "runtime_binaries", strings.TrimPrefix(key, "validator.runtime_binaries.")}
	}
	for i, p := range parts {
		name, idx := p, -1
		if open := strings.IndexByte(p, '['); open >= 0 {
			name = p[:open]
			idx, _ = strconv.Atoi(strings.TrimSuffix(p[open+1:], "]"))
		}
		last := i == len(parts)-1
		switch {
		case idx >= 0 && last:
			m[name] = []any{v}
		case idx >= 0:
			list, _ := m[name].([]any)
			if len(list) <= idx {
				t.Fatalf("config key %s: no element %d in %v", key, idx, m[name])
			}
			m = list[idx].(map[string]any)
		case last:
			m[name] = v
		default:
			next, ok := m[name].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[name] = next
			}
			m = next
		}
	}
}

// A new string property cannot skip the hostile corpus: every property of
// both jobs that is not a boolean or a number has a slot.
func TestHostileSlotsCoverEveryStringProperty(t *testing.T) {
	validate, err := render.Load(filepath.Join(repoRoot, "jobs", "cellguard-validate"))
	if err != nil {
		t.Fatal(err)
	}
	for _, js := range []struct {
		job   *render.Job
		slots []slot
	}{{loadJob(t), cellguardSlots}, {validate, validateSlots}} {
		for name, def := range js.job.Manifest.Properties {
			switch def.Default.(type) {
			case bool, int, int64, float64:
				continue
			}
			covered := false
			for _, s := range js.slots {
				covered = covered || s.prop == name || strings.HasPrefix(s.prop, name+"[") || strings.HasPrefix(s.prop, name+".") || strings.HasPrefix(s.prop, name+" (")
			}
			if !covered {
				t.Errorf("property %s (default %#v) has no slot in the hostile corpus test", name, def.Default)
			}
		}
	}
}
