package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
	"golang.org/x/sys/unix"
)

// lab is one director.sh state directory under test.
type lab struct {
	t     *testing.T
	repo  string
	state string
	bosh  *boshlab.Bosh
	env   boshlab.Env
	pids  map[string]bool // the lab's processes while up: pid files and their children
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// runCmd runs a command, its output in the test log on failure; it returns
// the output and the error.
func runCmd(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

func must(t *testing.T, what string, out string, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return out
}

func (l *lab) script(args ...string) (string, time.Duration, error) {
	start := time.Now()
	out, err := runCmd(l.t, l.repo, nil, "bash", append([]string{"src/tests/director/director.sh"}, args...)...)
	return out, time.Since(start), err
}

// boshCLI runs bosh-cli in the lab's network namespace as the director's
// admin (boshlab.Bosh, its output logged under the test's base directory);
// a non-zero exit is the error.
func (l *lab) boshCLI(args ...string) (string, error) {
	r, err := l.bosh.MustRun(context.Background(), args...)
	return r.Output, err
}

func (l *lab) timed(what string, args ...string) string {
	l.t.Helper()
	start := time.Now()
	out, err := l.boshCLI(args...)
	must(l.t, "bosh "+strings.Join(args, " "), out, err)
	l.t.Logf("%s: %.1fs", what, time.Since(start).Seconds())
	return out
}

// TestDirector brings a real director up with director.sh, drives it with
// bosh-cli through the front (env, login, upload-stemcell, upload-release,
// cloud and runtime configs), brings it down and checks that nothing is
// left: no process in the lab, no namespace, mount or listener. Long
// because it is one director's life, up to down, in order.
func TestDirector(t *testing.T) {
	testkit.RequireRoot(t, "a network namespace, PostgreSQL run as its own user")
	testkit.RequireFile(t, "/usr/lib/postgresql/15/bin/postgres", "run make deps (postgresql-15)")
	testkit.RequireFile(t, "/usr/bin/ruby", "run make deps (ruby)")
	for _, p := range []string{"../shared/sources/SHA256SUMS", "../shared/stemcell"} {
		repo := repoRoot(t)
		testkit.RequireFile(t, filepath.Join(repo, p), "../shared beside the repository (offline caches of pinned upstream files)")
	}
	repo := repoRoot(t)
	// PostgreSQL runs as Debian's postgres user, who must reach STATE: not a
	// 0700 t.TempDir.
	base, err := os.MkdirTemp("/var/tmp", "cellguard-director-test.")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, repo: repo, state: filepath.Join(base, "state")}
	cpi := writeCPI(t, repo, base)

	out, err := runCmd(t, repo, nil, "bash", "ci/scripts/bosh-cli.sh")
	boshBin := strings.TrimSpace(lastLine(must(t, "bosh-cli", out, err)))
	for _, d := range []string{"home", "bosh-logs"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	var netnsIno uint64
	// Also at SIGINT/SIGTERM, when t.Cleanup does not run.
	interrupt.Cleanup(t, "the director lab "+l.state, func() {
		out, _, err := l.script("down", l.state)
		if err != nil {
			t.Errorf("director.sh down: %v\n%s", err, out)
			fmt.Fprintf(os.Stderr, "director test: down: %v; kept %s\n", err, base)
			return
		}
		if !t.Failed() || interrupt.Interrupted() {
			os.RemoveAll(base)
		} else {
			t.Logf("kept %s for the logs (STATE/log)", base)
		}
	})
	out, cold, err := l.script("up", l.state, "--cpi", cpi)
	must(t, "director.sh up", out, err)
	t.Logf("director.sh up (first in this state dir): %.1fs", cold.Seconds())
	out, again, err := l.script("up", l.state)
	must(t, "director.sh up again (idempotent)", out, err)
	t.Logf("director.sh up again while up: %.1fs", again.Seconds())

	if l.env, err = boshlab.ReadEnv(filepath.Join(l.state, "env.json")); err != nil {
		t.Fatal(err)
	}
	checkEnv(t, l.env, l.state, cpi)
	l.bosh = &boshlab.Bosh{Bin: boshBin, Env: l.env, Home: filepath.Join(base, "home"), Logs: filepath.Join(base, "bosh-logs")}
	netnsIno = inode(t, l.env.Netns)

	checkIsolated(t, l)
	checkNATS(t, l)

	out = l.timed("bosh env", "env")
	for _, want := range []string{"cellguard-lab", "283.0.0 (e4b7ae38ea7e)"} {
		if !strings.Contains(out, want) {
			t.Errorf("bosh env does not say %q:\n%s", want, out)
		}
	}
	l.timed("bosh login", "login")
	// A client of its own (a Bosh numbers its calls, so it is not copied),
	// logging apart from l.bosh's.
	wrong := &boshlab.Bosh{Bin: l.bosh.Bin, Env: l.bosh.Env, Home: l.bosh.Home, Logs: t.TempDir()}
	wrong.Env.ClientSecret = "not-the-secret"
	if r, err := wrong.Run(context.Background(), "login"); err != nil || r.ExitCode == 0 || !strings.Contains(r.Output, "Invalid credentials") {
		t.Errorf("bosh login with a wrong secret: %v, exit %d, want Invalid credentials:\n%s", err, r.ExitCode, r.Output)
	}

	out, err = runCmd(t, repo, nil, "bash", "src/tests/bosh/stemcell/build.sh", "jammy")
	stemcell := lastLine(must(t, "build the jammy stemcell", out, err))
	l.timed("upload-stemcell (jammy, through the front)", "upload-stemcell", stemcell)

	tarball, err := boshlab.BuildRelease(context.Background(), repo, base)
	if err != nil {
		t.Fatal(err)
	}
	l.timed("upload-release (cellguard-dev.tgz, through the front)", "upload-release", tarball)

	cloud := filepath.Join(base, "cloud-config.yml")
	if err := os.WriteFile(cloud, []byte(cloudConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	checkSchema(t, l, base)
	l.timed("update-cloud-config", "update-cloud-config", cloud)
	// The runtime config names the exact version just uploaded, as it must.
	release := checkTable(t, l, "releases", "cellguard")
	version := strings.TrimSuffix(fmt.Sprint(release["version"]), "*")
	l.timed("update-runtime-config", "update-runtime-config", "--name", "cellguard",
		filepath.Join(repo, "manifests", "runtime-config.yml"), "-v", "cellguard_version="+version)

	checkTable(t, l, "stemcells", "jammy")
	checkTable(t, l, "configs", "cellguard")

	out, d, err := l.script("down", l.state)
	must(t, "director.sh down", out, err)
	t.Logf("director.sh down: %.1fs", d.Seconds())
	out, _, err = l.script("down", l.state)
	must(t, "director.sh down again", out, err)
	checkNothingLeft(t, l, netnsIno)
}

// writeCPI writes the director's CPI for this test: the nspawn CPI with a
// config of its own; upload-stemcell needs only its info and create_stemcell.
func writeCPI(t *testing.T, repo, base string) string {
	t.Helper()
	dir := filepath.Join(base, "cpi")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"sdbox": filepath.Join(repo, "src/tests/harness/sdbox.sh"), "state_dir": filepath.Join(dir, "state"),
		"mbus_listen": "", "box_prefix": "dirtest", "nspawn_args": []string{}, "agent": map[string]any{},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpi.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec bash %s %s\n",
		filepath.Join(repo, "src/tests/bosh/cpi/nspawn-cpi"), filepath.Join(dir, "cpi.json"))
	path := filepath.Join(dir, "cpi")
	testkit.WriteExec(t, path, script)
	return path
}

// cloudConfig: the lab's network as the fleet sees it.
const cloudConfig = `---
azs:
- name: z1
vm_types:
- name: default
disk_types:
- name: default
  disk_size: 1024
networks:
- name: default
  type: manual
  subnets:
  - range: 10.244.0.0/24
    gateway: 10.244.0.1
    reserved: [10.244.0.1-10.244.0.9]
    static: [10.244.0.10-10.244.0.19]
    azs: [z1]
compilation:
  workers: 2
  reuse_compilation_vms: true
  az: z1
  vm_type: default
  network: default
`

func checkEnv(t *testing.T, env boshlab.Env, state, cpi string) {
	t.Helper()
	want := boshlab.Env{Bridge: "cgbr0", Gateway: "10.244.0.1", CIDR: "10.244.0.0/24",
		DirectorURL: "https://10.244.0.1:25555", Client: "admin", NatsURL: "nats://10.244.0.1:4222",
		CPIPath: cpi, StateDir: state}
	got := env
	got.Netns, got.CACert, got.ClientSecret, got.NatsCA, got.BlobstorePath = "", "", "", "", ""
	if got != want {
		t.Errorf("env.json = %+v, want %+v", got, want)
	}
	for _, p := range []string{env.Netns, env.CACert, env.NatsCA, env.BlobstorePath} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("env.json names %s: %v", p, err)
		}
	}
	if env.ClientSecret == "" {
		t.Error("env.json has no client_secret")
	}
}

// checkTable: `bosh NAME --json` has a row with a value containing want;
// it returns that row.
func checkTable(t *testing.T, l *lab, name, want string) map[string]any {
	t.Helper()
	out, err := l.boshCLI(name, "--json")
	must(t, "bosh "+name, out, err)
	var doc struct {
		Tables []struct {
			Rows []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parse bosh %s --json: %v\n%s", name, err, out)
	}
	for _, tb := range doc.Tables {
		for _, row := range tb.Rows {
			for _, v := range row {
				if s, ok := v.(string); ok && strings.Contains(s, want) {
					t.Logf("bosh %s: %v", name, row)
					return row
				}
			}
		}
	}
	t.Fatalf("bosh %s does not list %q:\n%s", name, want, out)
	return nil
}

// lastLine is the last non-empty line of out: the path a build script
// prints after its progress (stderr and stdout are read together).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	out, err := runCmd(t, "/", nil, "stat", "-L", "-c", "%i", path)
	must(t, "stat "+path, out, err)
	var n uint64
	if _, err := fmt.Sscan(out, &n); err != nil {
		t.Fatalf("stat %s: %q: %v", path, out, err)
	}
	return n
}

// checkNothingLeft: after down, no process is in the lab's namespace (by
// its inode), the namespace's file and mount are gone, nothing in the
// host's namespace listens on the lab's ports, and no mount names STATE.
func checkNothingLeft(t *testing.T, l *lab, netnsIno uint64) {
	t.Helper()
	want := fmt.Sprintf("net:[%d]", netnsIno)
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		if link, err := os.Readlink(p); err == nil && link == want {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(p)), "cmdline"))
			t.Errorf("process %s still in the lab: %s", p, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
	if _, err := os.Lstat(l.env.Netns); err == nil {
		t.Errorf("%s still exists", l.env.Netns)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, l.env.Netns) || strings.Contains(line, l.state) {
			t.Errorf("mount left: %s", line)
		}
	}
	for _, line := range hostListeners(t, l.pids) {
		t.Errorf("a listener of the director's processes in the host's namespace after down: %s", line)
	}
	for _, f := range []string{"env.json", "bosh.env"} {
		if _, err := os.Stat(filepath.Join(l.state, f)); err == nil {
			t.Errorf("STATE/%s still there after down", f)
		}
	}
}

// ourProcesses: the pids in STATE/run/*.pid and all their descendants
// (postgres's backends, puma's worker), as strings.
func ourProcesses(t *testing.T, state string) map[string]bool {
	t.Helper()
	pids := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(state, "run", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pids[strings.TrimSpace(string(b))] = true
	}
	parent := map[string]string{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			parent[filepath.Base(filepath.Dir(st))] = f[1]
		}
	}
	for grew := true; grew; {
		grew = false
		for pid, ppid := range parent {
			if pids[ppid] && !pids[pid] {
				pids[pid], grew = true, true
			}
		}
	}
	return pids
}

// hostListeners: the host namespace's listening sockets held by one of pids.
func hostListeners(t *testing.T, pids map[string]bool) []string {
	t.Helper()
	return listeners(t, nil, pids)
}

// listeners: the listening TCP sockets held by one of pids, in the
// namespace ss runs in (in front of it: nsenter, or nothing for the host's).
func listeners(t *testing.T, in []string, pids map[string]bool) []string {
	t.Helper()
	args := append(append([]string{}, in...), "ss", "-Htlnp")
	out, err := runCmd(t, "/", nil, args[0], args[1:]...)
	must(t, "ss", out, err)
	var ours []string
	for _, line := range strings.Split(out, "\n") {
		for pid := range pids {
			if strings.Contains(line, "pid="+pid+",") {
				ours = append(ours, line)
				break
			}
		}
	}
	return ours
}

// checkIsolated: while the director is up, nothing of it listens in the
// host's namespace, and the lab routes nothing off its bridge (one route,
// the bridge's subnet; no forwarding).
func checkIsolated(t *testing.T, l *lab) {
	t.Helper()
	l.pids = ourProcesses(t, l.state)
	if len(l.pids) < 6 {
		t.Errorf("%d processes from STATE/run's pid files and their children, want at least 6 (postgres, nats, director, 2 workers, front)", len(l.pids))
	}
	for _, line := range hostListeners(t, l.pids) {
		t.Errorf("a listener of the director's processes in the host's namespace: %s", line)
	}
	// The same look inside the lab finds them: the check above can see them.
	inLab := strings.Join(listeners(t, []string{"nsenter", "--net=" + l.env.Netns, "--"}, l.pids), "\n")
	for _, addr := range []string{"10.244.0.1:25555 ", "10.244.0.1:4222 ", "127.0.0.1:25556 "} {
		if !strings.Contains(inLab, addr) {
			t.Errorf("no listener of the director's processes on %s in the lab:\n%s", addr, inLab)
		}
	}
	routes, err := runCmd(t, "/", nil, "nsenter", "--net="+l.env.Netns, "ip", "-4", "route", "show", "table", "main")
	must(t, "ip route in the lab", routes, err)
	if got := strings.Fields(routes); len(got) < 3 || got[0] != "10.244.0.0/24" || got[2] != "cgbr0" || strings.Count(routes, "\n") != 1 {
		t.Errorf("the lab's routes: %q, want only 10.244.0.0/24 dev cgbr0", routes)
	}
	fwd, err := runCmd(t, "/", nil, "nsenter", "--net="+l.env.Netns, "cat", "/proc/sys/net/ipv4/ip_forward")
	must(t, "ip_forward in the lab", fwd, err)
	if strings.TrimSpace(fwd) != "0" {
		t.Errorf("the lab forwards (ip_forward %q)", strings.TrimSpace(fwd))
	}
	t.Logf("the lab: routes %q, ip_forward 0, no listener in the host's namespace", strings.TrimSpace(routes))
}

// checkNATS speaks NATS's client protocol to the lab's server from inside
// the lab, as an agent would: INFO in the clear, then TLS with a client
// certificate the NATS CA signed (the director's), CONNECT, PING, PONG; and
// the same without a client certificate must not get a PONG.
func checkNATS(t *testing.T, l *lab) {
	t.Helper()
	pki := filepath.Join(l.state, "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "nats-director.pem"), filepath.Join(pki, "nats-director.key"))
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(l.env.NatsCA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	addr := strings.TrimPrefix(l.env.NatsURL, "nats://")
	if err := natsPing(l.env.Netns, addr, &tls.Config{RootCAs: roots, ServerName: "10.244.0.1", Certificates: []tls.Certificate{cert}}); err != nil {
		t.Errorf("NATS with the director's client certificate: %v", err)
	}
	// The agent checks the server's CN (bosh-agent v2.759.0).
	if err := natsPing(l.env.Netns, addr, &tls.Config{RootCAs: roots, ServerName: "default.nats.bosh-internal", Certificates: []tls.Certificate{cert}}); err != nil {
		t.Errorf("NATS as default.nats.bosh-internal: %v", err)
	}
	if err := natsPing(l.env.Netns, addr, &tls.Config{RootCAs: roots, ServerName: "10.244.0.1"}); err == nil {
		t.Error("NATS answered a client without a certificate")
	} else {
		t.Logf("NATS: PONG over TLS with a client certificate; without one: %v", err)
	}
}

// natsPing dials addr from inside the network namespace netns (one locked
// OS thread moved there and back) and runs NATS's handshake over TLS.
func natsPing(netns, addr string, cfg *tls.Config) error {
	raw, err := dialIn(netns, addr)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(30 * time.Second))
	info, err := bufio.NewReader(raw).ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO ") || !strings.Contains(info, `"tls_required":true`) {
		return fmt.Errorf("read INFO: %q %v", info, err)
	}
	conn := tls.Client(raw, cfg)
	if err := conn.Handshake(); err != nil {
		return fmt.Errorf("tls handshake: %w", err)
	}
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n")); err != nil {
		return fmt.Errorf("write CONNECT: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read PONG: %w", err)
	}
	if strings.TrimSpace(line) != "PONG" {
		return fmt.Errorf("got %q, want PONG", line)
	}
	return nil
}

// dialIn connects to addr from inside netns: a locked OS thread enters the
// lab, dials, and returns to its own namespace before it is unlocked (the
// socket keeps the lab's namespace). A thread that cannot return stays
// locked, so Go ends it with the goroutine; unless it is the main thread,
// which Go never ends: then the process stays in the lab and the test's
// leftover check says so.
func dialIn(netns, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer home.Close()
		lab, err := os.Open(netns)
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer lab.Close()
		if err := unix.Setns(int(lab.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("setns %s: %w", netns, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if serr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); serr == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// checkSchema finds the cellguard job's blob in the director's blobstore,
// checks that it carries properties_schema.json, and runs the director's own
// validator (Core::Templates::JobSchemaValidator, json_schemer 2.4's draft
// 2020-12) on it, as a deploy renders: the job's defaults pass, log.level 5
// is refused.
func checkSchema(t *testing.T, l *lab, base string) {
	t.Helper()
	schema, err := jobFile(l.env.BlobstorePath, "cellguard", "properties_schema.json")
	if err != nil {
		t.Fatalf("the cellguard job in the blobstore: %v", err)
	}
	path := filepath.Join(base, "properties_schema.json")
	if err := os.WriteFile(path, schema, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		props, want string
	}{
		{`{"cellguard": {"log": {"level": "info"}}}`, "accepted"},
		{`{"cellguard": {"log": {"level": 5}}}`, "value at `/cellguard/log/level` is not one of"},
	} {
		out, err := runCmd(t, l.repo, nil, "bash", "src/tests/director/director.sh", "ruby", l.state, "-e", validateRuby, path, tc.props)
		must(t, "the director's JobSchemaValidator", out, err)
		if !strings.Contains(out, tc.want) {
			t.Errorf("the director's validator on %s: %q, want %q", tc.props, out, tc.want)
		} else {
			t.Logf("the director's validator on %s: %s", tc.props, strings.TrimSpace(out))
		}
	}
}

const validateRuby = `
require 'json'
require 'bosh/director'
require 'bosh/director/core/templates/job_schema_validator'
begin
  Bosh::Director::Core::Templates::JobSchemaValidator.validate(
    job_name: 'cellguard', schema: JSON.load_file(ARGV[0]), properties: JSON.parse(ARGV[1]))
  puts 'accepted'
rescue => e
  puts e.message
end
`

// jobFile returns file from the job blob (a tgz with job.MF naming job) in
// the local blobstore at dir.
func jobFile(dir, job, file string) ([]byte, error) {
	var found []byte
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != nil {
			return err
		}
		manifest, content, err := readTgz(path, "job.MF", file)
		if err != nil || !bytes.Contains(manifest, []byte("name: "+job+"\n")) {
			return nil // not a job blob, or another job's
		}
		if content == nil {
			return fmt.Errorf("job %s's blob %s has no %s", job, path, file)
		}
		found = content
		return nil
	})
	if err == nil && found == nil {
		err = fmt.Errorf("no blob of job %s in %s", job, dir)
	}
	return found, err
}

// readTgz returns the contents of two members of a gzipped tar (nil when absent).
func readTgz(path, a, b string) ([]byte, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, err
	}
	tr := tar.NewReader(zr)
	var ca, cb []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return ca, cb, nil
		}
		if err != nil {
			return nil, nil, err
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case a:
			ca, err = io.ReadAll(tr)
		case b:
			cb, err = io.ReadAll(tr)
		}
		if err != nil {
			return nil, nil, err
		}
	}
}
