package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShapes: jammy is the default and keeps what the fleet always ran
// (the stemcell's runtime, no extra VM arguments or ops files); xenial
// binds the host's runtime in; an unknown shape is an error.
func TestShapes(t *testing.T) {
	jammy, err := shapeNamed("")
	if err != nil || jammy.name != "jammy" || jammy.runc() != "/usr/sbin/runc" || jammy.containerd() != "/usr/bin/containerd" ||
		jammy.nspawnArgs("/w/rt") != "" || len(jammy.deployOps()) != 0 || len(jammy.runtimeConfigOps()) != 0 ||
		strings.Join(jammy.vars(), " ") != "-v stemcell_os=ubuntu-jammy" {
		t.Errorf("default shape = %+v, %v", jammy, err)
	}
	noble, err := shapeNamed("noble")
	if err != nil || noble.supervisor != "monit.service" || noble.hostRuntime || noble.systemd != 255 {
		t.Errorf("noble = %+v, %v", noble, err)
	}
	xenial, err := shapeNamed("xenial")
	if err != nil || xenial.systemd != 229 || xenial.runc() != runtimeDir+"/bin/runc" || xenial.containerd() != runtimeDir+"/bin/containerd" ||
		xenial.nspawnArgs("/w/rt") != "--bind-ro=/w/rt:"+runtimeDir || len(xenial.deployOps()) != 1 || len(xenial.runtimeConfigOps()) != 1 ||
		!strings.Contains(strings.Join(xenial.vars(), " "), "garden_runtime_dir="+runtimeDir) {
		t.Errorf("xenial = %+v, %v", xenial, err)
	}
	// noble's cells are QEMU VMs on the stemcell's own kernel: the whole
	// sysctl profile (no key removed), compilation on an nspawn VM.
	if !noble.qemu || jammy.qemu || xenial.qemu || strings.Join(noble.runtimeConfigOps(), " ") != realKernelAddonOps ||
		strings.Join(noble.cloudConfigOps(), " ") != qemuCloudConfigOps || len(jammy.cloudConfigOps()) != 0 || len(xenial.cloudConfigOps()) != 0 {
		t.Errorf("QEMU VMs: noble %t (addon ops %v, cloud config ops %v), jammy %t, xenial %t",
			noble.qemu, noble.runtimeConfigOps(), noble.cloudConfigOps(), jammy.qemu, xenial.qemu)
	}
	for _, ops := range []string{realKernelAddonOps, qemuCloudConfigOps} {
		if _, err := os.Stat(filepath.Join(repoRoot(), ops)); err != nil {
			t.Errorf("ops file: %v", err)
		}
	}
	if len(shapeOrder) != len(shapes) {
		t.Errorf("shapeOrder %v of %d shapes", shapeOrder, len(shapes))
	}
	if _, err := shapeNamed("focal"); err == nil || !strings.Contains(err.Error(), "jammy, noble, xenial") {
		t.Errorf("shapeNamed(focal) = %v; want an error naming the shapes", err)
	}
}

func TestSystemdCgroup(t *testing.T) {
	for in, want := range map[string]string{
		"12:pids:/system.slice/runit.service\n1:name=systemd:/system.slice/runit.service\n0::/system.slice/runit.service\n": "/system.slice/runit.service",
		"13:name=systemd:/system.slice/monit.service\n":                                                                     "/system.slice/monit.service",
		"0::/init.scope\n": "?",
	} {
		if got := systemdCgroup(in); got != want {
			t.Errorf("systemdCgroup(%q) = %q, want %q", in, got, want)
		}
	}
}
