package jobs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// docs/properties.md is every job's spec rendered as tables, in the specs'
// own order; TestPropertiesDoc fails while it is stale and `make generate`
// rewrites it. The descriptions stay short: explanations live in the topic
// files they link.

// maxDescription is the longest description a property may have, in
// characters with its whitespace collapsed: a line or three in
// docs/properties.md.
const maxDescription = 300

// specProperty is one property of a job spec, as written.
type specProperty struct {
	name, description  string
	dflt, example      *yaml.Node
	hasDflt, hasExampl bool
}

type jobSpec struct {
	name, description string
	properties        []specProperty
}

// readSpec reads jobs/NAME/spec keeping the order of its properties.
func readSpec(t *testing.T, job string) jobSpec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "jobs", job, "spec"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) != 1 {
		t.Fatalf("jobs/%s/spec: %v", job, err)
	}
	js := jobSpec{}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i].Value, top.Content[i+1]
		switch k {
		case "name":
			js.name = v.Value
		case "description":
			js.description = oneLine(v.Value)
		case "properties":
			for j := 0; j+1 < len(v.Content); j += 2 {
				p := specProperty{name: v.Content[j].Value}
				def := v.Content[j+1]
				for l := 0; l+1 < len(def.Content); l += 2 {
					switch def.Content[l].Value {
					case "description":
						p.description = oneLine(def.Content[l+1].Value)
					case "default":
						p.dflt, p.hasDflt = def.Content[l+1], true
					case "example":
						p.example, p.hasExampl = def.Content[l+1], true
					}
				}
				js.properties = append(js.properties, p)
			}
		}
	}
	return js
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// inline renders a default or an example as one line of JSON, as an
// operator would write it in a manifest's flow style.
func inline(t *testing.T, n *yaml.Node) string {
	t.Helper()
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if s, ok := v.(string); ok && s != "" {
		return "`" + s + "`"
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return "`" + string(b) + "`"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func jobNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func TestPropertiesDoc(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# Job properties\n\n")
	b.WriteString("<!-- Generated from jobs/*/spec by `make generate`; spec/jobs TestPropertiesDoc fails while it is stale. Edit the specs, not this file. -->\n\n")
	b.WriteString("Every property of every job in the release, as its spec declares it. The type\n")
	b.WriteString("starts each description; \"unset\" means the property has no default (absent\n")
	b.WriteString("is a choice of its own). The topic files named in a description explain more.\n")
	for _, job := range jobNames(t) {
		js := readSpec(t, job)
		fmt.Fprintf(&b, "\n## `%s`\n\n%s\n\n", js.name, js.description)
		if len(js.properties) == 0 {
			b.WriteString("No properties.\n")
			continue
		}
		b.WriteString("| property | default | description |\n| --- | --- | --- |\n")
		for _, p := range js.properties {
			dflt := "unset"
			if p.hasDflt {
				dflt = inline(t, p.dflt)
			}
			desc := p.description
			if p.hasExampl {
				desc += " Example: " + inline(t, p.example) + "."
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.name, cell(dflt), cell(desc))
		}
	}
	checkGenerated(t, filepath.Join("docs", "properties.md"), b.Bytes())
}

// Each description says what the property does in a few lines, its type
// first; the why and the how live in docs/*.md, which it links.
func TestSpecDescriptionsAreShort(t *testing.T) {
	for _, job := range jobNames(t) {
		for _, p := range readSpec(t, job).properties {
			if !strings.HasPrefix(p.description, "(") {
				t.Errorf("jobs/%s/spec %s: the description does not start with its type, e.g. \"(string)\"", job, p.name)
			}
			if n := len(p.description); n > maxDescription {
				t.Errorf("jobs/%s/spec %s: description of %d characters (at most %d): keep what it does and its values, move the explanation to the docs/*.md topic file and name it, then %s",
					job, p.name, n, maxDescription, regenerate)
			}
		}
	}
}
