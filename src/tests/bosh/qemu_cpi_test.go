package bosh

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

const qemuCPI = "cpi/qemu-cpi"

// TestQEMUCPIProtocol: the QEMU CPI's answers that need no VM: its stemcell
// format, NotImplemented for disks, idempotent deletes, has_vm false for what
// is not there, a config without a lab refused before anything is made, an
// image that is not a cellguard-qemu-raw image refused and removed, every
// call in calls.log.
func TestQEMUCPIProtocol(t *testing.T) {
	for _, c := range []string{"bash", "jq", "tar"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is missing (make deps installs it)", c)
		}
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	config := filepath.Join(dir, "cpi.json")
	writeJSON(t, config, map[string]any{
		"state_dir": state,
		"agent":     map[string]any{"mbus": "nats://10.244.0.1:4222", "blobstore": map[string]any{}, "ntp": []string{}},
	})
	cpi := func(request string) cpiResponse { return callCPI(t, qemuCPI, config, request) }

	r := cpi(`{"method":"info","arguments":[],"context":{}}`)
	var info struct {
		APIVersion int      `json:"api_version"`
		Formats    []string `json:"stemcell_formats"`
	}
	if err := json.Unmarshal(r.Result, &info); err != nil || r.Error != nil || info.APIVersion != 2 || len(info.Formats) != 1 || info.Formats[0] != "cellguard-qemu-raw" {
		t.Errorf("info = %s, error %+v; want api_version 2 and stemcell format cellguard-qemu-raw", r.Result, r.Error)
	}
	if r := cpi(`{"method":"attach_disk","arguments":["vm-00000000","disk-1"],"context":{}}`); r.Error == nil || r.Error.Type != "Bosh::Clouds::NotImplemented" {
		t.Errorf("attach_disk: %+v; want Bosh::Clouds::NotImplemented", r.Error)
	}
	if r := cpi(`not json`); r.Error == nil || r.Error.Type != "Bosh::Clouds::CloudError" {
		t.Errorf("a request that is not JSON: %+v; want a CloudError", r.Error)
	}
	if r := cpi(`{"method":"has_vm","arguments":["vm-0000abcd"],"context":{}}`); string(r.Result) != "false" {
		t.Errorf("has_vm of an unknown VM = %s; want false", r.Result)
	}
	if r := cpi(`{"method":"delete_vm","arguments":["vm-0000abcd"],"context":{}}`); r.Error != nil {
		t.Errorf("delete_vm of an unknown VM: %+v; want success (a VM that is gone is deleted)", r.Error)
	}
	for _, m := range []string{"set_vm_metadata", "reboot_vm"} {
		if r := cpi(`{"method":"` + m + `","arguments":["vm-0000abcd",{}],"context":{}}`); r.Error == nil || r.Error.Type != "Bosh::Clouds::VMNotFound" {
			t.Errorf("%s of an unknown VM: %+v; want VMNotFound", m, r.Error)
		}
	}
	r = cpi(`{"method":"create_vm","arguments":["agent-1","sc-0000abcd",{},{},[],{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "no network.netns") {
		t.Errorf("create_vm without network in the config: %+v; want the missing network.netns named", r.Error)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "vms", "*")); len(left) != 0 {
		t.Errorf("a refused create_vm left %v", left)
	}

	writeJSON(t, config, map[string]any{
		"state_dir": state,
		"network":   map[string]any{"netns": "/nonexistent/netns", "bridge": "cgbr0"},
		"agent":     map[string]any{"mbus": "nats://10.244.0.1:4222", "blobstore": map[string]any{}, "ntp": []string{}},
	})
	// An nspawn rootfs is not a bootable image: refused, nothing left.
	bad := filepath.Join(dir, "bad-image")
	writeTar(t, bad, map[string]string{"usr/local/sbin/sdbox-init": "#!/bin/sh\n"})
	r = cpi(`{"method":"create_stemcell","arguments":["` + bad + `",{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "step 'check image' failed") || !strings.Contains(r.Error.Message, "no disk.img") {
		t.Errorf("create_stemcell of an nspawn rootfs: %+v; want step 'check image' failed, no disk.img", r.Error)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "stemcells", "*")); len(left) != 0 {
		t.Errorf("a refused image left %v", left)
	}
	good := filepath.Join(dir, "image")
	writeTar(t, good, map[string]string{"disk.img": "ext4", "vmlinuz": "kernel", "cmdline": "root=/dev/vda rw\n", "image.env": "KERNEL_ABI=6.8.0-151-generic\n"})
	r = cpi(`{"method":"create_stemcell","arguments":["` + good + `",{}],"context":{}}`)
	var cid string
	if err := json.Unmarshal(r.Result, &cid); err != nil || r.Error != nil || !strings.HasPrefix(cid, "sc-") {
		t.Fatalf("create_stemcell = %s, %+v; want a stemcell cid", r.Result, r.Error)
	}
	// A lab that is not there: refused at the network step, nothing made.
	networks := `{"default":{"type":"manual","ip":"10.244.0.10","netmask":"255.255.255.0","gateway":"10.244.0.1","cloud_properties":{}}}`
	r = cpi(`{"method":"create_vm","arguments":["agent-1","` + cid + `",{},` + networks + `,[],{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "step 'network' failed") || !strings.Contains(r.Error.Message, "/nonexistent/netns") {
		t.Errorf("create_vm with a lab that does not exist: %+v; want step 'network' failed naming it", r.Error)
	}
	if r := cpi(`{"method":"create_vm","arguments":["agent","sc-00000000",{},{},[],{}],"context":{}}`); r.Error == nil || !strings.Contains(r.Error.Message, "step 'find stemcell' failed") {
		t.Errorf("create_vm from an unknown stemcell: %+v; want the failed step named", r.Error)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "vms", "*")); len(left) != 0 {
		t.Errorf("refused create_vms left %v", left)
	}
	if r := cpi(`{"method":"delete_stemcell","arguments":["` + cid + `"],"context":{}}`); r.Error != nil {
		t.Errorf("delete_stemcell: %+v", r.Error)
	}
	if _, err := os.Stat(filepath.Join(state, "stemcells", cid)); !os.IsNotExist(err) {
		t.Errorf("delete_stemcell left %s", cid)
	}
	calls, err := os.ReadFile(filepath.Join(state, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"info", "attach_disk", "unparsable", "has_vm", "delete_vm", "set_vm_metadata", "reboot_vm", "create_stemcell", "create_vm", "delete_stemcell"} {
		if !strings.Contains(string(calls), " "+m+" ") {
			t.Errorf("calls.log lacks %s:\n%s", m, calls)
		}
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestQEMUCPITCGDefaultsAreQemuvms: the CPI (bash) and qemuvm (Go) decide a
// TCG guest's CPU model and nice value once each; the reasons live in
// qemuvm (TCGCPU, TCGNice), so the CPI's defaults must stay equal to them.
func TestQEMUCPITCGDefaultsAreQemuvms(t *testing.T) {
	b, err := os.ReadFile(qemuCPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"tcg_cpu=$(qcfg cpu " + qemuvm.TCGCPU + ")",
		"tcg_nice=$(qcfg tcg_nice " + strconv.Itoa(qemuvm.TCGNice) + ")",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not default as qemuvm does: no line %q", qemuCPI, want)
		}
	}
}
