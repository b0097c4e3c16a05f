package bosh

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// qemuStemcell is src/tests/qemu/stemcell.sh's noble stemcell tarball, built
// when it is not cached (minutes over a cached build.sh noble; its exit 3,
// no Ubuntu archive, is Unavailable).
func qemuStemcell(t *testing.T) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join("..", "qemu", "stemcell.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		testkit.Unavailable(t, "the noble stemcell image: "+strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		t.Fatalf("stemcell.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// cpiQEMUPIDs are the pids of qemu processes the QEMU CPI started for VM id
// (its -name).
func cpiQEMUPIDs(id string) []string {
	var pids []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("\x00-name\x00cellguard-cpi-"+id+"\x00")) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// agentMessage is the director's message to the agent: method, arguments,
// and the subject to reply to.
func agentMessage(method string, args ...any) func(string) []byte {
	return func(inbox string) []byte {
		b, _ := json.Marshal(map[string]any{"method": method, "arguments": args, "reply_to": inbox})
		return b
	}
}

// agentBus is the test's connection to the lab's NATS as the director: it
// sends the agent a message and returns the reply's value.
type agentBus struct {
	lab     lab
	tls     *tls.Config
	agentID string
	nc      *natsClient
}

func (b *agentBus) send(method string, timeout time.Duration, args ...any) (json.RawMessage, error) {
	if b.nc == nil {
		nc, err := dialNATS(b.lab.path, net.JoinHostPort(b.lab.gateway, "4222"), b.tls)
		if err != nil {
			return nil, err
		}
		b.nc = nc
	}
	reply, err := b.nc.request("agent."+b.agentID, agentMessage(method, args...), timeout)
	if err != nil {
		b.nc.Close() // a timed-out read leaves the stream mid-way: start afresh
		b.nc = nil
		return nil, err
	}
	var r struct {
		Value     json.RawMessage `json:"value"`
		Exception *struct {
			Message string `json:"message"`
		} `json:"exception"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		return nil, fmt.Errorf("agent's reply to %s: %w: %s", method, err, reply)
	}
	if r.Exception != nil {
		return nil, fmt.Errorf("agent's reply to %s: %s", method, r.Exception.Message)
	}
	return r.Value, nil
}

// waitPong pings the agent until it answers pong, for at most d.
func (b *agentBus) waitPong(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	var last error
	for time.Since(t0) < d {
		v, err := b.send("ping", 10*time.Second)
		if err == nil && string(v) == `"pong"` {
			return time.Since(t0)
		}
		last = err
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("the agent did not answer ping within %v (last: %v)", d, last)
	return 0
}

// TestQEMUCPIBootsNoble drives the QEMU CPI by its protocol against a real
// bosh-agent: create_vm boots the noble stemcell image (Ubuntu's kernel, its
// command line) on the director's lab network; the agent reads its settings
// from the config drive, configures eth0 and reaches the lab's NATS (TLS,
// client certificates, as director.sh runs it) and answers the director's
// messages; through `ssh setup` (what `bosh ssh` sends) the VM is entered
// over the lab network: uname -r 6.8.0-*, cgroup2fs, the stemcell's command
// line without a cgroup flag, systemd 255, the director's blobstore at its
// own path both ways. reboot_vm starts its qemu again on its disk, whose
// kernel and systemd come up a second time. delete_vm
// leaves no qemu process, tap, file or mount; neither does a create_vm
// interrupted by SIGINT, as a terminal's Ctrl-C sends it.
// Long because each step needs the VM the steps before it made.
func TestQEMUCPIBootsNoble(t *testing.T) {
	testkit.RequireRoot(t, "tap devices, the lab's namespace, qemu with the root-owned image")
	for _, c := range []string{"jq", "tar", "ip", "nsenter", "genisoimage", "qemu-img", "qemu-system-x86_64", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(c); err != nil {
			testkit.Unavailable(t, c+" is missing (make deps installs it)")
		}
	}
	nats := natsServerBin(t)
	tgz := qemuStemcell(t)
	dir := t.TempDir()
	run(t, "tar", "-xzf", tgz, "-C", dir, "image", "stemcell.MF")
	t.Logf("stemcell %s:\n%s", tgz, readOr(filepath.Join(dir, "stemcell.MF")))
	// Before the VMs' cleanup is registered, so it is released after it.
	qemuvm.HoldHostFor(t)
	l := newLab(t)

	p := newPKI(t)
	serverCert, serverKey := p.issue(t, "default.nats.bosh-internal", net.ParseIP(l.gateway))
	agentCert, agentKey := p.issue(t, "agent.bosh-internal")
	directorCert, directorKey := p.issue(t, "default.director.bosh-internal")
	files := map[string][]byte{"ca.pem": p.caPEM, "server.pem": serverCert, "server.key": serverKey}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n  timeout: 5\n}\n",
		filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem"))), 0o600); err != nil {
		t.Fatal(err)
	}
	l.startNATS(t, nats, filepath.Join(dir, "nats.log"), "-c", conf)
	pair, err := tls.X509KeyPair(directorCert, directorKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	agentID := fmt.Sprintf("agent-%d", os.Getpid())
	bus := &agentBus{lab: l, agentID: agentID,
		tls: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: "default.nats.bosh-internal", MinVersion: tls.VersionTLS12}}
	t.Cleanup(func() {
		if bus.nc != nil {
			bus.nc.Close()
		}
	})

	state := filepath.Join(dir, "state")
	blobstore := filepath.Join(dir, "blobstore")
	if err := os.MkdirAll(blobstore, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blobstore, "from-director"), []byte("blob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "cpi.json")
	cache := filepath.Join(dir, "qemu-cache")
	writeJSON(t, config, map[string]any{
		"state_dir": state, "blobstore_bind": true,
		"network": map[string]any{"netns": l.path, "bridge": l.bridge},
		"agent": map[string]any{"mbus": "nats://" + net.JoinHostPort(l.gateway, "4222"), "ntp": []string{},
			"blobstore": map[string]any{"provider": "local", "options": map[string]any{"blobstore_path": blobstore}}},
		// A cache of its own: the first create_vm probes KVM (where /dev/kvm opens).
		"qemu": map[string]any{"memory_mb": 2048, "cpus": 2, "tb_size_mb": 256, "cache_dir": cache},
	})
	cpi := func(request string) cpiResponse { return callCPI(t, qemuCPI, config, request) }
	r := cpi(`{"method":"create_stemcell","arguments":["` + filepath.Join(dir, "image") + `",{}],"context":{}}`)
	var stemcell string
	if err := json.Unmarshal(r.Result, &stemcell); err != nil || r.Error != nil {
		t.Fatalf("create_stemcell = %s, %+v", r.Result, r.Error)
	}
	t.Cleanup(func() { cpi(`{"method":"delete_stemcell","arguments":["` + stemcell + `"],"context":{}}`) })
	interrupt.Cleanup(t, "the QEMU CPI's VMs", func() { // also after a failure or a Ctrl-C: no VM outlives the test
		vms, _ := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
		for _, vm := range vms {
			if t.Failed() {
				console := readOr(filepath.Join(vm, "console.log"))
				if oops := qemuvm.OopsReport(console, 120); oops != "" {
					t.Logf("console of %s, the guest kernel's first oops or panic report:\n%s", filepath.Base(vm), oops)
				}
				t.Logf("console of %s (last 40 lines):\n%s", filepath.Base(vm), testkit.Tail(console, 40))
				t.Logf("agent log of %s (last 40 lines):\n%s", filepath.Base(vm), testkit.Tail(agentLog(vm), 40))
			}
			if r := cpi(`{"method":"delete_vm","arguments":["` + filepath.Base(vm) + `"],"context":{}}`); r.Error != nil {
				t.Errorf("cleanup: delete_vm %s: %+v", filepath.Base(vm), r.Error)
			}
		}
	})

	networks := `{"default":{"type":"manual","ip":"10.244.0.10","netmask":"255.255.255.0","gateway":"10.244.0.1",` +
		`"default":["dns","gateway"],"dns":[],"cloud_properties":{}}}`
	env, _ := json.Marshal(map[string]any{"bosh": map[string]any{"mbus": map[string]any{"cert": map[string]string{
		"ca": string(p.caPEM), "certificate": string(agentCert), "private_key": string(agentKey)}}}})
	t.Logf("load average %s; create_vm", qemuvm.LoadAverage())
	t0 := time.Now()
	r = cpi(`{"method":"create_vm","arguments":["` + agentID + `","` + stemcell + `",{},` + networks + `,[],` + string(env) + `],"context":{}}`)
	var res []json.RawMessage
	var cid string
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res) != 2 || json.Unmarshal(res[0], &cid) != nil {
		t.Fatalf("create_vm = %s, %+v (cpi.log: %s)", r.Result, r.Error, readOr(filepath.Join(state, "cpi.log")))
	}
	id := strings.TrimPrefix(cid, "vm-")
	vmdir := filepath.Join(state, "vms", cid)
	createLog := r.Log
	t.Logf("create_vm in %v: %s", time.Since(t0).Round(time.Millisecond), r.Log)
	if !strings.Contains(r.Log, "under TCG") && !strings.Contains(r.Log, "under KVM") {
		t.Errorf("create_vm's log %q says neither TCG nor KVM", r.Log)
	}
	if pids := cpiQEMUPIDs(id); len(pids) != 1 {
		t.Fatalf("qemu processes of %s: %v; want one", cid, pids)
	}
	// KVM was probed with this VM's boot: it worked, or the failure is in the
	// file qemuvm reads and writes, and the next create_vm pays no probe.
	abi := strings.TrimPrefix(strings.TrimSpace(run(t, "grep", "^KERNEL_ABI=", filepath.Join(state, "stemcells", stemcell, "image.env"))), "KERNEL_ABI=")
	verdict := qemuvm.KVMVerdictFile(cache, abi)
	switch {
	case strings.Contains(r.Log, "under KVM"), strings.Contains(r.Log, "/dev/kvm does not open"):
	case strings.Contains(r.Log, "under TCG, not KVM: a boot under KVM failed"):
		if b, err := os.ReadFile(verdict); err != nil || !strings.Contains(r.Log, strings.TrimSpace(string(b))) {
			t.Errorf("the failed KVM probe's verdict in qemuvm's file %s: %q, %v; want the reason create_vm gave", verdict, b, err)
		}
	default:
		t.Errorf("create_vm's log %q: want KVM, or TCG after a failed KVM probe, or no /dev/kvm", r.Log)
	}
	// The VM writes to its own overlay; the stemcell's disk is its backing file.
	info := run(t, "qemu-img", "info", "-U", "--output=json", filepath.Join(vmdir, "root.qcow2"))
	if !strings.Contains(info, `"backing-filename": "`+filepath.Join(state, "stemcells", stemcell, "disk.img")+`"`) {
		t.Errorf("the VM's root disk: %s; want a qcow2 overlay on the stemcell's disk.img", info)
	}
	if out := run(t, "ip", "-n", l.name, "-o", "link", "show", "dev", "qt-"+id); !strings.Contains(out, "master "+l.bridge) {
		t.Errorf("the VM's tap in the lab: %s; want it on %s", out, l.bridge)
	}

	boot := bus.waitPong(t, qemuvm.BootTimeout()+3*time.Minute)
	t.Logf("the agent answered ping %v after create_vm returned (%v after it was called); load average %s",
		boot.Round(time.Second), time.Since(t0).Round(time.Second), qemuvm.LoadAverage())

	// bosh ssh's way in: the agent makes a user with our key, we ssh from the lab.
	key := filepath.Join(dir, "id_ed25519")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	v, err := bus.send("ssh", time.Minute, "setup", map[string]string{"user": "bosh_cgtest", "public_key": strings.TrimSpace(string(pub))})
	if err != nil || !strings.Contains(string(v), `"status":"success"`) {
		t.Fatalf("ssh setup through the agent: %s, %v", v, err)
	}
	inVM := func(script string) string {
		t.Helper()
		out, err := exec.Command("nsenter", "--net="+l.path, "ssh", "-i", key, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=30", "-o", "LogLevel=ERROR", "bosh_cgtest@10.244.0.10", script).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh %s: %v\n%s", script, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	facts := strings.Split(inVM("uname -r; stat -fc %T /sys/fs/cgroup; cat /proc/cmdline; systemctl --version | head -n 1"), "\n")
	if len(facts) != 4 {
		t.Fatalf("the VM's facts: %q", facts)
	}
	t.Logf("in the VM: uname -r %s; /sys/fs/cgroup %s; /proc/cmdline %s; %s", facts[0], facts[1], facts[2], facts[3])
	if !strings.HasPrefix(facts[0], "6.8.0-") {
		t.Errorf("uname -r = %q; want the stemcell's 6.8.0-*", facts[0])
	}
	if facts[1] != "cgroup2fs" {
		t.Errorf("/sys/fs/cgroup is %q; want cgroup2fs", facts[1])
	}
	// The stemcell's line, and what the CPI appends: under TCG
	// no_timer_check (a loaded host made the boot-time timer probe panic),
	// and panic= so a guest whose kernel panics resets itself (qemu-cpi,
	// start_qemu, panic_s).
	want := strings.TrimSpace(readOr(filepath.Join(state, "stemcells", stemcell, "cmdline")))
	if accel := strings.TrimSpace(readOr(filepath.Join(vmdir, "accel"))); accel != "kvm" {
		want += " no_timer_check"
	}
	if want += " panic=10"; facts[2] != want {
		t.Errorf("/proc/cmdline = %q; want the stemcell's line and the CPI's additions: %q", facts[2], want)
	}
	if strings.Contains(facts[2], "cgroup_hierarchy") || strings.Contains(facts[2], "cgroup_no_v1") {
		t.Errorf("/proc/cmdline %q has a cgroup layout flag", facts[2])
	}
	if !strings.HasPrefix(facts[3], "systemd 255 ") {
		t.Errorf("systemctl --version: %q; want systemd 255", facts[3])
	}
	// The director's blobstore, at its own path, both ways.
	if got := inVM("sudo -n cat " + filepath.Join(blobstore, "from-director")); got != "blob" {
		t.Errorf("the director's blob read in the VM: %q", got)
	}
	inVM("echo compiled | sudo -n tee " + filepath.Join(blobstore, "from-agent") + " >/dev/null")
	if got := readOr(filepath.Join(blobstore, "from-agent")); got != "compiled\n" {
		t.Errorf("the agent's blob on the host: %q; want compiled", got)
	}
	if b, err := os.ReadFile("/proc/" + cpiQEMUPIDs(id)[0] + "/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
				t.Logf("qemu %s", strings.Join(strings.Fields(l), " "))
			}
		}
	}
	if r := cpi(`{"method":"has_vm","arguments":["` + cid + `"],"context":{}}`); string(r.Result) != "true" {
		t.Errorf("has_vm %s = %s, %+v; want true", cid, r.Result, r.Error)
	}

	// reboot_vm: qemu killed and started again on the same overlay and tap,
	// and the guest's kernel and systemd come up from that disk a second
	// time. Not waited for: the agent's answer after the cold reset. That
	// boot is create_vm's (start_qemu), and under make test's load it took
	// 3 m 37 s (CI, 2026-12-07: 48 s on a quiet host), all of it on the
	// critical path of the QEMU guests the host lock serializes; an agent
	// back on a rebooted disk is the fleet's noble reboot scenario's (make
	// cell), and its sysctls read back after it.
	oldPID := cpiQEMUPIDs(id)[0]
	overlay := filepath.Join(vmdir, "root.qcow2")
	inode := func() uint64 {
		fi, err := os.Stat(overlay)
		if err != nil {
			t.Fatalf("the VM's overlay: %v", err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	before := inode()
	console := filepath.Join(vmdir, "console.log")
	welcomes := func() int { return strings.Count(readOr(console), "Welcome to ") }
	// At least once: a guest whose kernel panicked resets itself (panic=10)
	// into the same console.
	booted := welcomes()
	if booted < 1 {
		t.Fatalf("the console shows no systemd welcome before reboot_vm:\n%s", testkit.Tail(readOr(console), 20))
	}
	t1 := time.Now()
	if r := cpi(`{"method":"reboot_vm","arguments":["` + cid + `"],"context":{}}`); r.Error != nil {
		t.Fatalf("reboot_vm: %+v", r.Error)
	}
	if pids := cpiQEMUPIDs(id); len(pids) != 1 || pids[0] == oldPID {
		t.Errorf("qemu of %s after reboot_vm: %v; want one, not %s", cid, pids, oldPID)
	}
	if after := inode(); after != before {
		t.Errorf("reboot_vm made a new overlay (inode %d, before %d); want the VM's disk kept", after, before)
	}
	if out := run(t, "ip", "-n", l.name, "-o", "link", "show", "dev", "qt-"+id); !strings.Contains(out, "master "+l.bridge) {
		t.Errorf("the VM's tap after reboot_vm: %s; want it on %s", out, l.bridge)
	}
	for deadline := time.Now().Add(qemuvm.BootTimeout()); welcomes() == booted && time.Now().Before(deadline); {
		time.Sleep(time.Second)
	}
	if got := welcomes(); got <= booted {
		t.Fatalf("the console shows systemd's welcome %d times %v after reboot_vm; want more than %d (last 20 lines:\n%s)",
			got, time.Since(t1).Round(time.Second), booted, testkit.Tail(readOr(console), 20))
	}
	if has := cpi(`{"method":"has_vm","arguments":["` + cid + `"],"context":{}}`); string(has.Result) != "true" {
		t.Errorf("has_vm %s after reboot_vm = %s, %+v; want true", cid, has.Result, has.Error)
	}
	t.Logf("reboot_vm: systemd welcomed on the same disk %v later", time.Since(t1).Round(time.Second))

	if r := cpi(`{"method":"delete_vm","arguments":["` + cid + `"],"context":{}}`); r.Error != nil {
		t.Fatalf("delete_vm: %+v", r.Error)
	}
	assertNoQEMUVM(t, l, state, id)
	if got := readOr(filepath.Join(state, "deleted", cid, "console.log")); !strings.Contains(got, "Linux version 6.8.0-") {
		t.Errorf("delete_vm kept no console log with the kernel's banner in %s", filepath.Join(state, "deleted", cid))
	}

	t.Run("interrupted create_vm", func(t *testing.T) {
		cmd := exec.Command("bash", qemuCPI, config)
		cmd.Stdin = strings.NewReader(`{"method":"create_vm","arguments":["agent-x","` + stemcell + `",{},` + networks + `,[],` + string(env) + `],"context":{}}`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group, as Ctrl-C reaches it
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var vid string
		for deadline := time.Now().Add(2 * time.Minute); vid == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			vms, _ := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
			for _, vm := range vms {
				if id := strings.TrimPrefix(filepath.Base(vm), "vm-"); len(cpiQEMUPIDs(id)) > 0 {
					vid = id
				}
			}
		}
		if vid == "" {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatalf("no qemu of the second create_vm within 2 minutes (cpi.log: %s)", testkit.Tail(readOr(filepath.Join(state, "cpi.log")), 10))
		}
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		var r cpiResponse
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "interrupted") {
			t.Errorf("create_vm interrupted by SIGINT answered %s (%v); want an error saying interrupted", out.String(), err)
		}
		assertNoQEMUVM(t, l, state, vid)
		if cpilog := readOr(filepath.Join(state, "cpi.log")); strings.Contains(createLog, "a boot under KVM failed") && !strings.Contains(cpilog, "remembered in "+verdict) {
			t.Errorf("the second create_vm did not take the remembered verdict %s:\n%s", verdict, testkit.Tail(cpilog, 5))
		}
	})
}

// assertNoQEMUVM: nothing of VM id is left: no qemu process, no tap in the
// lab, no directory (overlay, config drive), no mount of the state's files.
func assertNoQEMUVM(t *testing.T, l lab, state, id string) {
	t.Helper()
	if pids := cpiQEMUPIDs(id); len(pids) != 0 {
		t.Errorf("qemu of vm-%s still runs: pids %v", id, pids)
	}
	if links := run(t, "ip", "-n", l.name, "-o", "link", "show"); strings.Contains(links, "qt-") {
		t.Errorf("a tap is left in the lab:\n%s", links)
	}
	if _, err := os.Stat(filepath.Join(state, "vms", "vm-"+id)); !os.IsNotExist(err) {
		t.Errorf("vm-%s's directory is left (%v)", id, err)
	}
	if mi := readOr("/proc/self/mountinfo"); strings.Contains(mi, state) {
		t.Errorf("a mount of %s is left:\n%s", state, mi)
	}
}

// agentLog is the agent's log (/var/vcap/bosh/log/current) as the VM's root
// disk holds it now, read with debugfs from a raw copy: for a test that
// failed before it could enter the VM.
func agentLog(vmdir string) string {
	raw := filepath.Join(vmdir, "debug.raw")
	defer os.Remove(raw)
	if out, err := exec.Command("qemu-img", "convert", "-U", "-O", "raw", filepath.Join(vmdir, "root.qcow2"), raw).CombinedOutput(); err != nil {
		return fmt.Sprintf("(qemu-img convert: %v: %s)", err, out)
	}
	out, err := exec.Command("debugfs", "-R", "cat /var/vcap/bosh/log/current", raw).Output()
	if err != nil {
		return fmt.Sprintf("(debugfs: %v)", err)
	}
	return string(out)
}
