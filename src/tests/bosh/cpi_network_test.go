package bosh

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
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

// lab is the director's lab network, made by director.sh itself (`lab`: the
// namespace and its bridge, as `up` makes them, no process), so the CPI's VMs
// sit on the same network as behind the real director; removed by
// `director.sh down` when the test ends.
type lab struct {
	name, path, bridge, gateway string
	state                       string // director.sh's state directory
}

func newLab(t *testing.T) lab {
	t.Helper()
	state := t.TempDir()
	script := filepath.Join("..", "director", "director.sh")
	l := lab{bridge: "cgbr0", gateway: "10.244.0.1", state: state}
	var stderr strings.Builder
	cmd := exec.Command("bash", script, "lab", state)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	interrupt.Cleanup(t, "the lab "+state, func() {
		if out, err := exec.Command("bash", script, "down", state).CombinedOutput(); err != nil {
			t.Errorf("director.sh down (the lab %s): %v\n%s", l.name, err, out)
		}
		if _, err := os.Stat(l.path); !os.IsNotExist(err) {
			t.Errorf("director.sh down left the lab's namespace %s", l.path)
		}
	})
	if err != nil {
		t.Fatalf("director.sh lab: %v\n%s", err, stderr.String())
	}
	l.path = strings.TrimSpace(string(out))
	l.name = filepath.Base(l.path)
	return l
}

// bridgeMAC is the lab bridge's own address: the gateway's MAC as the VMs see it.
func (l lab) bridgeMAC(t *testing.T) string {
	t.Helper()
	var link []struct {
		Address string `json:"address"`
	}
	out := run(t, "ip", "-n", l.name, "-j", "link", "show", "dev", l.bridge)
	if err := json.Unmarshal([]byte(out), &link); err != nil || len(link) != 1 {
		t.Fatalf("ip -j link show %s: %v %s", l.bridge, err, out)
	}
	return link[0].Address
}

// vm is a VM the CPI made: its cid and its init's pid on the host.
type vm struct{ cid, initPID string }

// createVM calls create_vm and reads the VM's cid and init pid; a failed call
// fails the test.
func createVM(t *testing.T, config, state, args string) vm {
	t.Helper()
	r := call(t, config, `{"method":"create_vm","arguments":[`+args+`],"context":{}}`)
	var res []json.RawMessage
	var v vm
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res) != 2 || json.Unmarshal(res[0], &v.cid) != nil {
		t.Fatalf("create_vm = %s, %+v; want [vm_cid, networks] (cpi.log: %s)", r.Result, r.Error, readOr(filepath.Join(state, "cpi.log")))
	}
	for _, line := range strings.Split(readOr(filepath.Join(state, "vms", v.cid, "sdbox.env")), "\n") {
		if p, ok := strings.CutPrefix(line, "SDBOX_INIT_PID="); ok {
			v.initPID = p
		}
	}
	if v.initPID == "" {
		t.Fatalf("no SDBOX_INIT_PID in %s/sdbox.env", filepath.Join(state, "vms", v.cid))
	}
	return v
}

// in runs args in the VM (all its namespaces).
func (v vm) in(args ...string) (string, error) {
	out, err := exec.Command("nsenter", append([]string{"-t", v.initPID, "-a", "--"}, args...)...).CombinedOutput()
	return string(out), err
}

// deleteVM calls delete_vm; an error fails the test.
func deleteVM(t *testing.T, config, cid string) {
	t.Helper()
	if r := call(t, config, `{"method":"delete_vm","arguments":["`+cid+`"],"context":{}}`); r.Error != nil {
		t.Fatalf("delete_vm %s: %+v", cid, r.Error)
	}
}

// startNATS runs nats-server in the lab on the gateway's address (with
// extra arguments, e.g. -c CONFIG for TLS), ended by its pid when the test
// ends.
func (l lab) startNATS(t *testing.T, bin, logPath string, extra ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", append([]string{"--net=" + l.path, bin, "-a", l.gateway, "-p", "4222"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server in the lab: %v", err)
	}
	interrupt.Cleanup(t, fmt.Sprintf("nats-server (pid %d)", cmd.Process.Pid), func() {
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

// TestCPINetwork: behind a director, create_vm puts the VM on the lab's
// bridge with the manual network's static IP and a default route via the
// gateway, the agent's settings carry the director's nats:// mbus, its
// certificates and the local blobstore, bound into the VM at the same path;
// delete_vm leaves no namespace, veth or box. A network without a static IP
// is refused, and nothing is left of that VM either. The stemcell is
// sdbox's bookworm rootfs: what is tested is the CPI's network, not the agent.
// Long because each check reads what the steps before it made.
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

	cleanupVMs(t, config, state)

	// A dynamic network has no static IP to give the VM: refused, nothing left.
	dynamic := `{"default":{"type":"dynamic","cloud_properties":{},"default":["dns","gateway"]}}`
	r = call(t, config, `{"method":"create_vm","arguments":["agent-d","`+stemcell+`",{},`+dynamic+`,[],{}],"context":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "step 'network' failed") || !strings.Contains(r.Error.Message, "manual network") {
		t.Errorf("create_vm on a dynamic network: %+v; want step 'network' failed, asking for a manual network", r.Error)
	}
	assertNoVMNetwork(t, l, "after the refused create_vm")

	gatewayMAC := l.bridgeMAC(t)
	networks := func(ip string) string {
		return `{"default":{"type":"manual","ip":"` + ip + `","netmask":"255.255.255.0","gateway":"10.244.0.1",` +
			`"default":["dns","gateway"],"dns":[],"cloud_properties":{}}}`
	}
	env := `{"bosh":{"mbus":{"cert":{"ca":"THE-CA","certificate":"THE-CERT","private_key":"THE-KEY"}}}}`
	v := createVM(t, config, state, `"agent-1","`+stemcell+`",{},`+networks("10.244.0.10")+`,[],`+env)
	vmdir := filepath.Join(state, "vms", v.cid)
	box := strings.TrimSpace(readOr(filepath.Join(vmdir, "box")))
	veth := "vh-" + strings.TrimPrefix(v.cid, "vm-")

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

	if out, err := v.in("ip", "-4", "-o", "addr", "show", "dev", "eth0"); err != nil || !strings.Contains(out, "inet 10.244.0.10/24") {
		t.Errorf("the VM's eth0: %v\n%s\nwant inet 10.244.0.10/24", err, out)
	}
	if out, err := v.in("ip", "route", "show", "default"); err != nil || !strings.Contains(out, "default via 10.244.0.1 dev eth0") {
		t.Errorf("the VM's default route: %v\n%s\nwant via 10.244.0.1", err, out)
	}
	// NATS greets every client with INFO: the VM reaches the lab's gateway address.
	natsInfo := "exec 3<>/dev/tcp/10.244.0.1/4222 && head -c 4 <&3"
	if out, err := v.in("bash", "-c", natsInfo); err != nil || out != "INFO" {
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
	if out, err := v.in("cat", filepath.Join(blobstore, "from-director")); err != nil || out != "blob\n" {
		t.Errorf("the director's blob read in the VM: %v, %q", err, out)
	}
	if out, err := v.in("sh", "-c", "echo compiled >"+filepath.Join(blobstore, "from-agent")); err != nil {
		t.Errorf("the agent writing a blob: %v, %s", err, out)
	} else if got := readOr(filepath.Join(blobstore, "from-agent")); got != "compiled\n" {
		t.Errorf("the agent's blob on the host: %q; want compiled", got)
	}

	// Another VM comes and goes (a director's recreate): the gateway keeps its
	// MAC, so the first VM's ARP entry for it, which its NATS connection uses,
	// stays right. A bridge whose address was never set takes its lowest
	// port's, and the fleet's agents went unreachable when the director
	// deleted a VM whose veth was lowest ("Timed out sending 'get_task'").
	other := createVM(t, config, state, `"agent-2","`+stemcell+`",{},`+networks("10.244.0.11")+`,[],`+env)
	if out, err := other.in("bash", "-c", natsInfo); err != nil || out != "INFO" {
		t.Errorf("the second VM dialing NATS on the gateway: %v, %q; want INFO", err, out)
	}
	deleteVM(t, config, other.cid)
	if got := l.bridgeMAC(t); got != gatewayMAC {
		t.Errorf("the lab bridge's MAC went from %s (no VM) to %s (after a VM came and went); want it fixed", gatewayMAC, got)
	}
	if out, err := v.in("ip", "-j", "neigh", "show", "10.244.0.1", "dev", "eth0"); err != nil || !strings.Contains(out, `"lladdr":"`+gatewayMAC+`"`) {
		t.Errorf("the first VM's ARP entry for the gateway after the second VM's delete_vm: %v %s; want lladdr %s", err, out, gatewayMAC)
	}

	deleteVM(t, config, v.cid)
	assertNoVMNetwork(t, l, "after delete_vm")
	if _, err := os.Stat(vmdir); !os.IsNotExist(err) {
		t.Errorf("delete_vm left %s", vmdir)
	}
	if list, _ := exec.Command("bash", script, "list").Output(); strings.Contains(string(list), box) {
		t.Errorf("delete_vm left box %s (sdbox.sh list: %s)", box, list)
	}
}

// cleanupVMs deletes, when the test ends, every VM left in the CPI's state,
// also after a failed test.
func cleanupVMs(t *testing.T, config, state string) {
	t.Cleanup(func() {
		vms, _ := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
		for _, vm := range vms {
			if r := call(t, config, `{"method":"delete_vm","arguments":["`+filepath.Base(vm)+`"],"context":{}}`); r.Error != nil {
				t.Errorf("cleanup: delete_vm %s: %+v", filepath.Base(vm), r.Error)
			}
		}
	})
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
