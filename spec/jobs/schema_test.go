package jobs_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The director validates a job's resolved properties (the manifest's values
// over the spec's defaults, nested) against properties_schema.json before
// rendering. These tests resolve properties the same way and hold the schema
// to the same verdicts as the templates.

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(repoRoot, "jobs/cellguard/properties_schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if m, _ := doc.(map[string]any); m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatal("the director accepts only draft 2020-12 schemas and requires $schema")
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("properties_schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("properties_schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	return s
}

// resolve merges props over the spec defaults into the nested hash the
// director validates; unset properties without a default are null.
func resolve(t *testing.T, props string) any {
	t.Helper()
	var given map[string]any
	if err := yaml.Unmarshal([]byte(props), &given); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for name, def := range loadJob(t).Manifest.Properties {
		v, ok := lookup(given, name)
		if !ok {
			v = yamlToJSON(def.Default)
		}
		setPath(out, name, v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func setPath(m map[string]any, dotted string, v any) {
	keys := strings.Split(dotted, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

func TestSchemaAcceptsWhatRenders(t *testing.T) {
	s := compileSchema(t)
	sets := map[string]string{}
	for _, ps := range propertySets {
		sets[ps.name] = ps.props
	}
	for name, props := range sets {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(resolve(t, props)); err != nil {
				t.Fatalf("schema rejects a property set the templates render: %v", err)
			}
		})
	}
}

// Each value the templates or config check refuse, the director refuses
// first where it validates properties: wrong types, and the schema's
// pre-checks of names, paths, durations and check ids.
func TestSchemaRejectsWhatFailsToRender(t *testing.T) {
	s := compileSchema(t)
	for _, props := range []string{
		`{cellguard: {daemons: [{name: garden}]}}`,
		`{cellguard: {daemons: [{start: /bin/true}]}}`,
		`{cellguard: {daemons: [{name: g, start: /bin/true, pid_file: /x}]}}`,
		`{cellguard: {daemons: {name: g}}}`,
		`{cellguard: {daemons: [{name: g, start: bin/true}]}}`,
		`{cellguard: {daemons: [{name: g, start: /bin/true, type: simple}]}}`,
		`{cellguard: {supervisor: {protect: "yes"}}}`,
		`{cellguard: {log: {time_format: iso}}}`,
		`{cellguard: {log: {level: verbose}}}`,
		`{cellguard: {validator: {runtime_roots: /run/runc}}}`,
		`{cellguard: {validator: {blocking: {drain: cgroup-integrity}}}}`,
		`{cellguard: {sysctl: {set: {kernel.pid_max: [1]}}}}`,
		`{cellguard: {validator: {runtime_binaries: {runc: 1}}}}`,
		`{cellguard: {validator: {fix: "true"}}}`,
		`{cellguard: {validator: {runc_init_max_age: 300}}}`,
		`{cellguard: {validator: {probe_timeout: 5}}}`,
		`{cellguard: {validator: {extra_cgroup_roots: /garden}}}`,
		`{cellguard: {validator: {extra_cgroup_roots: [garden]}}}`,
		`{cellguard: {validator: {extra_cgroup_roots: [/]}}}`,
		`{cellguard: {validator: {extra_cgroup_slices: /kubepods.slice}}}`,
		`{cellguard: {validator: {extra_cgroup_slices: [/garden]}}}`,
		`{cellguard: {validator: {extra_cgroup_slices: [/system.slice]}}}`,
		`{cellguard: {delegate_units: concourse.service}}`,
		`{cellguard: {delegate_units: [concourse.scope]}}`,
		`{cellguard: {delegate_units: [/lib/systemd/system/concourse.service]}}`,
		`{cellguard: {validator: {advisories: {id: X}}}}`,
		`{cellguard: {validator: {advisories: [{summary: no id}]}}}`,
		`{cellguard: {validator: {blocking_advisories: CVE-2024-21626}}}`,
		`{cellguard: {validator: {ignore: [ghosts]}}}`,
		`{cellguard: {validator: {blocking: {drain: [cgroup-integrty]}}}}`,
		`{cellguard: {validator: {blocking: {pre_start: [all]}}}}`,
		`{cellguard: {drain: {budget: 60}}}`,
		`{cellguard: {drain: {block_on_shutdown: "yes"}}}`,
		`{cellguard: {drain: {heal: "yes"}}}`,
		`{cellguard: {watch: {heal_per_minute: 0}}}`,
		`{cellguard: {watch: {listen: "14875"}}}`,
	} {
		if err := s.Validate(resolve(t, props)); err == nil {
			t.Errorf("schema accepts %s", props)
		}
	}
}

// Every spec property has a place in the schema, and the schema names no
// property the spec lacks.
func TestSchemaCoversTheSpec(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "jobs/cellguard/properties_schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var inSchema []string
	var walk func(prefix string, node map[string]any)
	walk = func(prefix string, node map[string]any) {
		props, _ := node["properties"].(map[string]any)
		for k, v := range props {
			child := v.(map[string]any)
			name := strings.TrimPrefix(prefix+"."+k, ".")
			if _, nested := child["properties"]; nested && child["type"] == "object" {
				walk(name, child)
				continue
			}
			inSchema = append(inSchema, name)
		}
	}
	walk("", doc)
	var inSpec []string
	for name := range loadJob(t).Manifest.Properties {
		inSpec = append(inSpec, name)
	}
	sort.Strings(inSchema)
	sort.Strings(inSpec)
	if strings.Join(inSchema, "\n") != strings.Join(inSpec, "\n") {
		t.Errorf("schema leaves:\n%s\nspec properties:\n%s", strings.Join(inSchema, "\n"), strings.Join(inSpec, "\n"))
	}
}

// Durations have one judge, Go's time.ParseDuration in config check: the
// schema types them as strings and holds no pattern, because a pattern
// cannot hold Go's rule. The last one here was such a pattern, and it
// accepted what Go refuses (an overflow such as "2562048h", shown below).
func TestSchemaLeavesDurationsToGo(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "jobs/cellguard/properties_schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"budget", "period", "probe_timeout", "runc_init_max_age", "start_timeout", "stop_timeout"} {
		m := regexp.MustCompile(`"` + key + `": (\{[^}]*\})`).FindSubmatch(b)
		if m == nil || string(m[1]) != `{"type": "string"}` {
			t.Errorf("schema %s: %s, want {\"type\": \"string\"}", key, m)
		}
	}
	old := regexp.MustCompile(`^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|ms|s|m|h))+$`)
	if _, err := time.ParseDuration("2562048h"); !old.MatchString("2562048h") || err == nil {
		t.Errorf("the old pattern's counterexample no longer holds: %v", err)
	}
	s := compileSchema(t)
	for _, props := range []string{`{cellguard: {drain: {budget: "60"}}}`, `{cellguard: {watch: {period: 1µs}}}`} {
		if err := s.Validate(resolve(t, props)); err != nil {
			t.Errorf("schema judges the duration of %s (Go's to judge): %v", props, err)
		}
	}
}
