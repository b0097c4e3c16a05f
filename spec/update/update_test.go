package update

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudfoundry/bosh-agent/v2/agentclient/applyspec"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// A get_state value as the agent answered it on the local cell (trimmed):
// the current apply spec plus state the agent adds.
const current = `{
  "agent_id": "a4e02bf3", "bosh_protocol": "1", "job_state": "running",
  "vm": {"name": "vm-982f61aa"}, "processes": [],
  "deployment": "cell-jammy-protect", "name": "cell", "index": 0, "id": "0", "az": "unknown",
  "job": {"name": "cell", "templates": [{"name": "cellguard", "version": "abc"}, {"name": "garden", "version": "def"}]},
  "packages": {"cellguard": {"name": "cellguard", "version": "f1", "sha1": "s1", "blobstore_id": "b1"}},
  "networks": {"default": {"ip": "10.244.0.2", "type": "manual"}},
  "rendered_templates_archive": {"blobstore_id": "old", "sha1": "oldsha"},
  "configuration_hash": "unused-configuration-hash"
}`

func TestNextSpec(t *testing.T) {
	archive := applyspec.RenderedTemplatesArchiveSpec{BlobstoreID: "new", SHA1: "newsha"}
	got, err := NextSpec(json.RawMessage(current), archive, "h2")
	if err != nil {
		t.Fatal(err)
	}
	if got.RenderedTemplatesArchive != archive || got.ConfigurationHash != "h2" {
		t.Errorf("archive %+v hash %q; want the new ones", got.RenderedTemplatesArchive, got.ConfigurationHash)
	}
	// Everything else is the instance's current spec, unchanged.
	if got.Deployment != "cell-jammy-protect" || got.Name != "cell" || got.NodeID != "0" || len(got.Job.Templates) != 2 ||
		got.Packages["cellguard"].BlobstoreID != "b1" || Address(got) != "10.244.0.2" {
		t.Errorf("the rest of the spec changed: %+v", got)
	}

	for _, tc := range []struct {
		name, state string
		archive     applyspec.RenderedTemplatesArchiveSpec
		want        string
	}{
		{"no jobs", `{"job": {"name": "cell", "templates": []}}`, archive, "no jobs"},
		{"no blob", current, applyspec.RenderedTemplatesArchiveSpec{SHA1: "x"}, "blobstore id"},
		{"not json", `{`, archive, "decode current spec"},
	} {
		if _, err := NextSpec(json.RawMessage(tc.state), tc.archive, "h"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v; want one saying %q", tc.name, err, tc.want)
		}
	}
}

func TestInstanceGroup(t *testing.T) {
	m := []byte(`
name: cell-jammy-start
instance_groups:
- name: other
  jobs: [{name: x, release: r}]
- name: cell
  jobs:
  - name: cellguard
    release: cellguard
    properties: {cellguard: {log: {level: debug}}}
  - name: garden
    release: cellguard-test
`)
	dep, jobs, err := InstanceGroup(m, "cell")
	if err != nil {
		t.Fatal(err)
	}
	if dep != "cell-jammy-start" || len(jobs) != 2 || jobs[0].Release != "cellguard" || jobs[1].Name != "garden" {
		t.Fatalf("got %s %+v", dep, jobs)
	}
	level := jobs[0].Properties["cellguard"].(map[interface{}]interface{})["log"].(map[interface{}]interface{})["level"]
	if level != "debug" {
		t.Errorf("cellguard.log.level = %v", level)
	}
	if _, _, err := InstanceGroup(m, "nope"); err == nil {
		t.Error("a missing instance group is no error")
	}
}

// TestArchive: the rendered templates archive holds one directory per job
// (the agent extracts each job at PathInArchive = its name), bin/ files
// executable; the configuration hash follows the content.
func TestArchive(t *testing.T) {
	files := map[string]render.Rendered{
		"cellguard": {"monit": []byte(""), "bin/drain": []byte("#!/bin/sh\n"), "config/cellguard.json": []byte(`{"log":{"level":"info"}}`)},
		"garden":    {"monit": []byte("check process garden\n")},
	}
	path := filepath.Join(t.TempDir(), "a.tgz")
	if err := writeArchive(path, files); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name+" "+os.FileMode(h.Mode).String())
	}
	want := []string{
		"./cellguard/ -rwxr-xr-x", "./cellguard/bin/ -rwxr-xr-x", "./cellguard/bin/drain -rwxr-xr-x",
		"./cellguard/config/ -rwxr-xr-x", "./cellguard/config/cellguard.json -rw-r--r--", "./cellguard/monit -rw-r--r--",
		"./garden/ -rwxr-xr-x", "./garden/monit -rw-r--r--",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("archive entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	h1 := configurationHash(files)
	files["cellguard"]["config/cellguard.json"] = []byte(`{"log":{"level":"debug"}}`)
	if h2 := configurationHash(files); h2 == h1 {
		t.Error("the configuration hash did not change with a rendered file")
	}
}
