package checks

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Docker's and crun's roots are scanned by default (no RuntimeRoots), each
// runtime is reported by name and root, and a crun container (one cgroup
// path for every hierarchy) is checked like runc's.
func TestRuntimesScannedByDefault(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(fakehost.Container{RuntimeRoot: runcstate.DockerRoot, ID: "d1", Cgroup: "/docker/d1"}, 100, 2, 500)
			h.RunContainer(fakehost.Container{RuntimeRoot: runcstate.CrunRoot, ID: "p1", Cgroup: "/machine.slice/crun-p1.scope", Crun: true}, 200, 3, 600)
			fs := run(t, deps(h), "cgroup-integrity")
			if bad := failures(fs); len(bad) != 0 {
				t.Fatalf("clean host: %+v", bad)
			}
			found := map[string]string{}
			for _, f := range fs {
				if f.Data["kind"] == KindRuntime {
					found[f.Data["runtime"]] = f.Data["root"] + " " + f.Data["containers"]
				}
			}
			if found["docker"] != runcstate.DockerRoot+" 1" || found["crun"] != runcstate.CrunRoot+" 1" || len(found) != 2 {
				t.Fatalf("runtimes reported: %v", found)
			}
			if last := fs[len(fs)-1]; last.Data["containers"] != "2" || last.Data["processes"] != "5" {
				t.Fatalf("summary %+v", last)
			}

			// The crun container's second process escapes in one hierarchy.
			hier := "memory"
			if mode == cgroup.Unified {
				hier = ""
			}
			h.Move(201, hier, "/system.slice/podman.service")
			bad := failures(run(t, deps(h), "cgroup-integrity"))
			if len(bad) != 1 || bad[0].Data["runtime"] != "crun" || bad[0].Data["pid"] != "201" ||
				bad[0].Data["expected"] != "/machine.slice/crun-p1.scope" || bad[0].Data["actual"] != "/system.slice/podman.service" {
				t.Fatalf("crun escape: %+v", bad)
			}
		})
	}
}

// No runtime root and no container: a host whose processes all share the
// host's pid namespace runs no container yet (a Garden cell before its
// first container) and passes, saying where cellguard looked; a process in
// another pid namespace is a container nobody said where to find, and
// warns, naming it.
func TestNothingToCheckWarnsOnlyWhenContainersRunUnseen(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.Add(fakehost.Proc{PID: 50, Comm: "gdn", Cgroup: "/system.slice/garden.service"})
	d := deps(h)
	d.RuntimeRoots = []string{"/run/runc", "/var/vcap/sys/run/bpm-runc"}
	fs := run(t, d, "cgroup-integrity")
	if bad := failures(fs); len(bad) != 0 {
		t.Fatalf("no container yet: %+v", bad)
	}
	var none *validator.Finding
	for i := range fs {
		if fs[i].Data["kind"] == "no-containers" {
			none = &fs[i]
		}
	}
	if none == nil || none.Status != validator.Pass || !strings.Contains(none.Detail, "looked in /run/runc, /var/vcap/sys/run/bpm-runc") {
		t.Fatalf("no container yet: want a pass naming where it looked, got %+v", fs)
	}

	// A container whose runtime keeps its state elsewhere.
	h.Add(fakehost.Proc{PID: 70, PPID: 60, Comm: "sleep", NS: 4026532999, Cgroup: "/garden/c1"})
	h.Add(fakehost.Proc{PID: 71, PPID: 70, Comm: "sh", NS: 4026532999, Cgroup: "/garden/c1"})
	bad := failures(run(t, d, "cgroup-integrity"))
	if len(bad) != 1 || bad[0].Status != validator.Warn || bad[0].Data["kind"] != "nothing-to-check" ||
		!strings.Contains(bad[0].Detail, "looked in /run/runc, /var/vcap/sys/run/bpm-runc") ||
		!strings.Contains(bad[0].Detail, "2 processes run in a pid namespace other than the host's (pid 70 (sleep), pid 71 (sh))") ||
		bad[0].Data["processes_in_other_pid_namespaces"] != "2" {
		t.Fatalf("containers unseen: %+v", bad)
	}
	// A root that exists, even empty, is something checked.
	h.Mkdir("run/runc")
	if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 0 {
		t.Fatalf("an empty runtime root: %+v", bad)
	}
}

// Co-mounted cpu,cpuacct recorded under either name, through the cpu or
// cpuacct symlink systemd makes beside the mount (or under its own name, as
// opencontainers/cgroups' fs driver records it: fs/paths.go subsysPath joins
// the mount's base name), is checked in the one hierarchy.
func TestCoMountedCPURecordedUnderEitherName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths map[string]string
	}{
		{"cpu key through the cpu link", map[string]string{"cpu": "/sys/fs/cgroup/cpu/garden/c1"}},
		{"cpuacct key through the cpuacct link", map[string]string{"cpuacct": "/sys/fs/cgroup/cpuacct/garden/c1"}},
		{"cpuacct key at the mount's own name", map[string]string{"cpuacct": "/sys/fs/cgroup/cpu,cpuacct/garden/c1"}},
		{"both keys through their links", map[string]string{"cpu": "/sys/fs/cgroup/cpu/garden/c1", "cpuacct": "/sys/fs/cgroup/cpuacct/garden/c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakehost.New(t, cgroup.Hybrid)
			path := h.State(garden("c1"))
			h.RunContainer(garden("c1"), 100, 2, 500)
			rewriteCgroupPaths(t, path, tc.paths)
			if bad := failures(run(t, deps(h), "cgroup-integrity")); len(bad) != 0 {
				t.Fatalf("in place: %+v", bad)
			}
			h.Move(101, "cpu,cpuacct", "/system.slice/garden.service")
			bad := failures(run(t, deps(h), "cgroup-integrity"))
			if len(bad) != 1 || bad[0].Data["hierarchy"] != "cpu,cpuacct" || bad[0].Data["pid"] != "101" {
				t.Fatalf("escape in cpu,cpuacct: %+v", bad)
			}
		})
	}
}

// rewriteCgroupPaths replaces a state file's cgroup_paths.
func rewriteCgroupPaths(t *testing.T, path string, paths map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st["cgroup_paths"] = paths
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// kubePod is a container as containerd's CRI plugin makes it with
// kubelet's systemd cgroup driver: a scope in the pod's slice.
func kubePod(qos, pod, id string) fakehost.Container {
	slice := "/kubepods.slice/kubepods-" + qos + ".slice/kubepods-" + qos + "-pod" + pod + ".slice"
	return fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "k8s.io", ID: id,
		Cgroup: slice + "/cri-containerd-" + id + ".scope"}
}

// Kubernetes with the systemd cgroup driver: a process left in a container
// scope of a pod whose other containers still run is found by default (the
// pod's slice holds only that pod's scopes); a pod left with no state at
// all is found under the explicit slice root /kubepods.slice; a scope under
// system.slice (Docker's systemd driver) never makes system.slice a root.
func TestRuntimeGhostsKubepodsSlices(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(kubePod("burstable", "0a1b", "sandbox1"), 100, 1, 500)
			h.RunContainer(kubePod("burstable", "0a1b", "app1"), 110, 2, 510)
			h.RunContainer(fakehost.Container{RuntimeRoot: runcstate.DockerRoot, ID: "d1", Cgroup: "/system.slice/docker-d1.scope"}, 200, 1, 520)
			h.Add(fakehost.Proc{PID: 50, Comm: "containerd", Cgroup: "/system.slice/containerd.service"})
			// The state of app2 is gone, its process stayed in its scope.
			h.Add(fakehost.Proc{PID: 300, Comm: "java", Cgroup: kubePod("burstable", "0a1b", "app2").Cgroup})
			// A whole pod whose states are gone.
			h.Add(fakehost.Proc{PID: 400, Comm: "nginx", Cgroup: kubePod("besteffort", "9f8e", "web").Cgroup})

			orphans := func(d testDeps) map[string]string {
				out := map[string]string{}
				for _, f := range failures(run(t, d, "runtime-ghosts")) {
					if f.Data["kind"] == "orphan" {
						out[f.Data["pid"]] = f.Data["cgroup"]
					}
				}
				return out
			}
			got := orphans(deps(h))
			if len(got) != 1 || got["300"] != kubePod("burstable", "0a1b", "app2").Cgroup {
				t.Fatalf("default roots: %v", got)
			}
			d := deps(h)
			d.ExtraCgroupRoots = []string{"/kubepods.slice"}
			got = orphans(d)
			if len(got) != 2 || got["400"] != kubePod("besteffort", "9f8e", "web").Cgroup {
				t.Fatalf("with the slice root: %v", got)
			}
		})
	}
}

func TestPodSlice(t *testing.T) {
	for name, want := range map[string]bool{
		"kubepods-burstable-pod0a1b_2c3d.slice":  true,
		"kubepods-besteffort-pod9f8e.slice":      true,
		"kubepods-pod77.slice":                   true,
		"kubepods-burstable.slice":               false,
		"kubepods.slice":                         false,
		"system.slice":                           false,
		"kubepods-burstable-pod.slice":           false,
		"cri-containerd-0a1b.scope":              false,
		"kubepods-burstable-pod0a1b.slice.extra": false,
	} {
		if podSlice(name) != want {
			t.Errorf("podSlice(%q) = %v", name, !want)
		}
	}
}

// seed 002: after an out-of-band restart the container's init is gone and
// its other processes run on in its cgroup; the ghost finding names them,
// since nothing that trusts the state will stop them.
func TestRuntimeGhostNamesWhatRemains(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "concourse", ID: "b1", Cgroup: "/concourse/b1"}, 100, 3, 500)
			h.Kill(100)
			bad := failures(run(t, deps(h), "runtime-ghosts"))
			if len(bad) != 1 || bad[0].Data["kind"] != "init-gone" || bad[0].Data["remaining_pids"] != "101 (app) 102 (app)" ||
				!strings.Contains(bad[0].Detail, "2 processes still in its cgroup: 101 (app), 102 (app)") {
				t.Fatalf("got %+v", bad)
			}
		})
	}
}
