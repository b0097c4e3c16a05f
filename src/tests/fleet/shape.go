package fleet

import (
	"fmt"
	"sort"
	"strings"
)

// shape is what differs between the stemcell shapes the fleet runs on
// (src/tests/bosh/stemcell/build.sh); everything else in the test is the
// same on every shape. Each is a subtest of TestFleet (TestFleet/<name>);
// make test and make cell run all three (pick: make cell adds scenarios).
type shape struct {
	name string // build.sh's argument; the stemcell's operating_system is ubuntu-<name>
	// systemd is the stemcell's systemd; the seed-000 trigger is written for
	// it (garden.TriggerFor: before 232 the old directive names), and the
	// VM's own `systemctl --version` must say the same.
	systemd int
	// supervisor is the unit that holds monit, so Garden and its containers
	// too: the cgroup seed 000 moves them into.
	supervisor string
	// hostRuntime: the Garden stand-in runs the host's runc and containerd
	// (garden.StageHostRuntime), bound into every VM read-only at runtimeDir,
	// instead of the stemcell's: xenial's release pocket has no containerd.
	hostRuntime bool
	// qemu: the cells are QEMU VMs booting the stemcell's own kernel
	// (src/tests/bosh/cpi/qemu-cpi, the image from src/tests/qemu/stemcell.sh),
	// beside the nspawn CPI, on which the director compiles (cpi config,
	// qemuCloudConfigOps). The test's hand cannot nsenter into them, so
	// scenarios that need it (scenarioRow.box) do not run there yet; its
	// hand there is bosh ssh.
	qemu bool
}

// The ops files of a shape whose cells are QEMU VMs: the cells in an AZ of
// the QEMU CPI, compilation in one of the nspawn CPI; the addon with the
// whole sysctl profile (a real kernel takes every key).
const (
	qemuCloudConfigOps = "src/tests/fleet/manifests/qemu-cloud-config-ops.yml"
	realKernelAddonOps = "src/tests/fleet/manifests/real-kernel-addon-ops.yml"
)

var shapes = map[string]shape{
	"xenial": {name: "xenial", systemd: 229, supervisor: "runit.service", hostRuntime: true},
	"jammy":  {name: "jammy", systemd: 249, supervisor: "runit.service"},
	"noble":  {name: "noble", systemd: 255, supervisor: "monit.service", qemu: true},
}

// runtimeDir is where a hostRuntime shape's VMs see the host's runtime: not
// under /var/vcap (the agent's) nor /opt, which the agent mounts over.
const runtimeDir = "/usr/local/garden-runtime"

// shapeOrder is the order TestFleet's shape subtests start in.
var shapeOrder = []string{"xenial", "jammy", "noble"}

// shapeNamed is one shape by name ("" is jammy).
func shapeNamed(name string) (shape, error) {
	if name == "" {
		name = "jammy"
	}
	s, ok := shapes[name]
	if !ok {
		var known []string
		for n := range shapes {
			known = append(known, n)
		}
		sort.Strings(known)
		return shape{}, fmt.Errorf("%s: no such shape (%s)", name, strings.Join(known, ", "))
	}
	return s, nil
}

// runc and containerd are the binaries the stand-in runs, which the addon's
// validator.runtime_binaries name.
func (s shape) runc() string {
	if s.hostRuntime {
		return runtimeDir + "/bin/runc"
	}
	return "/usr/sbin/runc"
}

func (s shape) containerd() string {
	if s.hostRuntime {
		return runtimeDir + "/bin/containerd"
	}
	return "/usr/bin/containerd"
}

// nspawnArgs are the CPI's extra systemd-nspawn arguments for every VM:
// the staged runtime (stage on the host) bound in read-only.
func (s shape) nspawnArgs(stage string) string {
	if s.hostRuntime {
		return "--bind-ro=" + stage + ":" + runtimeDir
	}
	return ""
}

// vars are the shape's bosh-cli variables for the manifests; deployOps and
// runtimeConfigOps its ops files (relative to the repository) for the
// deployment's manifest and the addon's runtime config.
func (s shape) vars() []string {
	v := []string{"-v", "stemcell_os=ubuntu-" + s.name}
	if s.hostRuntime {
		v = append(v, "-v", "garden_runtime_dir="+runtimeDir)
	}
	return v
}

func (s shape) deployOps() []string {
	if s.hostRuntime {
		return []string{"src/tests/fleet/manifests/host-runtime-ops.yml"}
	}
	return nil
}

func (s shape) cloudConfigOps() []string {
	if s.qemu {
		return []string{qemuCloudConfigOps}
	}
	return nil
}

func (s shape) runtimeConfigOps() []string {
	switch {
	case s.hostRuntime:
		return []string{"src/tests/fleet/manifests/host-runtime-addon-ops.yml"}
	case s.qemu:
		return []string{realKernelAddonOps}
	}
	return nil
}
