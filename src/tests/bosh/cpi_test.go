// Package bosh holds the fleet's BOSH tooling (stemcell builder, nspawn CPI,
// test releases; see README.md). Its Go tests drive the CPI's protocol
// without booting anything (cpi_test.go) and, as root, a VM on a lab
// network as the director's CPI makes it (cpi_network_test.go); the VMs are
// exercised end to end by the fleet (src/tests/fleet, make cell).
package bosh

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type cpiResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Log string `json:"log"`
}

// call runs the nspawn CPI once with request on stdin, as bosh-cli does.
func call(t *testing.T, config, request string) cpiResponse {
	t.Helper()
	return callCPI(t, "cpi/nspawn-cpi", config, request)
}

// callCPI runs the CPI script once with request on stdin.
func callCPI(t *testing.T, script, config, request string) cpiResponse {
	t.Helper()
	cmd := exec.Command("bash", script, config)
	cmd.Stdin = strings.NewReader(request)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cpi %s: %v\n%s", request, err, stderr.String())
	}
	var r cpiResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("cpi %s printed no JSON response: %v\nstdout: %s\nstderr: %s", request, err, out, stderr.String())
	}
	return r
}

func writeTar(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCPIProtocol: the answers bosh-cli relies on (API version 2 and the
// stemcell format in info, a stemcell cid, idempotent deletes, has_vm false
// for what is not there) and the errors it shows (NotImplemented, a failing
// step named with its log), every call in calls.log.
func TestCPIProtocol(t *testing.T) {
	for _, c := range []string{"bash", "jq", "tar"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is missing (make deps installs it)", c)
		}
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	config := filepath.Join(dir, "cpi.json")
	cfg, _ := json.Marshal(map[string]any{
		"sdbox": "/nonexistent/sdbox.sh", "state_dir": state,
		"box_prefix": "test", "nspawn_args": "",
		"agent": map[string]any{"mbus": "https://mbus:p@0.0.0.0:6868", "blobstore": map[string]any{}, "ntp": []string{}},
	})
	if err := os.WriteFile(config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	r := call(t, config, `{"method":"info","arguments":[],"context":{}}`)
	var info struct {
		APIVersion int      `json:"api_version"`
		Formats    []string `json:"stemcell_formats"`
	}
	if err := json.Unmarshal(r.Result, &info); err != nil || r.Error != nil || info.APIVersion != 2 || len(info.Formats) != 1 || info.Formats[0] != "nspawn-rootfs" {
		t.Errorf("info = %s, error %+v; want api_version 2 and stemcell format nspawn-rootfs", r.Result, r.Error)
	}

	if r := call(t, config, `{"method":"attach_disk","arguments":["vm-00000000","disk-1"],"context":{}}`); r.Error == nil || r.Error.Type != "Bosh::Clouds::NotImplemented" {
		t.Errorf("attach_disk: %+v; want Bosh::Clouds::NotImplemented", r.Error)
	}
	if r := call(t, config, `not json`); r.Error == nil || r.Error.Type != "Bosh::Clouds::CloudError" {
		t.Errorf("a request that is not JSON: %+v; want a CloudError", r.Error)
	}
	if r := call(t, config, `{"method":"has_vm","arguments":["vm-0000abcd"],"context":{}}`); string(r.Result) != "false" {
		t.Errorf("has_vm of an unknown VM = %s; want false", r.Result)
	}
	if r := call(t, config, `{"method":"delete_vm","arguments":["vm-0000abcd"],"context":{}}`); r.Error != nil {
		t.Errorf("delete_vm of an unknown VM: %+v; want success (a VM that is gone is deleted)", r.Error)
	}
	if r := call(t, config, `{"method":"set_vm_metadata","arguments":["vm-0000abcd",{}],"context":{}}`); r.Error == nil || r.Error.Type != "Bosh::Clouds::VMNotFound" {
		t.Errorf("set_vm_metadata of an unknown VM: %+v; want VMNotFound", r.Error)
	}

	// Without a lab network (what bosh create-env's config was) a VM is
	// refused before anything is made.
	r = call(t, config, `{"method":"create_vm","arguments":["agent-1","sc-0000abcd",{},{},[],{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "no network.netns") {
		t.Errorf("create_vm without network in the config: %+v; want the missing network.netns named", r.Error)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "vms", "*")); len(left) != 0 {
		t.Errorf("a refused create_vm left %v", left)
	}
	// The rest runs with a network named (never reached: nothing boots).
	cfg, _ = json.Marshal(map[string]any{
		"sdbox": "/nonexistent/sdbox.sh", "state_dir": state, "box_prefix": "test", "nspawn_args": "",
		"network": map[string]any{"netns": "/nonexistent/netns", "bridge": "cgbr0"},
		"agent":   map[string]any{"mbus": "nats://mbus:p@10.244.0.1:4222", "blobstore": map[string]any{}, "ntp": []string{}},
	})
	if err := os.WriteFile(config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	// A tar without sdbox-init is not an nspawn rootfs: refused, nothing left.
	bad := filepath.Join(dir, "bad-image")
	writeTar(t, bad, map[string]string{"etc/hostname": "x\n"})
	r = call(t, config, `{"method":"create_stemcell","arguments":["`+bad+`",{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "step 'check image' failed") {
		t.Errorf("create_stemcell of a non-rootfs image: %+v; want the failed step named", r.Error)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "stemcells", "*", "rootfs")); len(left) != 0 {
		t.Errorf("a refused image left %v", left)
	}

	good := filepath.Join(dir, "image")
	writeTar(t, good, map[string]string{"usr/local/sbin/sdbox-init": "#!/bin/sh\n"})
	r = call(t, config, `{"method":"create_stemcell","arguments":["`+good+`",{"shape":"jammy"}],"context":{}}`)
	var cid string
	if err := json.Unmarshal(r.Result, &cid); err != nil || r.Error != nil || !strings.HasPrefix(cid, "sc-") {
		t.Fatalf("create_stemcell = %s, %+v; want a stemcell cid", r.Result, r.Error)
	}
	if _, err := os.Stat(filepath.Join(state, "stemcells", cid, "rootfs", "usr/local/sbin/sdbox-init")); err != nil {
		t.Errorf("the stemcell's rootfs was not unpacked: %v", err)
	}
	if r := call(t, config, `{"method":"create_vm","arguments":["agent","sc-00000000",{},{},[],{}],"context":{}}`); r.Error == nil || !strings.Contains(r.Error.Message, "step 'find stemcell' failed") {
		t.Errorf("create_vm from an unknown stemcell: %+v; want the failed step named", r.Error)
	}
	if r := call(t, config, `{"method":"delete_stemcell","arguments":["`+cid+`"],"context":{}}`); r.Error != nil {
		t.Errorf("delete_stemcell: %+v", r.Error)
	}
	if _, err := os.Stat(filepath.Join(state, "stemcells", cid)); !os.IsNotExist(err) {
		t.Errorf("delete_stemcell left %s", cid)
	}

	calls, err := os.ReadFile(filepath.Join(state, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"info", "attach_disk", "unparsable", "has_vm", "delete_vm", "set_vm_metadata", "create_stemcell", "create_vm", "delete_stemcell"} {
		if !strings.Contains(string(calls), " "+m+" ") {
			t.Errorf("calls.log lacks %s:\n%s", m, calls)
		}
	}
}
