package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// The seed's symptom itself, not only its cause: on xenial's systemd 229 a
// brand-new unit re-migrates a non-delegated unit's whole subtree in every
// controller, devices included (measured: src/tests/harness/seed000-matrix.sh;
// systemd 237, 249 and 252 never move devices there). runc 1.1 lists a
// container's processes for `kill --all` in the devices cgroup it recorded,
// so afterwards it kills nothing, and containerd's task delete --force
// (kill --all, then wait for the exit) never returns: the container cannot be
// destroyed. The stemcell layout: a supervisor unit in system.slice with no
// Delegate (as runit.service) runs the Garden stand-in of src/tests/bosh, which
// makes r1 with runc and d1 through containerd's runc shim, both in garden/<id>
// below its own cgroups.

const (
	symptomRuntime = "/opt/hostrt" // the host's runc and containerd (garden.InstallHostRuntime)
	symptomRunc    = symptomRuntime + "/bin/runc"
	symptomCtr     = symptomRuntime + "/bin/ctr"
	standinRuncDir = "/run/garden-runc" // garden-standin's runc --root
	standinSock    = "/var/vcap/sys/run/containerd/containerd.sock"
	deleteBound    = 20 * time.Second // ctr task delete --force gets this long
)

func TestSeed000SymptomXenial(t *testing.T) {
	t.Run("without protection: kill --all kills nothing, delete --force does not return", func(t *testing.T) {
		box, sup := bootSymptomBox(t, "seed-xenial-without")
		r1, d1 := standinContainers(t, box)
		garden.FireSeed000Trigger(t, box)
		for _, p := range r1 {
			if cur := cgroupOf(t, box, p, "devices"); cur == runcDevicesCgroup(t, box, "r1") {
				t.Fatalf("r1 pid %d is still in its recorded devices cgroup %s: systemd %s did not move it, nothing to show", p, cur, box.Run(t, "systemctl", "--version"))
			}
		}
		t.Logf("r1 devices cgroup after the trigger: %s (runc recorded %s); supervisor %d", cgroupOf(t, box, r1[0], "devices"), runcDevicesCgroup(t, box, "r1"), sup)

		box.Run(t, symptomRunc, "--root", standinRuncDir, "kill", "--all", "r1", "KILL")
		if alive := garden.WaitGone(box, r1, 5*time.Second); len(alive) != len(r1) {
			t.Fatalf("runc kill --all r1 KILL killed something (alive: %v of %v): the symptom did not show", alive, r1)
		}
		returned, out := deleteTask(t, box, "d1")
		if returned {
			t.Fatalf("ctr task delete --force d1 returned within %s: %s", deleteBound, out)
		}
		if alive := garden.WaitGone(box, d1, 0); len(alive) != len(d1) {
			t.Fatalf("d1's processes partly died (alive %v of %v)", alive, d1)
		}
		t.Logf("runc kill --all left r1 %v alive; ctr task delete --force d1 did not return in %s, d1 %v alive", r1, deleteBound, d1)
	})

	t.Run("with protect-supervisor: destroyed cleanly", func(t *testing.T) {
		box, sup := bootSymptomBox(t, "seed-xenial-with")
		cellguard := box.InstallCellguard(t)
		r1, d1 := standinContainers(t, box)
		out := box.Run(t, cellguard, "unit", "protect-supervisor", "--pid", strconv.Itoa(sup))
		t.Logf("protect-supervisor: %s", out)
		if got := strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "Delegate", "supervisor.service")); got != "Delegate=yes" {
			t.Fatalf("after protect-supervisor systemd reports %s", got)
		}
		recorded := runcDevicesCgroup(t, box, "r1")
		garden.FireSeed000Trigger(t, box)
		for _, p := range r1 {
			if cur := cgroupOf(t, box, p, "devices"); cur != recorded {
				t.Fatalf("r1 pid %d moved to devices %s (recorded %s) although the supervisor is protected", p, cur, recorded)
			}
		}
		box.Run(t, symptomRunc, "--root", standinRuncDir, "kill", "--all", "r1", "KILL")
		if alive := garden.WaitGone(box, r1, 10*time.Second); len(alive) != 0 {
			t.Fatalf("runc kill --all r1 KILL left %v alive", alive)
		}
		returned, out := deleteTask(t, box, "d1")
		if !returned {
			t.Fatalf("ctr task delete --force d1 did not return within %s", deleteBound)
		}
		if alive := garden.WaitGone(box, d1, 10*time.Second); len(alive) != 0 {
			t.Fatalf("ctr task delete --force d1 returned (%s) but left %v alive", out, alive)
		}
		box.Run(t, symptomRunc, "--root", standinRuncDir, "delete", "r1")
	})
}

// bootSymptomBox boots xenial (systemd 229 runs only in the legacy layout
// under this host's nspawn) and starts the stand-in under supervisor.service;
// it returns the supervisor's pid inside the box.
func bootSymptomBox(t *testing.T, name string) (*sdbox.Box, int) {
	t.Helper()
	sdbox.RequireSuite(t, "xenial")
	// runc joins a new session keyring, which nspawn's seccomp filter refuses
	box := bootBoxMode(t, name, cgroup.Legacy, sdbox.WithSuite("xenial"),
		sdbox.WithNspawnArgs("--system-call-filter=@keyring"), sdbox.WithBootTimeout(180*time.Second))
	garden.InstallHostRuntime(t, box, symptomRuntime)
	root, err := sdbox.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	standin := filepath.Join(root, "src/tests/bosh/test-release/src/garden-standin")
	if err := box.CopyIn(filepath.Join(standin, "garden-standin"), "/var/vcap/packages/garden-standin/bin/garden-standin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := box.CopyIn(filepath.Join(standin, "container-config.json"), "/var/vcap/packages/garden-standin/container-config.json", 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, box, "/var/vcap/jobs/garden/config/containerd.toml", `version = 2
root = "/var/vcap/data/containerd/root"
state = "/var/vcap/sys/run/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "`+standinSock+`"
`, 0o644)
	box.Run(t, "mkdir", "-p", "/var/vcap/sys/log/garden")
	writeFile(t, box, "/etc/systemd/system/supervisor.service", `# a stemcell's runit.service as systemd sees it: no Delegate
[Service]
Environment=PATH=`+symptomRuntime+`/bin:/usr/sbin:/usr/bin:/sbin:/bin GARDEN_RUNC=`+symptomRunc+`
ExecStart=/var/vcap/packages/garden-standin/bin/garden-standin
KillMode=process
`, 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "supervisor.service")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := box.ReadFile("/var/vcap/sys/run/garden/ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			out, _ := box.Output("journalctl", "-u", "supervisor.service", "--no-pager")
			t.Fatalf("the Garden stand-in did not get ready:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "MainPID", "supervisor.service")), "MainPID="))
	if err != nil || pid <= 0 {
		t.Fatalf("supervisor.service MainPID: %v", err)
	}
	return box, pid
}

// standinContainers returns the processes (pids in the box) of r1 and d1:
// each container's init and its child.
func standinContainers(t *testing.T, box *sdbox.Box) (r1, d1 []int) {
	t.Helper()
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(box.Run(t, symptomRunc, "--root", standinRuncDir, "state", "r1")), &st); err != nil || st.Pid <= 0 {
		t.Fatalf("runc state r1: %v", err)
	}
	r1 = withChildren(t, box, st.Pid)
	for _, line := range strings.Split(box.Run(t, symptomCtr, "--address", standinSock, "--namespace", "garden", "task", "ls"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "d1" {
			p, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("ctr task ls: %q", line)
			}
			d1 = withChildren(t, box, p)
		}
	}
	if len(r1) != 2 || len(d1) != 2 {
		t.Fatalf("want each container's init and its child: r1 %v, d1 %v", r1, d1)
	}
	// Before the box stops (cleanups run last-in first-out): a container's
	// init ignores the SIGTERM of the box's shutdown, and without protection
	// nothing else ends them.
	t.Cleanup(func() {
		args := []string{"kill", "-9"}
		for _, p := range append(append([]int{}, r1...), d1...) {
			args = append(args, strconv.Itoa(p))
		}
		_, _ = box.Output(args...) // those already gone make kill fail; the rest die
	})
	return r1, d1
}

func withChildren(t *testing.T, box *sdbox.Box, pid int) []int {
	t.Helper()
	pids := []int{pid}
	for _, f := range strings.Fields(box.Run(t, "sh", "-c", "cat /proc/"+strconv.Itoa(pid)+"/task/*/children")) {
		c, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, c)
	}
	return pids
}

// runcCgroupPaths is what runc recorded in root/id/state.json: controller
// -> cgroup directory, as the box sees it.
func runcCgroupPaths(t *testing.T, box *sdbox.Box, root, id string) map[string]string {
	t.Helper()
	b, err := box.ReadFile(root + "/" + id + "/state.json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Paths map[string]string `json:"cgroup_paths"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("runc state %s/%s: %v", root, id, err)
	}
	return st.Paths
}

// runcDevicesCgroup is the devices cgroup the stand-in's runc recorded for id.
func runcDevicesCgroup(t *testing.T, box *sdbox.Box, id string) string {
	t.Helper()
	paths := runcCgroupPaths(t, box, standinRuncDir, id)
	p, ok := paths["devices"]
	if !ok {
		t.Fatalf("runc recorded no devices cgroup for %s: %v", id, paths)
	}
	return strings.TrimPrefix(p, "/sys/fs/cgroup/devices")
}

// cgroupOf is pid's path in the v1 hierarchy holding controller c.
func cgroupOf(t *testing.T, box *sdbox.Box, pid int, c string) string {
	t.Helper()
	for h, p := range cgroups(t, box, pid) {
		if strings.Contains(","+h+",", ","+c+",") {
			return p
		}
	}
	t.Fatalf("pid %d has no %s cgroup", pid, c)
	return ""
}

// deleteTask runs Garden's destroy, `ctr task delete --force`, bounded by
// deleteBound (timeout(1) ends the client; the shim keeps waiting until the
// box stops). It reports whether the command returned in time.
func deleteTask(t *testing.T, box *sdbox.Box, id string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deleteBound+30*time.Second)
	defer cancel()
	out, err := box.Command(ctx, "timeout", strconv.Itoa(int(deleteBound.Seconds())), symptomCtr,
		"--address", standinSock, "--namespace", "garden", "task", "delete", "--force", id).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 124 {
		return false, string(out)
	}
	if err != nil {
		t.Fatalf("ctr task delete --force %s: %v\n%s", id, err, out)
	}
	return true, string(out)
}
