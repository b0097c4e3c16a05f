package qemu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// Garden in the VM: guardian c2d9348 (garden.OnV2) with the runc and
// containerd its go.mod pins, laid out as garden-runc-release's job lays it
// out, in containerd mode: cf-deployment's default since v6.2.0
// (garden-runc-release's operator's manual, "Containerd or Runc?").
const (
	gardenRuntime = garden.RuntimeDir + "/bin"
	gardenRoot    = garden.ShimRoot // runc's root for containers and peas alike (guardiancmd computeRuncRoot)
)

// gardenVM is Garden running in the noble VM.
type gardenVM struct {
	g   *guest
	job garden.Job
}

// startGarden copies Garden of build dir into the VM, writes its job and
// starts it as garden_ctl does: garden.service (Delegate=yes,
// KillMode=none, TasksMax=infinity) installed, `systemctl daemon-reload`,
// `systemctl start` (garden-runc-release jobs/garden/templates/garden_ctl
// since v1.18.0, quoted in issue 37).
func startGarden(g *guest, dir string, setupArgs, serverArgs []string) *gardenVM {
	g.t.Helper()
	for _, b := range garden.Binaries {
		if err := g.vm.CopyIn(g.t.Context(), filepath.Join(dir, b), garden.BinDir+"/"+b, 0o755); err != nil {
			g.t.Fatal(err)
		}
	}
	for _, b := range garden.RuntimeBinaries {
		if err := g.vm.CopyIn(g.t.Context(), filepath.Join(dir, "runtime", b), gardenRuntime+"/"+b, 0o755); err != nil {
			g.t.Fatal(err)
		}
	}
	// The VM has no network (-nic none): Garden needs a default route and
	// an external IP, as in the boxes (testkit/garden prepareBox).
	g.sh(`ip link add garden-ext type veth peer name garden-peer && ip addr add 10.252.0.2/24 dev garden-ext &&
ip link set garden-peer up && ip link set garden-ext up && ip route add default via 10.252.0.1`)
	g.sh(fmt.Sprintf(`mkdir -p %[1]s/bin %[1]s/etc %[1]s/dev %[1]s/proc %[1]s/sys %[1]s/tmp %[1]s/root
cp /bin/busybox %[1]s/bin/busybox
for c in sh sleep cat echo; do ln -sf busybox %[1]s/bin/$c; done
echo 'root:x:0:0:root:/root:/bin/sh' > %[1]s/etc/passwd; echo 'root:x:0:' > %[1]s/etc/group
chown -R %[2]s:%[2]s %[1]s`, garden.Rootfs, garden.ContainerRootUID))
	gv := &gardenVM{g: g, job: garden.Job{
		RuntimeBin: gardenRuntime, IPTables: "/usr/sbin/iptables", IPTablesRestore: "/usr/sbin/iptables-restore",
		Path:      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		SetupArgs: setupArgs, ServerArgs: serverArgs,
	}}
	gv.start()
	g.t.Cleanup(func() {
		if g.t.Failed() {
			g.t.Logf("Garden's logs:\n%s", g.vm.Run(g.t, time.Minute, "sh", "-c", "cd "+garden.LogDir+" && tail -n 30 gdn-setup.log garden.stderr.log containerd.log; grep -E '\"log_level\":[23]' garden.stdout.log | tail -n 30; journalctl -u garden.service --no-pager -n 30"))
		}
	})
	return gv
}

// start writes the job (with the current flags), then does what
// garden_ctl start does, and waits for ping.
func (gv *gardenVM) start() {
	g := gv.g
	g.t.Helper()
	for _, f := range garden.JobFiles(gv.job, garden.GardenService) {
		if err := g.vm.Put(g.t.Context(), f.Path, []byte(f.Data), f.Mode); err != nil {
			g.t.Fatal(err)
		}
	}
	g.sh("systemctl daemon-reload && systemctl start garden.service")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		res, err := gv.client(time.Minute, "ping")
		if err == nil && res.Error == "" {
			break
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("Garden did not answer ping within 3 minutes: %+v %v", res, err)
		}
		time.Sleep(time.Second)
	}
	g.t.Logf("Garden up: %s", strings.Join(strings.Fields(g.sh("systemctl show -p MainPID -p ControlGroup -p Delegate -p DelegateControllers -p KillMode garden.service")), " "))
}

// restart stops gdn (its main process, by pid: KillMode=none makes
// `systemctl stop` signal nothing) and starts it with serverArgs and
// setupArgs; containerd, which still answers, is kept, as garden_start
// keeps it.
func (gv *gardenVM) restart(setupArgs, serverArgs []string) {
	gv.g.t.Helper()
	gv.g.sh(`pid=$(systemctl show -p MainPID --value garden.service); kill $pid; while kill -0 $pid 2>/dev/null; do sleep 0.2; done; systemctl stop garden.service || true`)
	gv.job.SetupArgs, gv.job.ServerArgs = setupArgs, serverArgs
	gv.start()
}

func (gv *gardenVM) client(d time.Duration, args ...string) (garden.Result, error) {
	argv := append([]string{garden.BinDir + "/gclient", args[0], "-addr", garden.Addr}, args[1:]...)
	out, err := gv.g.vm.Output(d, argv...)
	var res garden.Result
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(out.Stdout, &res); err != nil {
		return res, fmt.Errorf("gclient %s: exit %d, decode %q: %w; %s", args[0], out.Exit, out.Stdout, err, out.Stderr)
	}
	return res, nil
}

func (gv *gardenVM) must(args ...string) garden.Result {
	gv.g.t.Helper()
	res, err := gv.client(5*time.Minute, args...) // a create took 20-45 s under TCG, minutes with watch running
	if err != nil {
		gv.g.t.Fatal(err)
	}
	if res.Error != "" {
		gv.g.t.Fatalf("Garden %s %s: %s", args[0], res.Handle, res.Error)
	}
	return res
}

// limits every test container asks for: 64 MiB, weight 100 (cpu.weight
// 4 by runc's conversion of shares), 64 pids.
var limitFlags = []string{"-memory-mb", "64", "-cpu-weight", "100", "-pids", "64"}

func (gv *gardenVM) create(handle string, privileged bool) {
	gv.g.t.Helper()
	args := append([]string{"create", "-handle", handle, "-rootfs", garden.Rootfs}, limitFlags...)
	if privileged {
		args = append(args, "-privileged")
	}
	res := gv.must(args...)
	gv.g.t.Logf("created %s (privileged %v) in %.2f s", handle, privileged, res.Seconds)
}

// run starts argv in the container; with image, as a pea.
func (gv *gardenVM) run(handle, image string, argv ...string) {
	gv.g.t.Helper()
	args := []string{"run", "-handle", handle}
	if image != "" {
		args = append(args, "-image", image)
	}
	gv.must(append(append(args, "--"), argv...)...)
}

// placement is where one container (as runc recorded it) and its
// processes are, measured in the VM.
type placement struct {
	ID, Kind    string // Kind: garden-init, garden-pea, ...
	Pid         int
	Recorded    string            // state.json cgroup_paths[""]
	Limits      map[string]any    // state.json config.cgroups: memory, swap, pids, cpu
	Annotations map[string]string // config.json's (container-type)
}

// states reads every state.json in Garden's runc root.
func (gv *gardenVM) states() []placement {
	g := gv.g
	g.t.Helper()
	ids := strings.Fields(g.sh("ls " + gardenRoot + " 2>/dev/null || true"))
	var ps []placement
	for _, id := range ids {
		raw := g.sh("cat " + gardenRoot + "/" + id + "/state.json 2>/dev/null || true")
		if raw == "" {
			continue
		}
		var st struct {
			Pid    int               `json:"init_process_pid"`
			Paths  map[string]string `json:"cgroup_paths"`
			Config struct {
				Labels  []string       `json:"labels"`
				Cgroups map[string]any `json:"cgroups"`
			} `json:"config"`
		}
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			g.t.Fatalf("state.json of %s: %v", id, err)
		}
		p := placement{ID: id, Pid: st.Pid, Recorded: st.Paths[""], Limits: map[string]any{}, Annotations: map[string]string{}}
		for _, k := range []string{"memory", "memory_swap", "pids_limit", "cpu_shares", "cpu_weight", "cpu_quota", "blkio_weight"} {
			if v, ok := st.Config.Cgroups[k]; ok && v != nil && v != float64(0) {
				p.Limits[k] = v
			}
		}
		for _, l := range st.Config.Labels {
			if k, v, ok := strings.Cut(l, "="); ok && k == "bundle" {
				cfg := g.sh("cat " + v + "/config.json 2>/dev/null || true")
				var c struct {
					Annotations map[string]string `json:"annotations"`
				}
				if json.Unmarshal([]byte(cfg), &c) == nil {
					p.Annotations = c.Annotations
				}
			}
		}
		p.Kind = p.Annotations["container-type"]
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	return ps
}

// measure logs where each container's processes are: every process in the
// init's pid namespace (a privileged container shares the host's, so its
// init alone and the processes in its recorded cgroup), its `0::` line,
// that cgroup's type, controllers and limit files, and the recorded
// cgroup. It returns "id: 0::line" per container init, for the report.
func (gv *gardenVM) measure(step string) map[string]string {
	g := gv.g
	g.t.Helper()
	where := map[string]string{}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n/ subtree_control: %s\n", step, strings.TrimSpace(g.sh("cat /sys/fs/cgroup/cgroup.subtree_control")))
	fmt.Fprintf(&b, "%s", g.sh(`cd /sys/fs/cgroup; for d in system.slice garden garden/good garden/bad; do [ -d $d ] && echo "/$d subtree_control: $(cat $d/cgroup.subtree_control) type: $(cat $d/cgroup.type) procs: $(cat $d/cgroup.procs | wc -l)"; done; true`))
	for _, p := range gv.states() {
		line := strings.TrimSpace(g.sh(fmt.Sprintf("sed -n 's/^0:://p' /proc/%d/cgroup 2>/dev/null || true", p.Pid)))
		where[p.ID] = line
		fmt.Fprintf(&b, "%s (%s) init %d at %s; recorded %s; limits recorded %v\n", p.ID, p.Kind, p.Pid, line, p.Recorded, p.Limits)
		fmt.Fprintf(&b, "%s", g.sh(fmt.Sprintf(`cg=%q; pid=%d
pidns=$(readlink /proc/$pid/ns/pid); hostns=$(readlink /proc/1/ns/pid)
[ "$pidns" = "$hostns" ] && echo "  pid namespace: the host's" || echo "  pid namespace: its own"
for d in "$cg" "$(dirname "$cg")"; do
  f=/sys/fs/cgroup$d; [ -d "$f" ] || { echo "  $d: gone"; continue; }
  line="  $d: type=$(cat $f/cgroup.type) controllers=[$(cat $f/cgroup.controllers)] subtree_control=[$(cat $f/cgroup.subtree_control)] procs=$(cat $f/cgroup.procs | wc -l)"
  for x in memory.max memory.swap.max pids.max cpu.weight cpu.max io.weight; do
    if [ -e $f/$x ]; then line="$line $x=$(head -1 $f/$x | tr ' ' _)"; else line="$line $x=ABSENT"; fi
  done
  echo "$line"
done
for q in $(cat /sys/fs/cgroup$cg/cgroup.procs 2>/dev/null); do echo "  process $q $(tr '\0' ' ' </proc/$q/cmdline | cut -c1-40): 0::$(sed -n 's/^0:://p' /proc/$q/cgroup)"; done
true`, line, p.Pid)))
	}
	fmt.Fprintf(&b, "Garden's processes by command line:\n%s", g.sh(`for q in $(pgrep -f 'sleep 1000'); do echo "  $q $(tr '\0' ' ' </proc/$q/cmdline): 0::$(sed -n 's/^0:://p' /proc/$q/cgroup)"; done; true`))
	g.t.Log(b.String())
	return where
}

// findings runs validate and returns the failing and warning findings as
// "check status subject: detail", logging every check's status.
func (gv *gardenVM) findings(step string) []string {
	g := gv.g
	g.t.Helper()
	rep, res := g.validate(guestBin)
	var got, summary []string
	for _, r := range rep.Results {
		summary = append(summary, r.ID+"="+r.Status)
		if r.Error != "" {
			got = append(got, r.ID+" error: "+r.Error)
		}
		for _, f := range r.Findings {
			if f.Status == "fail" || f.Status == "warn" {
				got = append(got, fmt.Sprintf("%s %s %s: %s", r.ID, f.Status, f.Subject, f.Detail))
			}
		}
	}
	sort.Strings(summary)
	slices.Sort(got)
	g.t.Logf("%s: validate exit %d: %s\n%s", step, res.Exit, strings.Join(summary, " "), strings.Join(got, "\n"))
	return got
}

// TestNobleGardenToday is issue 37 item 1 on a real noble VM: Garden as
// noble cells run it today (guardian c2d9348, runc v1.5.1, containerd
// v2.3.4, containerd mode, garden.service as garden_ctl writes it), with
// unprivileged and privileged containers, a process in a container, a pea,
// and then CPU throttling on. The log holds where each lands (its `0::`
// line, state.json's cgroup_paths, cgroup.type, controllers, limit files)
// and what validate says at each step.
//
// Opt-in (CELLGUARD_QEMU_GARDEN=1), not in make test: under TCG it took
// 22.6 minutes at load 2-3, 37 at load 15-60 (src/tests/qemu/README.md).
// It fails when a container lands elsewhere than measured.
func TestNobleGardenToday(t *testing.T) {
	if os.Getenv("CELLGUARD_QEMU_GARDEN") != "1" {
		t.Skip("today's Garden in a noble VM is opt-in (CELLGUARD_QEMU_GARDEN=1): 23-37 minutes under TCG")
	}
	t.Parallel()
	qemuvm.RequireImage(t)
	dir := garden.Build(t, garden.OnV2)
	t0, load0 := time.Now(), qemuvm.LoadAverage()
	g, _ := bootWithCellguard(t)
	g.root = gardenRoot
	defer func() {
		if rss, peak, err := g.vm.RSS(); err == nil {
			t.Logf("qemu RSS at the end %d MiB, peak %d MiB; total %v; load average %s at start, %s now", rss>>20, peak>>20, time.Since(t0).Round(time.Second), load0, qemuvm.LoadAverage())
		}
	}()
	g.sh("systemd-analyze log-level debug")

	t.Log("phase 1: Garden without CPU throttling")
	gv := startGarden(&g, dir, nil, nil)
	t.Logf("VM: kernel %s, %s; runc %s; containerd %s", strings.TrimSpace(g.sh("uname -r")), firstLine(g.sh("systemctl --version")),
		firstLine(g.sh(gardenRuntime+"/runc --version")), firstLine(g.sh(gardenRuntime+"/containerd --version")))
	gv.create("u1", false)
	gv.create("p1", true)
	gv.run("u1", "", "/bin/sleep", "100001")
	gv.run("p1", "", "/bin/sleep", "100002")
	gv.run("u1", garden.Rootfs, "/bin/sleep", "100003") // a pea
	where := gv.measure("phase 1: u1 unprivileged, p1 privileged, a process in each, a pea in u1")
	// As measured in runs 2 and 3, and as guardian c2d9348 lays them out
	// (cgroup_manager_linux.go; bundlerules/cgroup_path.go gives a
	// privileged container no cgroupsPath, so runc puts it beside its own).
	wantAt(t, where, "u1", "/garden/u1/init")
	wantAt(t, where, "p1", "/system.slice/p1")
	gv.findings("phase 1")

	t.Log("phase 2: Garden with CPU throttling (gdn setup and server --enable-cpu-throttling)")
	gv.restart([]string{"--enable-cpu-throttling"}, []string{"--enable-cpu-throttling", "--cpu-throttling-check-interval", "2"})
	gv.create("u2", false)
	gv.create("p2", true)
	gv.run("u2", "", "/bin/sleep", "100004")
	gv.run("u2", garden.Rootfs, "/bin/sleep", "100005") // a pea
	where = gv.measure("phase 2: throttling on, u2 unprivileged, p2 privileged, a process and a pea in u2")
	wantAt(t, where, "u2", "/garden/good/u2/init")
	gv.findings("phase 2")

	t.Log("churn: cellguard watch runs while unprivileged and privileged containers and peas come and go")
	w := g.startWatch(guestBin)
	for i := range 2 {
		u, p := fmt.Sprintf("cu%d", i), fmt.Sprintf("cp%d", i)
		gv.create(u, false)
		gv.create(p, true)
		gv.run(u, garden.Rootfs, "/bin/sleep", "100010")
		gv.run(p, garden.Rootfs, "/bin/sleep", "100011")
		gv.findings("churn " + strconv.Itoa(i) + ": created " + u + ", " + p + " and a pea in each")
		gv.must("destroy", "-handle", u)
		gv.must("destroy", "-handle", p)
	}
	time.Sleep(25 * time.Second) // a period of watch's (20 s) after the last destroy
	churnFindings := watchFindings(&g)
	t.Logf("watch over the churn: %d finding lines\n%s", len(churnFindings), strings.Join(churnFindings, "\n"))

	t.Log("phase 3: u2 burns CPU beyond its entitlement; the enforcer punishes it (garden/good -> garden/bad)")
	gv.run("u2", "", "/bin/sh", "-c", "while :; do :; done")
	t.Logf("gdn: %s", gv.waitLog(5*time.Minute, "punish.finished", `"handle":"u2"`))
	gv.measure("phase 3: u2 punished")
	gv.findings("phase 3: u2 punished")
	w.until(stripTimeout, "limits-intact on u2", func(l logLine) bool {
		return l.msg("finding") && l.Data["check"] == "limits-intact" && l.Data["subject"] == "u2"
	})

	t.Log("phase 4: systemctl daemon-reload (garden.service, Delegate=yes, loaded)")
	g.reload()
	gv.measure("phase 4: after daemon-reload")
	gv.findings("phase 4: after daemon-reload")

	t.Log("phase 4b: cellguard's delegation drop-in for garden.service (cellguard unit delegate), daemon-reload")
	t.Logf("cellguard unit delegate garden.service: %s", g.sh(guestBin+" unit delegate garden.service 2>&1; systemctl show -p Delegate -p DelegateControllers -p DropInPaths garden.service | tr '\\n' ' '"))
	g.reload()
	gv.measure("phase 4b: drop-in loaded, after daemon-reload")
	gv.findings("phase 4b: drop-in loaded, after daemon-reload")

	t.Log("phase 5: -memory into /garden's cgroup.subtree_control")
	t.Logf("echo -memory > /sys/fs/cgroup/garden/cgroup.subtree_control: %s",
		g.sh("echo -memory > /sys/fs/cgroup/garden/cgroup.subtree_control 2>&1 && echo rc 0 || true; cat /sys/fs/cgroup/garden/cgroup.subtree_control"))
	gv.measure("phase 5: after -memory on /garden")
	gv.findings("phase 5: after -memory on /garden")
	t.Logf("watch's findings over the whole test:\n%s", strings.Join(watchFindings(&g), "\n"))
	w.stop()
}

// watchFindings are the finding and finding-cleared lines of watch's log
// so far, as "message check subject: detail".
func watchFindings(g *guest) []string {
	g.t.Helper()
	var out []string
	for _, raw := range strings.Split(g.sh("cat "+watchLog), "\n") {
		var l logLine
		if json.Unmarshal([]byte(raw), &l) != nil || !(l.msg("finding") || l.msg("finding-cleared")) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %v %v: %v", l.Timestamp, l.Message, l.Data["check"], l.Data["subject"], l.Data["detail"]))
	}
	return out
}

// waitLog waits up to d for a line of gdn's log that has every one of subs.
func (gv *gardenVM) waitLog(d time.Duration, subs ...string) string {
	gv.g.t.Helper()
	pat := ""
	for _, s := range subs {
		pat += " | grep -F -e '" + s + "'"
	}
	deadline := time.Now().Add(d)
	for {
		if l := strings.TrimSpace(gv.g.sh("cat " + garden.LogDir + "/garden.stdout.log" + pat + " | head -1 || true")); l != "" {
			return l
		}
		if time.Now().After(deadline) {
			gv.g.t.Fatalf("no line with %q in gdn's log within %v", subs, d)
		}
		time.Sleep(2 * time.Second)
	}
}

// wantAt fails the test when container id's init is not at the measured
// cgroup (its `0::` line).
func wantAt(t *testing.T, where map[string]string, id, want string) {
	t.Helper()
	if got := where[id]; got != want {
		t.Errorf("%s's init is at %q, measured before at %q", id, got, want)
	}
}
