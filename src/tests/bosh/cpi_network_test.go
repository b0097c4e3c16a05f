package bosh

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/testkit"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/sdbox"
)

// natsVersion is the director's NATS (src/tests/director/director.sh).
const natsVersion = "v2.15.2"

// natsServerBin is nats-server natsVersion: $NATS_SERVER, or the binary
// director.sh caches (CELLGUARD_DIRECTOR_CACHE, default
// /var/tmp/cellguard-director, nats-server-VERSION/nats-server), built there
// from the Go module proxy as director.sh builds it when it is missing: into
// a temporary directory renamed into place, since other engineers share it.
func natsServerBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NATS_SERVER"); p != "" {
		return p
	}
	cache := os.Getenv("CELLGUARD_DIRECTOR_CACHE")
	if cache == "" {
		cache = "/var/tmp/cellguard-director"
	}
	dir := filepath.Join(cache, "nats-server-"+natsVersion)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if _, err := exec.LookPath("go"); err != nil {
		testkit.Unavailable(t, "no "+bin+" and no go to build it (make deps installs go)")
	}
	tmp := fmt.Sprintf("%s.tmp.%d", dir, os.Getpid())
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Logf("building nats-server %s from the Go module proxy into %s", natsVersion, dir)
	cmd := exec.Command("nice", "-n", "10", "go", "install", "github.com/nats-io/nats-server/v2@"+natsVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		testkit.Unavailable(t, fmt.Sprintf("build nats-server %s: %v\n%s", natsVersion, err, out))
	}
	// Another engineer's rename may have won: theirs is the same build.
	_ = os.Rename(tmp, dir)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("nats-server after the build: %v", err)
	}
	return bin
}

// run runs a host command and fails the test with its output when it fails.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lab is a throwaway stand-in for the director's lab: a network namespace
// holding a bridge with the gateway's address, and nats-server listening
// there, removed when the test ends.
type lab struct {
	name, path, bridge, gateway string
}

func newLab(t *testing.T) lab {
	t.Helper()
	l := lab{name: fmt.Sprintf("cgtest-lab-%d", os.Getpid()), bridge: "cgbr0", gateway: "10.244.0.1"}
	l.path = "/run/netns/" + l.name
	run(t, "ip", "netns", "add", l.name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", l.name).CombinedOutput(); err != nil {
			t.Errorf("remove the lab's network namespace %s: %v\n%s", l.name, err, out)
		}
	})
	run(t, "ip", "-n", l.name, "link", "set", "dev", "lo", "up")
	run(t, "ip", "-n", l.name, "link", "add", l.bridge, "type", "bridge")
	run(t, "ip", "-n", l.name, "addr", "add", l.gateway+"/24", "dev", l.bridge)
	run(t, "ip", "-n", l.name, "link", "set", "dev", l.bridge, "up")
	return l
}

// startNATS runs nats-server in the lab on the gateway's address, ended by
// its pid when the test ends.
func (l lab) startNATS(t *testing.T, bin, logPath string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", "--net="+l.path, bin, "-a", l.gateway, "-p", "4222")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server in the lab: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
}

// rootfsImage is sdbox's bookworm rootfs packed as an nspawn-rootfs
// stemcell image in dir, and sdbox.sh's path.
func rootfsImage(t *testing.T, dir string) (script, image string) {
	t.Helper()
	script, err := sdbox.ScriptPath()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "rootfs")
	cmd.Env = append(os.Environ(), "SDBOX_SUITE=bookworm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sdbox.sh rootfs: %v", err)
	}
	image = filepath.Join(dir, "image")
	run(t, "tar", "--numeric-owner", "-C", strings.TrimSpace(string(out)), "-cf", image, ".")
	return script, image
}

// TestCPIForwarder: without a lab network (bosh create-env), the VM keeps
// nspawn's private network (only lo) and the forwarder listens on the
// manifest's 127.0.0.1 port; delete_vm ends it and frees the port.
func TestCPIForwarder(t *testing.T) {
	sdbox.RequireSuite(t, "bookworm")
	for _, c := range []string{"jq", "tar", "ip", "nsenter", "socat", "ss"} {
		if _, err := exec.LookPath(c); err != nil {
			testkit.Unavailable(t, c+" is missing (make deps installs it)")
		}
	}
	dir := t.TempDir()
	script, image := rootfsImage(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	state := filepath.Join(dir, "state")
	config := filepath.Join(dir, "cpi.json")
	cfg, _ := json.Marshal(map[string]any{
		"sdbox": script, "state_dir": state, "box_prefix": fmt.Sprintf("cgfwd%d", os.Getpid()),
		"mbus_listen": fmt.Sprintf("127.0.0.1:%d", port), "nspawn_args": "",
		"agent": map[string]any{"mbus": "https://mbus:p@0.0.0.0:6868", "ntp": []string{},
			"blobstore": map[string]any{"provider": "local", "options": map[string]any{"blobstore_path": "/var/vcap/micro_bosh/data/cache"}}},
	})
	if err := os.WriteFile(config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	r := call(t, config, `{"method":"create_stemcell","arguments":["`+image+`",{}],"context":{}}`)
	var stemcell string
	if err := json.Unmarshal(r.Result, &stemcell); err != nil || r.Error != nil {
		t.Fatalf("create_stemcell = %s, %+v", r.Result, r.Error)
	}
	t.Cleanup(func() { call(t, config, `{"method":"delete_stemcell","arguments":["`+stemcell+`"],"context":{}}`) })
	t.Cleanup(func() {
		vms, _ := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
		for _, vm := range vms {
			call(t, config, `{"method":"delete_vm","arguments":["`+filepath.Base(vm)+`"],"context":{}}`)
		}
	})
	networks := `{"default":{"type":"manual","ip":"10.244.0.2","netmask":"255.255.255.0","gateway":"10.244.0.1","default":["dns","gateway"],"cloud_properties":{}}}`
	r = call(t, config, `{"method":"create_vm","arguments":["agent-1","`+stemcell+`",{},`+networks+`,[],{}],"context":{}}`)
	var res []json.RawMessage
	var cid string
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res) != 2 || json.Unmarshal(res[0], &cid) != nil {
		t.Fatalf("create_vm = %s, %+v (cpi.log: %s)", r.Result, r.Error, readOr(filepath.Join(state, "cpi.log")))
	}
	vmdir := filepath.Join(state, "vms", cid)
	listening := func() bool {
		out, _ := exec.Command("ss", "-Htln", fmt.Sprintf("sport = :%d", port)).Output()
		return strings.TrimSpace(string(out)) != ""
	}
	if !listening() {
		t.Errorf("no forwarder listens on 127.0.0.1:%d", port)
	}
	if _, err := os.Stat(filepath.Join(vmdir, "net.env")); err == nil {
		t.Errorf("create-env's VM got a lab network (net.env)")
	}
	initPID := ""
	for _, line := range strings.Split(readOr(filepath.Join(vmdir, "sdbox.env")), "\n") {
		if v, ok := strings.CutPrefix(line, "SDBOX_INIT_PID="); ok {
			initPID = v
		}
	}
	out, err := exec.Command("nsenter", "-t", initPID, "-n", "ip", "-o", "link", "show").CombinedOutput()
	if err != nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), " lo:") {
		t.Errorf("the VM's links: %v\n%s\nwant only lo (nspawn's private network)", err, out)
	}
	if r := call(t, config, `{"method":"delete_vm","arguments":["`+cid+`"],"context":{}}`); r.Error != nil {
		t.Fatalf("delete_vm: %+v", r.Error)
	}
	if listening() {
		t.Errorf("delete_vm left the forwarder listening on 127.0.0.1:%d", port)
	}
}

// TestCPINetwork: behind a director, create_vm puts the VM on the lab's
// bridge with the manual network's static IP and a default route via the
// gateway, the agent's settings carry the director's nats:// mbus, its
// certificates and the local blobstore, bound into the VM at the same path;
// delete_vm leaves no namespace, veth or box. A network without a static IP
// is refused, and nothing is left of that VM either. The stemcell is
// sdbox's bookworm rootfs: what is tested is the CPI's network, not the agent.
func TestCPINetwork(t *testing.T) {
	sdbox.RequireSuite(t, "bookworm")
	for _, c := range []string{"jq", "tar", "ip", "nsenter"} {
		if _, err := exec.LookPath(c); err != nil {
			testkit.Unavailable(t, c+" is missing (make deps installs it)")
		}
	}
	nats := natsServerBin(t)
	dir := t.TempDir()
	script, image := rootfsImage(t, dir)
	l := newLab(t)
	l.startNATS(t, nats, filepath.Join(dir, "nats.log"))

	state := filepath.Join(dir, "state")
	blobstore := filepath.Join(dir, "blobstore")
	if err := os.MkdirAll(blobstore, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blobstore, "from-director"), []byte("blob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "cpi.json")
	mbus := "nats://" + l.gateway + ":4222"
	cfg, _ := json.Marshal(map[string]any{
		"sdbox": script, "state_dir": state, "box_prefix": fmt.Sprintf("cgnet%d", os.Getpid()),
		"network":        map[string]any{"netns": l.path, "bridge": l.bridge},
		"blobstore_bind": true,
		"agent": map[string]any{"mbus": mbus, "ntp": []string{},
			"blobstore": map[string]any{"provider": "local", "options": map[string]any{"blobstore_path": blobstore}}},
	})
	if err := os.WriteFile(config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	r := call(t, config, `{"method":"create_stemcell","arguments":["`+image+`",{}],"context":{}}`)
	var stemcell string
	if err := json.Unmarshal(r.Result, &stemcell); err != nil || r.Error != nil {
		t.Fatalf("create_stemcell = %s, %+v", r.Result, r.Error)
	}
	t.Cleanup(func() { call(t, config, `{"method":"delete_stemcell","arguments":["`+stemcell+`"],"context":{}}`) })

	// Whatever create_vm left, delete_vm removes: also after a failed test.
	t.Cleanup(func() {
		vms, _ := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
		for _, vm := range vms {
			if r := call(t, config, `{"method":"delete_vm","arguments":["`+filepath.Base(vm)+`"],"context":{}}`); r.Error != nil {
				t.Errorf("cleanup: delete_vm %s: %+v", filepath.Base(vm), r.Error)
			}
		}
	})

	// A dynamic network has no static IP to give the VM: refused, nothing left.
	dynamic := `{"default":{"type":"dynamic","cloud_properties":{},"default":["dns","gateway"]}}`
	r = call(t, config, `{"method":"create_vm","arguments":["agent-d","`+stemcell+`",{},`+dynamic+`,[],{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "step 'network' failed") || !strings.Contains(r.Error.Message, "manual network") {
		t.Errorf("create_vm on a dynamic network: %+v; want step 'network' failed, asking for a manual network", r.Error)
	}
	assertNoVMNetwork(t, l, "after the refused create_vm")

	networks := `{"default":{"type":"manual","ip":"10.244.0.10","netmask":"255.255.255.0","gateway":"10.244.0.1",` +
		`"default":["dns","gateway"],"dns":[],"cloud_properties":{}}}`
	env := `{"bosh":{"mbus":{"cert":{"ca":"THE-CA","certificate":"THE-CERT","private_key":"THE-KEY"}}}}`
	r = call(t, config, `{"method":"create_vm","arguments":["agent-1","`+stemcell+`",{},`+networks+`,[],`+env+`],"context":{}}`)
	if r.Error != nil {
		t.Fatalf("create_vm: %+v (cpi.log: %s)", r.Error, readOr(filepath.Join(state, "cpi.log")))
	}
	var res []json.RawMessage
	var cid string
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res) != 2 || json.Unmarshal(res[0], &cid) != nil {
		t.Fatalf("create_vm = %s; want [vm_cid, networks]", r.Result)
	}
	vmdir := filepath.Join(state, "vms", cid)
	box := strings.TrimSpace(readOr(filepath.Join(vmdir, "box")))
	veth := "vh-" + strings.TrimPrefix(cid, "vm-")

	var settings struct {
		Mbus      string `json:"mbus"`
		Blobstore struct {
			Provider string            `json:"provider"`
			Options  map[string]string `json:"options"`
		} `json:"blobstore"`
		Networks map[string]struct {
			IP            string `json:"ip"`
			Preconfigured bool   `json:"preconfigured"`
		} `json:"networks"`
		Env struct {
			Bosh struct {
				Mbus struct {
					Cert map[string]string `json:"cert"`
				} `json:"mbus"`
			} `json:"bosh"`
		} `json:"env"`
	}
	if err := json.Unmarshal([]byte(readOr(filepath.Join(vmdir, "settings", "settings.json"))), &settings); err != nil {
		t.Fatalf("the agent's settings: %v", err)
	}
	if settings.Mbus != mbus || settings.Env.Bosh.Mbus.Cert["ca"] != "THE-CA" || settings.Env.Bosh.Mbus.Cert["private_key"] != "THE-KEY" {
		t.Errorf("settings: mbus %q, env.bosh.mbus.cert %v; want %s and the director's certificates", settings.Mbus, settings.Env.Bosh.Mbus.Cert, mbus)
	}
	if settings.Blobstore.Provider != "local" || settings.Blobstore.Options["blobstore_path"] != blobstore {
		t.Errorf("settings: blobstore %+v; want local at %s", settings.Blobstore, blobstore)
	}
	if n := settings.Networks["default"]; n.IP != "10.244.0.10" || !n.Preconfigured {
		t.Errorf("settings: networks %+v; want default with 10.244.0.10, preconfigured", settings.Networks)
	}
	if _, err := os.Stat(filepath.Join(vmdir, "forwarder.pid")); err == nil {
		t.Errorf("a forwarder was started behind a director (nats:// needs none)")
	}

	initPID := ""
	for _, line := range strings.Split(readOr(filepath.Join(vmdir, "sdbox.env")), "\n") {
		if v, ok := strings.CutPrefix(line, "SDBOX_INIT_PID="); ok {
			initPID = v
		}
	}
	if initPID == "" {
		t.Fatalf("no SDBOX_INIT_PID in %s/sdbox.env", vmdir)
	}
	inVM := func(args ...string) (string, error) {
		out, err := exec.Command("nsenter", append([]string{"-t", initPID, "-a", "--"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := inVM("ip", "-4", "-o", "addr", "show", "dev", "eth0"); err != nil || !strings.Contains(out, "inet 10.244.0.10/24") {
		t.Errorf("the VM's eth0: %v\n%s\nwant inet 10.244.0.10/24", err, out)
	}
	if out, err := inVM("ip", "route", "show", "default"); err != nil || !strings.Contains(out, "default via 10.244.0.1 dev eth0") {
		t.Errorf("the VM's default route: %v\n%s\nwant via 10.244.0.1", err, out)
	}
	// NATS greets every client with INFO: the VM reaches the lab's gateway address.
	if out, err := inVM("bash", "-c", "exec 3<>/dev/tcp/10.244.0.1/4222 && head -c 4 <&3"); err != nil || out != "INFO" {
		t.Errorf("the VM dialing NATS on the gateway: %v, %q; want INFO", err, out)
	}
	// The lab reaches the VM: a closed port answers with a reset ("refused"),
	// where an unreachable address would time out or find no route.
	out, err := exec.Command("nsenter", "--net="+l.path, "bash", "-c", "exec 3<>/dev/tcp/10.244.0.10/9").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Connection refused") {
		t.Errorf("the lab dialing the VM's closed port 9: %v, %s; want Connection refused (the VM answered)", err, out)
	}
	if out := run(t, "ip", "-n", l.name, "-o", "link", "show", "dev", veth); !strings.Contains(out, "master "+l.bridge) {
		t.Errorf("the VM's veth peer in the lab: %s; want it enslaved to %s", out, l.bridge)
	}
	// The blobstore is the director's directory: both sides see each other's files.
	if out, err := inVM("cat", filepath.Join(blobstore, "from-director")); err != nil || out != "blob\n" {
		t.Errorf("the director's blob read in the VM: %v, %q", err, out)
	}
	if out, err := inVM("sh", "-c", "echo compiled >"+filepath.Join(blobstore, "from-agent")); err != nil {
		t.Errorf("the agent writing a blob: %v, %s", err, out)
	} else if got := readOr(filepath.Join(blobstore, "from-agent")); got != "compiled\n" {
		t.Errorf("the agent's blob on the host: %q; want compiled", got)
	}

	if r := call(t, config, `{"method":"delete_vm","arguments":["`+cid+`"],"context":{}}`); r.Error != nil {
		t.Fatalf("delete_vm: %+v", r.Error)
	}
	assertNoVMNetwork(t, l, "after delete_vm")
	if _, err := os.Stat(vmdir); !os.IsNotExist(err) {
		t.Errorf("delete_vm left %s", vmdir)
	}
	if list, _ := exec.Command("bash", script, "list").Output(); strings.Contains(string(list), box) {
		t.Errorf("delete_vm left box %s (sdbox.sh list: %s)", box, list)
	}
}

// assertNoVMNetwork: no VM's namespace (named as its box) and no veth in the
// lab, only lo and the bridge.
func assertNoVMNetwork(t *testing.T, l lab, when string) {
	t.Helper()
	if ns := run(t, "ip", "netns", "list"); strings.Contains(ns, fmt.Sprintf("cgnet%d-", os.Getpid())) {
		t.Errorf("%s: a VM's network namespace is left: %s", when, ns)
	}
	if links := run(t, "ip", "-n", l.name, "-o", "link", "show"); strings.Contains(links, "vh-") {
		t.Errorf("%s: a veth is left in the lab:\n%s", when, links)
	}
}

func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}
