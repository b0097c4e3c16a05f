package integration

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// TestValidateRealRuncHostPidNSEscape: a runc container without a pid
// namespace of its own (as privileged tooling and Garden's peas, which join
// another's by path, run) whose init's child is moved out of every cgroup.
// runc signals only cgroup members of such a container, so the child
// survives `runc kill --all` (measured on a noble VM, issue 37); the
// validator must name it. Before cellguard looked at the host's pid
// namespace for owners, cgroup-integrity said "1 container processes
// checked" and nothing else.
func TestValidateRealRuncHostPidNSEscape(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Unified, cgroup.Hybrid} {
		t.Run(mode.String(), func(t *testing.T) {
			box := bootRuncBox(t, "hostpidns-"+mode.String(), mode)
			cellguard := box.InstallCellguard(t)
			const dir, id, cg = "/var/lib/p1", "p1", "/garden/p1"
			installBundle(t, box, dir, cg)
			sharePidNS(t, box, dir)
			removeContainersAtEnd(t, box, id)
			box.Run(t, "sh", "-c", fmt.Sprintf("runc --root %s run -d --no-new-keyring --bundle %s %s </dev/null >/run/%s.log 2>&1",
				runcRoot, dir, id, id))
			init := initPid(t, box, id)
			child := childOf(t, box, init)
			// The child is this test's: end it by pid whatever runc does.
			t.Cleanup(func() { box.Output("kill", "-KILL", strconv.Itoa(child)) })

			v := validate(t, box, cellguard, "--phase", "pre-start")
			if p := v.problems(t, "cgroup-integrity"); len(p) != 0 {
				t.Fatalf("before the move: %v", p)
			}
			moveOutEverywhere(t, box, child, mode)
			v = validate(t, box, cellguard, "--phase", "pre-start")
			named := false
			for _, f := range v.problems(t, "cgroup-integrity") {
				t.Logf("named: %s", f["detail"])
				if f["pid"] == strconv.Itoa(child) && f["container"] == id && f["expected"] == cg {
					named = true
				}
			}
			if !named {
				t.Fatalf("the host-pid-namespace container's escapee %d was not named: exit %d\n%s", child, v.code, v.stdout)
			}
		})
	}
}

// sharePidNS makes the bundle's container run in the box's pid namespace,
// its init a shell that forks a child and waits.
func sharePidNS(t *testing.T, box *sdbox.Box, dir string) {
	t.Helper()
	b, err := box.ReadFile(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	spec["process"].(map[string]any)["args"] = []string{"sh", "-c", "sleep 100000 & wait"}
	linux := spec["linux"].(map[string]any)
	var kept []any
	for _, ns := range linux["namespaces"].([]any) {
		if ns.(map[string]any)["type"] != "pid" {
			kept = append(kept, ns)
		}
	}
	linux["namespaces"] = kept
	if b, err = json.MarshalIndent(spec, "", "  "); err != nil {
		t.Fatal(err)
	}
	writeFile(t, box, dir+"/config.json", string(b), 0o644)
}

// initPid is the container's init pid as runc recorded it.
func initPid(t *testing.T, box *sdbox.Box, id string) int {
	t.Helper()
	b, err := box.ReadFile(runcRoot + "/" + id + "/state.json")
	if err != nil {
		log, _ := box.ReadFile("/run/" + id + ".log")
		t.Fatalf("runc did not start %s: %v\n%s", id, err, log)
	}
	var st struct {
		Pid int `json:"init_process_pid"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Pid <= 0 {
		t.Fatalf("state of %s: %v %s", id, err, b)
	}
	return st.Pid
}

// childOf waits for the one child of pid (the shell's sleep).
func childOf(t *testing.T, box *sdbox.Box, pid int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := box.Output("pgrep", "-P", strconv.Itoa(pid))
		if f := strings.Fields(string(out)); len(f) == 1 {
			n, err := strconv.Atoi(f[0])
			if err == nil {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single child of %d: %q", pid, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// moveOutEverywhere moves pid into /escape in every hierarchy the box
// mounts: out of all its container's cgroups, so no cgroup.procs of the
// container lists it.
func moveOutEverywhere(t *testing.T, box *sdbox.Box, pid int, mode cgroup.Mode) {
	t.Helper()
	script := fmt.Sprintf(`for d in /sys/fs/cgroup/*/; do
  [ -L "${d%%/}" ] && continue
  [ -f "$d/cgroup.procs" ] || continue
  mkdir -p "$d/escape"
  # a new cpuset cgroup has no cpus or mems until given its parent's
  [ -f "$d/cpuset.cpus" ] && cat "$d/cpuset.cpus" > "$d/escape/cpuset.cpus" && cat "$d/cpuset.mems" > "$d/escape/cpuset.mems"
  echo %d > "$d/escape/cgroup.procs"
done`, pid)
	if mode == cgroup.Unified {
		script = fmt.Sprintf("mkdir -p /sys/fs/cgroup/escape && echo %d > /sys/fs/cgroup/escape/cgroup.procs", pid)
	}
	box.Run(t, "sh", "-c", script)
	got, err := box.ReadCgroup(pid)
	if err != nil {
		t.Fatal(err)
	}
	for h, p := range got {
		if strings.HasPrefix(p, "/garden/") {
			t.Fatalf("still in its container's cgroup in %q: %v", h, got)
		}
	}
}
