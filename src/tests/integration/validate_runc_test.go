package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// The container's cgroup, below the daemon's own unit as Garden's cgroupfs
// driver makes it when it runs under a unit (the seed-000 layout).
const (
	runcRoot   = "/run/runc"
	bundle     = "/var/lib/c1"
	unitCgroup = "/system.slice/garden.service"
	ctrCgroup  = unitCgroup + "/garden/c1"
)

// installRunc puts the host's Debian runc and a static busybox rootfs into
// the box and writes a bundle whose container sleeps in ctrCgroup.
func installRunc(t *testing.T, box *sdbox.Box) {
	t.Helper()
	installBundle(t, box, bundle, ctrCgroup)
}

// installBundle writes a busybox bundle at dir whose container sleeps in
// cgroup cg, and installs runc when it is not there yet.
func installBundle(t *testing.T, box *sdbox.Box, dir, cg string) {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc not installed on the host (apt-get install runc): %v", err)
	}
	if _, err := box.ReadFile("/usr/local/sbin/runc"); err != nil {
		if err := box.CopyIn(runc, "/usr/local/sbin/runc", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := box.CopyIn("/bin/busybox", dir+"/rootfs/bin/busybox", 0o755); err != nil {
		t.Fatalf("busybox-static: %v", err)
	}
	box.Run(t, "ln", "-s", "busybox", dir+"/rootfs/bin/sh")
	box.Run(t, "ln", "-s", "busybox", dir+"/rootfs/bin/sleep")
	box.Run(t, "runc", "spec", "--bundle", dir)
	b, err := box.ReadFile(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	proc := spec["process"].(map[string]any)
	proc["args"] = []string{"sleep", "100000"}
	proc["terminal"] = false
	spec["linux"].(map[string]any)["cgroupsPath"] = cg
	if b, err = json.MarshalIndent(spec, "", "  "); err != nil {
		t.Fatal(err)
	}
	writeFile(t, box, dir+"/config.json", string(b), 0o644)
}

// startGarden runs the container from a plain (non-delegated) unit, as a
// monit-started Garden ends up: `runc run -d`, then the daemon lives on.
// --no-new-keyring: nspawn's seccomp filter refuses new session keyrings.
func startGarden(t *testing.T, box *sdbox.Box) int {
	t.Helper()
	writeFile(t, box, "/etc/systemd/system/garden.service", fmt.Sprintf(
		"[Service]\nExecStart=/bin/sh -c 'runc --root %s run -d --no-new-keyring --bundle %s c1 </dev/null >/run/c1.log 2>&1; exec sleep infinity'\n",
		runcRoot, bundle), 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "garden.service")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := box.ReadFile(runcRoot + "/c1/state.json")
		if err == nil {
			var st struct {
				Pid int `json:"init_process_pid"`
			}
			if err := json.Unmarshal(b, &st); err == nil && st.Pid > 0 {
				return st.Pid
			}
		}
		if time.Now().After(deadline) {
			log, _ := box.ReadFile("/run/c1.log")
			t.Fatalf("runc did not start c1: %s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// validation is one `cellguard validate` run inside the box.
type validation struct {
	code   int
	stdout string
	stderr string
	report struct {
		Blocked bool `json:"blocked"`
		Results []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Findings []struct {
				Status string            `json:"status"`
				Detail string            `json:"detail"`
				Data   map[string]string `json:"data"`
			} `json:"findings"`
		} `json:"results"`
	}
}

// problems returns the findings of check id that are not passes.
func (v *validation) problems(t *testing.T, id string) []map[string]string {
	t.Helper()
	for _, r := range v.report.Results {
		if r.ID != id {
			continue
		}
		var out []map[string]string
		for _, f := range r.Findings {
			if f.Status == "fail" || f.Status == "warn" {
				d := f.Data
				d["status"], d["detail"] = f.Status, f.Detail
				out = append(out, d)
			}
		}
		return out
	}
	t.Fatalf("no %s result in %s", id, v.stdout+v.stderr)
	return nil
}

// validate runs cellguard validate in the box with only this slice's checks
// deciding (the box has a runc with advisories, no sysctl profile and a
// non-delegated unit: other checks' findings, tested elsewhere).
func validate(t *testing.T, box *sdbox.Box, cellguard string, args ...string) *validation {
	t.Helper()
	return validateWith(t, box, cellguard, "{}", args...)
}

// validateWith is validate with a config file's content.
func validateWith(t *testing.T, box *sdbox.Box, cellguard, config string, args ...string) *validation {
	t.Helper()
	return validateKeeping(t, box, cellguard, config, []string{"cgroup-integrity", "runtime-ghosts", "stuck-runc-init"}, args...)
}

// validateKeeping is validateWith running only the checks in keep.
func validateKeeping(t *testing.T, box *sdbox.Box, cellguard, config string, keep []string, args ...string) *validation {
	t.Helper()
	var others []string
	for _, id := range checks.IDs() {
		if !slices.Contains(keep, id) {
			others = append(others, id)
		}
	}
	writeFile(t, box, "/etc/cellguard-test.json", config, 0o644)
	argv := append([]string{cellguard, "validate", "--config", "/etc/cellguard-test.json",
		"--log-file", "/var/log/cellguard.log", "--runtime-root", runcRoot, "--format", "json",
		"--ignore", strings.Join(others, ",")}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := box.Command(ctx, argv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	v := &validation{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		v.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", argv, err)
	}
	js := v.stdout
	if strings.Contains(strings.Join(args, " "), "drain") {
		js = v.stderr // drain: the report goes to stderr, stdout is BOSH's
	}
	if err := json.Unmarshal([]byte(js), &v.report); err != nil {
		t.Fatalf("exit %d, no JSON report: %v\nstdout:\n%s\nstderr:\n%s", v.code, err, v.stdout, v.stderr)
	}
	return v
}

// TestValidateRealRunc: Debian's runc runs a busybox container with the
// cgroupfs driver under a plain unit; a brand-new unit with CPU and IO
// accounting makes systemd move the container's cpu and blkio back into the
// unit (seed-000). The validator passes before, names the escape after,
// --fix moves the process back without killing it, and the host passes again.
//
// On cgroup v2 systemd moves nothing (FINDINGS), so the unified case moves
// the process into its unit's cgroup by hand, as a buggy runtime or an
// operator's echo would; runc needs bpf(2) there for its device filter,
// which nspawn's default seccomp filter refuses.
func TestValidateRealRunc(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Hybrid, cgroup.Legacy, cgroup.Unified} {
		t.Run(mode.String(), func(t *testing.T) {
			box := bootRuncBox(t, "validate-runc-"+mode.String(), mode)
			cellguard := box.InstallCellguard(t)
			installRunc(t, box)
			pid := startGarden(t, box)
			removeContainersAtEnd(t, box, "c1")
			// The kernel lists the host's hierarchies too; keep the ones the
			// box mounts: no v2 in legacy, only v2 in unified.
			cgroupsOf := func(pid int) (map[string]string, error) {
				m, err := box.ReadCgroup(pid)
				for k := range m {
					if (mode == cgroup.Legacy && k == "") || (mode == cgroup.Unified && k != "") {
						delete(m, k)
					}
				}
				return m, err
			}
			before, err := cgroupsOf(pid)
			if err != nil {
				t.Fatal(err)
			}
			for h, p := range before {
				if p != ctrCgroup {
					t.Fatalf("runc put c1's init in %s:%s, want %s", h, p, ctrCgroup)
				}
			}

			v := validate(t, box, cellguard, "--phase", "drain")
			if v.code != 0 || v.stdout != "0\n" || len(v.problems(t, "cgroup-integrity")) != 0 {
				t.Fatalf("clean host: exit %d, stdout %q, problems %v", v.code, v.stdout, v.problems(t, "cgroup-integrity"))
			}

			if mode == cgroup.Unified {
				box.Run(t, "sh", "-c", fmt.Sprintf("echo %d > /sys/fs/cgroup%s/cgroup.procs", pid, unitCgroup))
			} else {
				startTrigger(t, box)
			}
			after, err := cgroupsOf(pid)
			if err != nil {
				t.Fatal(err)
			}
			moved := map[string]bool{} // by the validator's hierarchy names
			for h, p := range after {
				if p != ctrCgroup {
					if h == "" {
						h = "unified"
					}
					moved[h] = true
				}
			}
			switch {
			case mode == cgroup.Unified && !moved["unified"]:
				t.Fatalf("the move did not take (cgroups now %v)", after)
			case mode != cgroup.Unified && (!moved["cpu"] && !moved["cpu,cpuacct"] || !moved["blkio"]):
				t.Fatalf("the trigger did not reproduce seed-000 (cgroups now %v)", after)
			}

			v = validate(t, box, cellguard, "--phase", "drain")
			if v.code != 1 || v.stdout != "" || !v.report.Blocked {
				t.Fatalf("escape: exit %d, stdout %q, blocked %v\n%s", v.code, v.stdout, v.report.Blocked, v.stderr)
			}
			found := map[string]bool{}
			for _, f := range v.problems(t, "cgroup-integrity") {
				if f["pid"] != fmt.Sprint(pid) || f["container"] != "c1" || f["expected"] != ctrCgroup || f["actual"] != unitCgroup {
					t.Errorf("finding %v", f)
				}
				found[f["hierarchy"]] = true
				t.Logf("named: %s", f["detail"])
			}
			for h := range moved {
				if !found[h] {
					t.Errorf("escape in %s not reported (reported %v)", h, found)
				}
			}
			if len(found) != len(moved) {
				t.Errorf("reported %v, moved %v", found, moved)
			}

			v = validate(t, box, cellguard, "--phase", "pre-start", "--fix")
			if v.code != 0 {
				t.Fatalf("--fix: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
			fixed := v.problems(t, "cgroup-integrity")
			if len(fixed) != len(moved) {
				t.Fatalf("--fix reported %v", fixed)
			}
			for _, f := range fixed {
				if f["status"] != "warn" || f["fixed"] != "true" {
					t.Errorf("fix finding %v", f)
				}
				t.Logf("--fix: %s", f["detail"])
			}
			now, err := cgroupsOf(pid)
			if err != nil {
				t.Fatalf("the container process is gone after --fix: %v", err)
			}
			for h, p := range now {
				if p != ctrCgroup {
					t.Errorf("after --fix pid %d is in %s:%s", pid, h, p)
				}
			}

			v = validate(t, box, cellguard, "--phase", "drain")
			if v.code != 0 || v.stdout != "0\n" || len(v.problems(t, "cgroup-integrity")) != 0 {
				t.Fatalf("after --fix: exit %d, problems %v", v.code, v.problems(t, "cgroup-integrity"))
			}
		})
	}
}

// bootBoxMode is bootBox with a cgroup layout and options.
func bootBoxMode(t *testing.T, name string, mode cgroup.Mode, opts ...sdbox.Option) *sdbox.Box {
	t.Helper()
	if os.Getenv(sdbox.SkipEnv) == "1" {
		t.Skipf("!!! NOT RUN: %s=1 (pure tests only) !!!", sdbox.SkipEnv)
	}
	sdbox.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	box, err := sdbox.Start(ctx, name, append([]sdbox.Option{sdbox.WithCgroupMode(mode)}, opts...)...)
	if err != nil {
		t.Fatalf("boot systemd container %s (%s): %v", name, mode, err)
	}
	t.Cleanup(func() {
		if err := box.Stop(); err != nil {
			t.Errorf("stop container %s: %v", name, err)
		}
	})
	return box
}

// bootRuncBox boots a box of mode for runc containers: on a unified host
// runc needs bpf(2) for its device filter, which nspawn's default seccomp
// filter refuses.
func bootRuncBox(t *testing.T, name string, mode cgroup.Mode) *sdbox.Box {
	t.Helper()
	var opts []sdbox.Option
	if mode == cgroup.Unified {
		opts = append(opts, sdbox.WithNspawnArgs("--system-call-filter=bpf", "--capability=CAP_BPF"))
	}
	return bootBoxMode(t, name, mode, opts...)
}

// removeContainersAtEnd deletes the test's runc containers before the box
// stops: a container's init is pid 1 of its namespace and ignores the
// SIGTERM systemd sends at shutdown, which would stall the box's stop.
func removeContainersAtEnd(t *testing.T, box *sdbox.Box, ids ...string) {
	t.Cleanup(func() {
		for _, id := range ids {
			if out, err := box.Output("runc", "--root", runcRoot, "delete", "--force", id); err != nil {
				t.Logf("runc delete %s: %v\n%s", id, err, out)
			}
		}
	})
}

// runcStatus is `runc state`'s status of id.
func runcStatus(t *testing.T, box *sdbox.Box, id string) string {
	t.Helper()
	var st struct {
		Status string `json:"status"`
	}
	out := box.Run(t, "runc", "--root", runcRoot, "state", id)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("runc state %s: %v\n%s", id, err, out)
	}
	return st.Status
}

// TestValidateRealRuncLifecycleLeftovers: what real runc leaves behind is
// reported, and looking at it changes nothing. A `runc create` never started
// keeps its runc init waiting on exec.fifo: stuck-runc-init names it (limit
// 1s here) and the container is still "created" afterwards, because the
// validator never opens a FIFO. An init killed behind runc's back leaves a
// ghost state; a process in the runtime's garden/ cgroup that no state
// claims is an orphan. None of them block.
func TestValidateRealRuncLifecycleLeftovers(t *testing.T) {
	box := bootBoxMode(t, "validate-leftovers", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	installBundle(t, box, "/var/lib/waiting", unitCgroup+"/garden/waiting")
	installBundle(t, box, "/var/lib/ghost", unitCgroup+"/garden/ghost")
	removeContainersAtEnd(t, box, "waiting", "ghost")
	t.Cleanup(func() { box.Output("sh", "-c", "kill -KILL $(cat /run/leaked.pid)") })

	box.Run(t, "sh", "-c", "runc --root "+runcRoot+" create --no-new-keyring --bundle /var/lib/waiting waiting </dev/null >/dev/null 2>&1")
	box.Run(t, "sh", "-c", "runc --root "+runcRoot+" run -d --no-new-keyring --bundle /var/lib/ghost ghost </dev/null >/dev/null 2>&1")
	b, err := box.ReadFile(runcRoot + "/ghost/state.json")
	if err != nil {
		t.Fatal(err)
	}
	var ghost struct {
		Pid int `json:"init_process_pid"`
	}
	if err := json.Unmarshal(b, &ghost); err != nil || ghost.Pid <= 0 {
		t.Fatalf("ghost state: %v %s", err, b)
	}
	// Kill the container's init behind runc's back (a pid this test started).
	box.Run(t, "kill", "-KILL", fmt.Sprint(ghost.Pid))
	// A leaked process in the runtime's cgroup subtree, no state for it.
	box.Run(t, "sh", "-c", "mkdir -p /sys/fs/cgroup/memory"+unitCgroup+"/garden/leaked && "+
		"(sleep 100000 </dev/null >/dev/null 2>&1 & echo $! > /run/leaked.pid; echo $! > /sys/fs/cgroup/memory"+unitCgroup+"/garden/leaked/cgroup.procs)")
	time.Sleep(1500 * time.Millisecond) // past the 1s runc init limit

	v := validateWith(t, box, cellguard, `{"validator":{"runc_init_max_age":"1s"}}`, "--phase", "drain")
	if v.code != 0 || v.stdout != "0\n" {
		t.Fatalf("leftovers warn, never block: exit %d stdout %q\n%s", v.code, v.stdout, v.stderr)
	}
	kinds := map[string]map[string]string{}
	for _, id := range []string{"stuck-runc-init", "runtime-ghosts"} {
		for _, f := range v.problems(t, id) {
			kinds[f["kind"]] = f
			t.Logf("%s: %s", id, f["detail"])
		}
	}
	if f := kinds["stuck-init"]; f == nil || f["container"] != "waiting" {
		t.Errorf("stuck runc init of \"waiting\" not named: %v", kinds)
	}
	if f := kinds["init-gone"]; f == nil || f["container"] != "ghost" {
		t.Errorf("ghost state not reported: %v", kinds)
	}
	if f := kinds["orphan"]; f == nil || f["cgroup"] != unitCgroup+"/garden/leaked" || f["comm"] != "sleep" {
		t.Errorf("orphan not reported: %v", kinds)
	}
	if len(v.problems(t, "cgroup-integrity")) != 0 {
		t.Errorf("integrity problems: %v", v.problems(t, "cgroup-integrity"))
	}
	if st := runcStatus(t, box, "waiting"); st != "created" {
		t.Fatalf("after validate the waiting container is %q: the validator started it", st)
	}
}
