package garden

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// Where Garden lives in the box, laid out as a BOSH job's would be.
const (
	BinDir     = "/var/vcap/packages/guardian/bin"
	RuntimeDir = "/var/vcap/packages/garden-runtime" // the host's containerd, shims, ctr and runc, patched
	JobDir     = "/var/vcap/jobs/garden"
	LogDir     = "/var/vcap/sys/log/garden"
	Depot      = "/var/vcap/data/garden/depot"
	Rootfs     = "/var/vcap/data/garden/rootfs" // a raw rootfs: busybox, owned by container root
	Socket     = "/var/vcap/sys/run/containerd/containerd.sock"
	Addr       = "127.0.0.1:7777"
	// Namespace is Garden's containerd namespace.
	Namespace = "garden"
	// ShimRoot is where containerd's runc keeps Garden's containers: the
	// default runtime root under /run/containerd, one of
	// runcstate.StandardRoots, so cellguard finds them as on a cell.
	ShimRoot = "/run/containerd/runc/" + Namespace
)

const (
	// ContainerRootUID is container root's uid on the host with the uid map
	// Start gives gdn (--uid-map-start 1 --uid-map-length 4294967293):
	// maximum uid, as grootfs chowns its images.
	ContainerRootUID = "4294967294"
	externalIP       = "10.252.0.2"
	gateway          = "10.252.0.1"
	networkPool      = "10.254.0.0/22"
)

// Variant names a pinned guardian source build.sh knows.
type Variant string

const (
	// Today is guardian d21cb5a, the submodule of garden-runc-release
	// v1.58.0 (2024-10-24): destroy sends SIGKILL to the container's init.
	Today Variant = "v1.58.0"
	// SeedEra is guardian 28ddcdfa (2020-01-23), the last before 8b012819c
	// removed WithKillAll: destroy is containerd's kill --all, which is
	// what hung in seed 000.
	SeedEra Variant = "2020-01"
	// OnV2 is guardian c2d9348 (2026-08-20), Garden as noble cells run it:
	// cgroup v2 support (eed4f73bf). Its build also holds the runc and
	// containerd its go.mod pins, in runtime/ (RuntimeBinaries).
	OnV2 Variant = "2026-08"
)

// Shape is the systemd unit Garden (containerd and gdn) runs in.
type Shape struct {
	Unit    string // e.g. garden.service
	Service string // more [Service] lines, each ending in "\n"
}

var (
	// InMonitUnit is Garden as releases up to v1.17 ran it: monit started
	// gdn directly, so it sits in the unit that holds monit (a stemcell's
	// runit.service), which has no Delegate=.
	InMonitUnit = Shape{Unit: "supervisor.service", Service: "KillMode=process\n"}
	// GardenService is garden_ctl's garden.service since garden-runc-release
	// v1.18.0 (1f695c9f, 2019-01-14; TasksMax=infinity since 8dec786a).
	GardenService = Shape{Unit: "garden.service", Service: "Delegate=yes\nKillMode=none\nTasksMax=infinity\n"}
)

// BoxOptions are the sdbox options a box that runs Garden needs: the
// keyring syscalls runc uses to join a fresh session keyring, which nspawn's
// default filter refuses; and the net_cls,net_prio hierarchy, bound and
// mounted in the box from its boot on. The host mounts net_cls nowhere, and
// tests beside this one (go test -p 2) make its hierarchy while they run: a
// stemcell box of src/tests/bosh or of the fleet, the netns tests. One made
// after the box booted is listed in the box's /proc/PID/cgroup but mounted
// nowhere inside, and the 2020 Garden's containerd (runtime v1) then fails
// every create with "cgroups: cannot find cgroup mount destination"
// (UnmountedV1). Bound here first, theirs is the same hierarchy. The box's rootfs stays the shared cached one (no
// extra packages): sdbox.sh keeps one rootfs per suite and prunes the
// others, so a rootfs of our own would evict everyone else's; iptables comes
// from the host with containerd and runc (InstallHostRuntime).
func BoxOptions() []sdbox.Option {
	return []sdbox.Option{sdbox.WithNspawnArgs("--system-call-filter=@keyring"), sdbox.WithV1Hierarchies("net_cls,net_prio")}
}

var builds struct {
	sync.Mutex
	dirs map[Variant]string
}

// Build returns the host directory with gdn, dadoo, init, nstar and gclient
// of v, built once per content by src/tests/garden/build.sh (minutes cold,
// instant from the cache). Without the pinned sources it is Unavailable.
func Build(t testing.TB, v Variant) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	if d, ok := builds.dirs[v]; ok {
		return d
	}
	root, err := sdbox.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "..", "shared", "sources", "SHA256SUMS")); err != nil {
		testkit.Unavailable(t, "the pinned guardian sources (../shared/sources) are not beside the repository: "+err.Error())
	}
	var stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "src/tests/garden/build.sh"), string(v))
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build Garden %s: %v\n%s", v, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := lines[len(lines)-1]
	t.Logf("Garden %s: %s (%s)", v, dir, time.Since(start).Round(time.Millisecond))
	if builds.dirs == nil {
		builds.dirs = map[Variant]string{}
	}
	builds.dirs[v] = dir
	return dir
}

// RuntimeBinaries are what Build of OnV2 puts in its runtime/ directory.
var RuntimeBinaries = []string{"runc", "containerd", "containerd-shim-runc-v2", "ctr"}

// Binaries are what Build puts in its directory for every variant.
var Binaries = []string{"gdn", "dadoo", "init", "nstar", "gclient"}

// Garden is a running gdn (and its containerd) in a box.
type Garden struct {
	Box     *sdbox.Box
	Variant Variant
	Shape   Shape
}

// Start installs Garden v into box (which was booted with BoxOptions) and
// starts it in shape's unit, then waits until it answers ping. The test's
// cleanup kills every container's processes (an escaped container's init
// outlives the box's SIGTERM otherwise) and prints Garden's log on failure.
func Start(t testing.TB, box *sdbox.Box, v Variant, shape Shape) *Garden {
	t.Helper()
	dir := Build(t, v)
	if v == SeedEra {
		requireV1Mounted(t, box)
	}
	g := &Garden{Box: box, Variant: v, Shape: shape}
	for _, b := range Binaries {
		if err := box.CopyIn(filepath.Join(dir, b), BinDir+"/"+b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	InstallHostRuntime(t, box, RuntimeDir)
	g.prepareBox(t)
	g.writeJob(t)
	box.Run(t, "systemctl", "daemon-reload")
	t.Cleanup(func() {
		if t.Failed() {
			g.dumpLogs(t)
		}
		g.killContainers()
	})
	box.Run(t, "systemctl", "start", shape.Unit)
	g.waitPing(t)
	return g
}

// Restart starts Garden's unit again after gdn died (as monit's restart of
// garden_ctl would) and waits until it answers ping: containerd, when it
// still answers, is kept (garden_start).
func (g *Garden) Restart(t testing.TB) {
	t.Helper()
	g.Box.Run(t, "systemctl", "reset-failed", g.Shape.Unit)
	g.Box.Run(t, "systemctl", "start", g.Shape.Unit)
	g.waitPing(t)
}

func (g *Garden) waitPing(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := g.client(context.Background(), time.Minute, "ping")
		if err == nil && res.Error == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Garden %s did not answer ping within 90s: %+v %v", g.Variant, res, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// prepareBox makes what gdn needs of the box (../shared/garden/README.md):
// a /proc/cgroups without the controllers the host never mounted, a default
// route and an external IP, and a raw rootfs owned by container root.
func (g *Garden) prepareBox(t testing.TB) {
	t.Helper()
	box := g.Box
	// perf_event and hugetlb are enabled in the kernel but mounted nowhere;
	// gdn setup would mkdir them in the read-only /sys/fs/cgroup. Mounting
	// them here would create host-wide hierarchies. net_cls and net_prio are
	// mounted (BoxOptions) but masked too: gdn setup stays as measured in
	// docs/garden.md, and runc finds them by mountinfo all the same.
	box.Run(t, "sh", "-c", `awk 'BEGIN{OFS="\t"} $1 ~ /^(net_cls|net_prio|perf_event|hugetlb)$/ {$4=0} {print}' /proc/cgroups > /run/garden-proc-cgroups && mount --bind /run/garden-proc-cgroups /proc/cgroups`)
	box.Run(t, "sh", "-c", "ip link add garden-ext type veth peer name garden-peer && ip addr add "+externalIP+"/24 dev garden-ext && ip link set garden-peer up && ip link set garden-ext up && ip route add default via "+gateway)
	if err := box.CopyIn("/bin/busybox", Rootfs+"/bin/busybox", 0o755); err != nil {
		t.Fatalf("busybox-static: %v", err)
	}
	if err := box.WriteFile(Rootfs+"/etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := box.WriteFile(Rootfs+"/etc/group", []byte("root:x:0:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	box.Run(t, "sh", "-c", "cd "+Rootfs+" && mkdir -p dev proc sys tmp root && for c in sh sleep cat echo; do ln -sf busybox bin/$c; done && chown -R "+ContainerRootUID+":"+ContainerRootUID+" "+Rootfs)
}

func (g *Garden) writeJob(t testing.TB) {
	t.Helper()
	files := JobFiles(Job{
		RuntimeBin:      RuntimeDir + "/bin",
		IPTables:        RuntimeDir + "/bin/iptables",
		IPTablesRestore: RuntimeDir + "/bin/iptables-restore",
		Path:            sdbox.ExecPath,
	}, g.Shape)
	for _, f := range files {
		if err := g.Box.WriteFile(f.Path, []byte(f.Data), f.Mode); err != nil {
			t.Fatal(err)
		}
	}
}

// Job is where a machine keeps what Garden's job runs, and how gdn is
// asked to run beyond the flags every test gives it.
type Job struct {
	RuntimeBin                string   // containerd, ctr, its shims and runc
	IPTables, IPTablesRestore string   // gdn's --iptables-bin and --iptables-restore-bin
	Path                      string   // PATH after RuntimeBin
	SetupArgs, ServerArgs     []string // more flags of gdn setup and gdn server
}

// File is one file of Garden's job.
type File struct {
	Path, Data string
	Mode       os.FileMode
}

// JobFiles are the files of Garden's job as j lays it out: containerd's
// config, garden_start (containerd, gdn setup, gdn server, in the unit that
// runs it) and shape's unit, which runs garden_start.
func JobFiles(j Job, shape Shape) []File {
	server := []string{BinDir + "/gdn", "server",
		"--bind-ip", "127.0.0.1", "--bind-port", "7777", "--skip-setup", "--log-level", "debug",
		"--depot", Depot, "--properties-path", "/var/vcap/data/garden/props.json",
		"--port-pool-properties-path", "/var/vcap/data/garden/port-pool-props.json",
		"--runtime-plugin", j.RuntimeBin + "/runc", "--containerd-socket", Socket,
		"--init-bin", BinDir + "/init", "--dadoo-bin", BinDir + "/dadoo", "--nstar-bin", BinDir + "/nstar",
		"--tar-bin", "/bin/tar", "--iptables-bin", j.IPTables, "--iptables-restore-bin", j.IPTablesRestore,
		"--no-image-plugin", "--default-rootfs", Rootfs, "--network-pool", networkPool, "--external-ip", externalIP,
		"--uid-map-start", "1", "--uid-map-length", "4294967293", "--gid-map-start", "1", "--gid-map-length", "4294967293"}
	server = append(server, j.ServerArgs...)
	setup := strings.Join(append([]string{BinDir + "/gdn", "setup"}, j.SetupArgs...), " ")
	return []File{
		{JobDir + "/config/containerd.toml", `version = 2
root = "/var/vcap/data/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "` + Socket + `"
`, 0o644},
		{JobDir + "/bin/garden_start", `#!/bin/sh
# Garden's start: containerd in the background unless one already answers
# (gdn killed and started again: its containerd and tasks live on, as on a
# cell, whose garden_start keeps a running containerd), then gdn setup and
# gdn server, all in the unit that runs this script.
set -e
export PATH=` + j.RuntimeBin + `:` + j.Path + `
mkdir -p ` + LogDir + ` ` + Depot + ` $(dirname ` + Socket + `)
up() { ctr --address ` + Socket + ` --connect-timeout 1s version >/dev/null 2>&1; }
if ! up; then
  containerd --config ` + JobDir + `/config/containerd.toml >>` + LogDir + `/containerd.log 2>&1 &
  i=0
  until up; do
    i=$((i+1)); [ $i -le 300 ] || { echo "containerd did not answer on its socket" >&2; exit 1; }
    sleep 0.1
  done
fi
` + setup + ` >>` + LogDir + `/gdn-setup.log 2>&1
exec ` + strings.Join(server, " ") + ` >>` + LogDir + `/garden.stdout.log 2>>` + LogDir + `/garden.stderr.log
`, 0o755},
		{"/etc/systemd/system/" + shape.Unit, "[Service]\nExecStart=" + JobDir + "/bin/garden_start\n" + shape.Service, 0o644},
	}
}

// runtimeLibs are the host libraries runc and containerd load: the loader,
// glibc and libseccomp (runc).
var runtimeLibs = []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libseccomp.so.2"}

// hostLibs are the host libraries the runtime's binaries load: runtimeLibs,
// and libxtables, libmnl and libnftnl (iptables).
var hostLibs = append(append([]string{}, runtimeLibs...),
	"/lib/x86_64-linux-gnu/libxtables.so.12", "/lib/x86_64-linux-gnu/libmnl.so.0", "/lib/x86_64-linux-gnu/libnftnl.so.11")

// xtablesDir is where Debian's iptables keeps its extensions.
const xtablesDir = "/usr/lib/x86_64-linux-gnu/xtables"

// InstallHostRuntime copies the host's containerd, its shims (v1 for the
// 2020 Garden, runc v1/v2 for today's), ctr, runc and iptables into dir/bin
// of the box with the host's loader and libraries in dir/lib, patched to
// load those: Debian 12's binaries need glibc 2.34, and xenial has 2.23.
// iptables and iptables-restore are wrappers that point iptables at its
// extensions (dir/xtables) and call xtables-nft-multi by those names.
func InstallHostRuntime(t testing.TB, box *sdbox.Box, dir string) {
	t.Helper()
	patchelf, err := exec.LookPath("patchelf")
	if err != nil {
		testkit.Unavailable(t, "patchelf not installed on the host (ci/scripts/install-deps.sh)")
	}
	for _, l := range hostLibs {
		real, err := filepath.EvalSymlinks(l)
		if err != nil {
			testkit.Unavailable(t, fmt.Sprintf("host library %s (ci/scripts/install-deps.sh: containerd, runc, iptables): %v", l, err))
		}
		if err := box.CopyIn(real, dir+"/lib/"+filepath.Base(l), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exts, err := os.ReadDir(xtablesDir)
	if err != nil {
		testkit.Unavailable(t, "iptables' extensions (ci/scripts/install-deps.sh: iptables): "+err.Error())
	}
	for _, e := range exts {
		if err := box.CopyIn(filepath.Join(xtablesDir, e.Name()), dir+"/xtables/"+e.Name(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	for _, b := range []string{"runc", "containerd", "containerd-shim", "containerd-shim-runc-v1", "containerd-shim-runc-v2", "ctr", "xtables-nft-multi"} {
		src, err := exec.LookPath(b)
		if err != nil {
			testkit.Unavailable(t, b+" not installed on the host (ci/scripts/install-deps.sh: containerd, runc, iptables)")
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(tmp, b)
		if err := patchedCopy(patchelf, data, dst, dir); err != nil {
			t.Fatal(err)
		}
		if err := box.CopyIn(dst, dir+"/bin/"+b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"iptables", "iptables-restore"} {
		// xtables-nft-multi picks its command from argv[0]'s base name
		box.Run(t, "sh", "-c", "mkdir -p "+dir+"/xtables-bin && ln -sf ../bin/xtables-nft-multi "+dir+"/xtables-bin/"+name)
		wrapper := "#!/bin/sh\nXTABLES_LIBDIR=" + dir + "/xtables exec " + dir + "/xtables-bin/" + name + " \"$@\"\n"
		if err := box.WriteFile(dir+"/bin/"+name, []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// patchedCopy writes a host binary's data to dst, patched to load its
// loader and libraries from dir/lib (where they are at run time).
func patchedCopy(patchelf string, data []byte, dst, dir string) error {
	if err := testkit.NoForks(func() error { return os.WriteFile(dst, data, 0o755) }); err != nil {
		return err
	}
	// DT_RPATH, not RUNPATH: it also serves the libraries iptables'
	// extensions need when they are dlopen'ed
	if out, err := exec.Command(patchelf, "--set-interpreter", dir+"/lib/ld-linux-x86-64.so.2", "--force-rpath", "--set-rpath", dir+"/lib", dst).CombinedOutput(); err != nil {
		return fmt.Errorf("patchelf %s: %w\n%s", filepath.Base(dst), err, out)
	}
	return nil
}

// stagedRuntime are the host's binaries StageHostRuntime lays out: what runc
// and containerd mode need (containerd, the runc v2 shim, ctr, runc), and
// containerd's v1 shim, which the 2020-01 Garden's containerd client asks for
// (the fleet's garden-seed job on xenial).
var stagedRuntime = []string{"runc", "containerd", "containerd-shim-runc-v2", "containerd-shim", "ctr"}

// StageHostRuntime lays the host's runc, containerd, its runc v2 and v1
// shims and ctr out on the host in stage (bin/, and lib/ with the host's loader, glibc
// and libseccomp), patched to load them from dir: for a machine that sees
// stage at dir (a VM with it bind-mounted), whose own runtime is too old or
// missing (xenial). An error names what is missing on the host; nothing is
// written outside stage.
func StageHostRuntime(stage, dir string) error {
	patchelf, err := exec.LookPath("patchelf")
	if err != nil {
		return fmt.Errorf("patchelf not installed on the host (ci/scripts/install-deps.sh): %w", err)
	}
	for _, d := range []string{"bin", "lib"} {
		if err := os.MkdirAll(filepath.Join(stage, d), 0o755); err != nil {
			return err
		}
	}
	for _, l := range runtimeLibs {
		real, err := filepath.EvalSymlinks(l)
		if err != nil {
			return fmt.Errorf("host library %s (ci/scripts/install-deps.sh: containerd, runc): %w", l, err)
		}
		data, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		if err := testkit.NoForks(func() error { return os.WriteFile(filepath.Join(stage, "lib", filepath.Base(l)), data, 0o755) }); err != nil {
			return err
		}
	}
	for _, b := range stagedRuntime {
		src, err := exec.LookPath(b)
		if err != nil {
			return fmt.Errorf("%s not installed on the host (ci/scripts/install-deps.sh: containerd, runc): %w", b, err)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := patchedCopy(patchelf, data, filepath.Join(stage, "bin", b), dir); err != nil {
			return err
		}
	}
	return nil
}

// Result is what gclient prints for one operation.
type Result struct {
	Op        string   `json:"op"`
	Handle    string   `json:"handle"`
	Seconds   float64  `json:"seconds"`
	Error     string   `json:"error"`
	Handles   []string `json:"handles"`
	ProcessID string   `json:"process_id"`
	ExitCode  *int     `json:"exit_code"`
	Stdout    string   `json:"stdout"`
	Stderr    string   `json:"stderr"`
}

// client runs gclient in the box, bounded by d. A Garden error is in
// Result.Error; err is for a client that could not run or answer.
func (g *Garden) client(ctx context.Context, d time.Duration, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	argv := append([]string{BinDir + "/gclient", args[0], "-addr", Addr}, args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd := g.Box.Command(ctx, argv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, fmt.Errorf("gclient %s: %v (decode %q: %v) %s", args[0], runErr, stdout.String(), err, stderr.String())
	}
	return res, nil
}

func (g *Garden) must(t testing.TB, d time.Duration, args ...string) Result {
	t.Helper()
	res, err := g.client(context.Background(), d, args...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != "" {
		t.Fatalf("Garden %s %s: %s", args[0], res.Handle, res.Error)
	}
	return res
}

// Create makes an unprivileged container from the raw rootfs.
func (g *Garden) Create(t testing.TB, handle string) Result {
	t.Helper()
	return g.must(t, time.Minute, "create", "-handle", handle, "-rootfs", Rootfs)
}

// Run starts argv in the container and returns once Garden has started it.
func (g *Garden) Run(t testing.TB, handle string, argv ...string) Result {
	t.Helper()
	return g.must(t, time.Minute, append([]string{"run", "-handle", handle, "--"}, argv...)...)
}

// RunWait runs argv in the container to its end.
func (g *Garden) RunWait(t testing.TB, handle string, argv ...string) Result {
	t.Helper()
	return g.must(t, time.Minute, append([]string{"run", "-wait", "-handle", handle, "--"}, argv...)...)
}

// List returns the handles Garden knows.
func (g *Garden) List(t testing.TB) []string {
	t.Helper()
	return g.must(t, time.Minute, "list").Handles
}

// Destroy asks Garden to destroy the container and returns its answer,
// also when Garden failed (Result.Error holds Garden's own text). It waits
// up to bound for Garden to answer.
func (g *Garden) Destroy(t testing.TB, handle string, bound time.Duration) Result {
	t.Helper()
	res, err := g.client(context.Background(), bound, "destroy", "-handle", handle)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Container is what containerd's runc recorded for one of Garden's
// containers (ShimRoot/<handle>/state.json), and its processes now.
type Container struct {
	Handle      string
	InitPID     int               // in the box's pid numbering
	CgroupPaths map[string]string // controller -> cgroup directory
	PIDs        []int             // every process in the container's pid namespace
}

// Inspect reads the container's state as runc recorded it and finds its
// processes by pid namespace (processes Garden runs are dadoo's children,
// not init's).
func (g *Garden) Inspect(t testing.TB, handle string) Container {
	t.Helper()
	b, err := g.Box.ReadFile(ShimRoot + "/" + handle + "/state.json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Pid   int               `json:"init_process_pid"`
		Paths map[string]string `json:"cgroup_paths"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Pid <= 0 {
		t.Fatalf("decode %s/%s/state.json: pid %d, %v", ShimRoot, handle, st.Pid, err)
	}
	c := Container{Handle: handle, InitPID: st.Pid, CgroupPaths: st.Paths}
	c.PIDs = g.pidsInNamespaceOf(st.Pid)
	if len(c.PIDs) == 0 {
		t.Fatalf("container %s: init %d is gone", handle, st.Pid)
	}
	return c
}

func (g *Garden) pidsInNamespaceOf(pid int) []int {
	proc := filepath.Join(g.Box.Root, "proc")
	want, err := os.Readlink(filepath.Join(proc, strconv.Itoa(pid), "ns", "pid"))
	if err != nil {
		return nil
	}
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink(filepath.Join(proc, e.Name(), "ns", "pid")); err == nil && ns == want {
			pids = append(pids, p)
		}
	}
	return pids
}

// killContainers SIGKILLs the init of every container containerd's runc
// knows, which ends each pid namespace: after an escape nothing else would,
// and an init ignores the SIGTERM of the box's shutdown.
func (g *Garden) killContainers() {
	ents, err := os.ReadDir(filepath.Join(g.Box.Root, strings.TrimPrefix(ShimRoot, "/")))
	if err != nil {
		return
	}
	for _, e := range ents {
		b, err := g.Box.ReadFile(ShimRoot + "/" + e.Name() + "/state.json")
		if err != nil {
			continue
		}
		var st struct {
			Pid int `json:"init_process_pid"`
		}
		if json.Unmarshal(b, &st) == nil && st.Pid > 0 {
			g.Box.Exec(context.Background(), "kill", "-9", strconv.Itoa(st.Pid)) //nolint:errcheck // gone already is fine
		}
	}
}

// Log returns gdn's log (lager JSON lines) so far.
func (g *Garden) Log(t testing.TB) string {
	t.Helper()
	b, err := g.Box.ReadFile(LogDir + "/garden.stdout.log")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// WaitLog waits up to within for a line of gdn's log whose message
// contains msg and whose data names handle, and returns it.
func (g *Garden) WaitLog(t testing.TB, msg, handle string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, line := range strings.Split(g.Log(t), "\n") {
			var l struct {
				Message string `json:"message"`
				Data    struct {
					Handle string `json:"handle"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && strings.Contains(l.Message, msg) && l.Data.Handle == handle {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q for %s in gdn's log within %s", msg, handle, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (g *Garden) dumpLogs(t testing.TB) {
	for _, f := range []string{"gdn-setup.log", "garden.stderr.log", "containerd.log", "garden.stdout.log"} {
		b, err := g.Box.ReadFile(LogDir + "/" + f)
		if err != nil {
			continue
		}
		s := string(b)
		if len(s) > 8000 {
			s = "..." + s[len(s)-8000:]
		}
		t.Logf("%s:\n%s", f, s)
	}
	if missing, err := unmountedInBox(g.Box); err != nil || len(missing) > 0 {
		// a hierarchy made since the box's boot fails every create (UnmountedV1)
		t.Logf("v1 controllers the box lists but has mounted nowhere: %v %v", missing, err)
	}
	if out, err := g.Box.Output("journalctl", "-u", g.Shape.Unit, "--no-pager", "-n", "50"); err == nil {
		t.Logf("journal of %s:\n%s", g.Shape.Unit, out)
	}
}

// MainPID is the main process of Garden's unit (gdn server, which the start
// script execs), in the box's pid numbering.
func (g *Garden) MainPID(t testing.TB) int {
	t.Helper()
	out := strings.TrimSpace(g.Box.Run(t, "systemctl", "show", "-p", "MainPID", g.Shape.Unit))
	pid, err := strconv.Atoi(strings.TrimPrefix(out, "MainPID="))
	if err != nil || pid <= 0 {
		t.Fatalf("%s: %q", g.Shape.Unit, out)
	}
	return pid
}

// Alive returns those of pids (in the box's numbering) that exist and are
// not zombies (a zombie's reaper may be slow; it is dead).
func Alive(box *sdbox.Box, pids []int) []int {
	var alive []int
	for _, p := range pids {
		b, err := box.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		if st, err := procfs.ParseStat(b); err == nil && st.State == 'Z' {
			continue
		}
		alive = append(alive, p)
	}
	return alive
}

// WaitGone waits up to d for pids to die and returns those still alive.
func WaitGone(box *sdbox.Box, pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		alive := Alive(box, pids)
		if len(alive) == 0 || !time.Now().Before(deadline) {
			return alive
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SecondsRange formats durations in seconds (a churn's creates, destroys)
// as "min-max", "none" for none.
func SecondsRange(v []float64) string {
	if len(v) == 0 {
		return "none"
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.2f-%.2f", lo, hi)
}
