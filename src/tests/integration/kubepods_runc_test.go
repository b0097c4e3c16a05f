package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// TestKubepodsSystemdDriverOrphans: Debian's runc with the systemd cgroup
// driver makes a container scope in a pod's slice, as kubelet's systemd
// driver has containerd do (cri-containerd-<id>.scope in
// kubepods-burstable-pod<uid>.slice). A process left in another scope of
// that pod with no state is found by default; one in a pod with no state
// left at all is found once /kubepods.slice is named in extra_cgroup_slices.
func TestKubepodsSystemdDriverOrphans(t *testing.T) {
	box := bootBoxMode(t, "kubepods", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	const pod = "kubepods-burstable-pod0a1b.slice"
	installBundle(t, box, "/var/lib/k1", pod+":cri-containerd:k1")
	removeContainersAtEnd(t, box, "k1")
	box.Run(t, "sh", "-c", "runc --systemd-cgroup --root "+runcRoot+" run -d --no-new-keyring --bundle /var/lib/k1 k1 </dev/null >/run/k1.log 2>&1 || { cat /run/k1.log; exit 1; }")
	paths := runcCgroupPaths(t, box, runcRoot, "k1")
	scope := "/kubepods.slice/kubepods-burstable.slice/" + pod + "/cri-containerd-k1.scope"
	if paths["memory"] != "/sys/fs/cgroup/memory"+scope {
		t.Fatalf("runc's systemd driver put k1 in %v, want the scope %s", paths, scope)
	}
	// Leftovers: a process in a scope of the same pod, and one in a pod
	// whose every state is gone (MemoryAccounting as runc sets on its
	// scopes, so systemd realizes them in the memory hierarchy).
	for _, o := range []struct{ slice, unit string }{{pod, "cri-containerd-gone"}, {"kubepods-besteffort-pod9f8e.slice", "cri-containerd-web"}} {
		box.Run(t, "systemd-run", "--scope", "--unit="+o.unit, "--slice="+o.slice, "-p", "MemoryAccounting=yes",
			"--", "sh", "-c", "exec sleep 100000 </dev/null >/dev/null 2>&1 &")
	}
	t.Cleanup(func() {
		box.Output("systemctl", "kill", "--signal=KILL", "cri-containerd-gone.scope", "cri-containerd-web.scope")
	})
	time.Sleep(300 * time.Millisecond)

	orphans := func(cfg string) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, f := range validateWith(t, box, cellguard, cfg, "--phase", "pre-start").problems(t, "runtime-ghosts") {
			if f["kind"] == "orphan" {
				out[f["cgroup"]] = f["pid"]
				t.Logf("orphan: %s", f["detail"])
			}
		}
		return out
	}
	gone := "/kubepods.slice/kubepods-burstable.slice/" + pod + "/cri-containerd-gone.scope"
	web := "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9f8e.slice/cri-containerd-web.scope"
	got := orphans("{}")
	if len(got) != 1 || got[gone] == "" {
		t.Fatalf("default roots: orphans %v, want one in %s", got, gone)
	}
	got = orphans(`{"validator":{"extra_cgroup_slices":["/kubepods.slice"]}}`)
	if len(got) != 2 || got[web] == "" {
		t.Fatalf("with /kubepods.slice: orphans %v, want %s too", got, web)
	}
	if ps := box.Run(t, "sh", "-c", fmt.Sprintf("cat /sys/fs/cgroup/memory%s/cgroup.procs", scope)); strings.TrimSpace(ps) == "" {
		t.Fatal("k1's scope is empty: the container is not running")
	}
}
