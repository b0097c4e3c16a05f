package jobs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cppforlife/go-patch/patch"
	yamlv2 "gopkg.in/yaml.v2"
)

// applyOps applies the ops files under manifests/, in order, to doc as
// bosh-cli does (go-patch, which bosh-cli's `-o` uses; yaml.v2 maps, the
// types go-patch walks).
func applyOps(t *testing.T, doc any, names ...string) (any, error) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", name))
		if err != nil {
			t.Fatal(err)
		}
		var defs []patch.OpDefinition
		if err := yamlv2.Unmarshal(b, &defs); err != nil {
			t.Fatalf("parse manifests/%s: %v", name, err)
		}
		ops, err := patch.NewOpsFromDefinitions(defs)
		if err != nil {
			t.Fatalf("manifests/%s: %v", name, err)
		}
		if doc, err = ops.Apply(doc); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// The cf-deployment ops files apply in the order the README gives, to a
// diego-cell as cf-deployment has it (no cellguard): the TLS file's path
// must not need a key that add-cellguard-to-diego-cells.yml never sets
// (the fleet's metrics_tls met bosh-cli's "Expected to find a map key
// 'watch'" with the two as shipped).
func TestDiegoCellOpsFilesApplyInOrder(t *testing.T) {
	var doc any
	if err := yamlv2.Unmarshal([]byte(`
instance_groups:
- name: diego-cell
  jobs:
  - name: rep
    release: diego
releases:
- name: diego
  version: latest
variables: []
`), &doc); err != nil {
		t.Fatal(err)
	}
	doc, err := applyOps(t, doc, "operations/add-cellguard-to-diego-cells.yml", "operations/cellguard-metrics-tls.yml")
	if err != nil {
		t.Fatalf("add-cellguard-to-diego-cells.yml then cellguard-metrics-tls.yml: %v", err)
	}
	for _, path := range []string{
		"/instance_groups/name=diego-cell/jobs/name=cellguard/properties/cellguard/watch/metrics/ca_cert",
		"/instance_groups/name=diego-cell/jobs/name=cellguard-validate/release",
		"/variables/name=cellguard_metrics_tls/options/ca",
	} {
		ptr, err := patch.NewPointerFromString(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (patch.FindOp{Path: ptr}).Apply(doc); err != nil {
			t.Errorf("after both ops files, %s: %v", path, err)
		}
	}
}
