// Package qemu boots the noble VM (Ubuntu's kernel, cgroup v2; image.sh,
// README.md) and checks from inside that it is the layout a noble cell has,
// then runs cellguard's sysctl profile on that real kernel. Not shipped.
//
// Every test boots its own VM from the never-written image and runs in
// parallel with the others, as many at once as go test's -parallel
// (GOMAXPROCS): a TCG guest runs on one host thread (thread=single), so
// one after another they left a core idle for the package's last ten
// minutes of make test (README.md, "Time").
package qemu

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// cgroupFlags are the kernel and systemd switches that would pick a cgroup
// layout other than systemd 255's default, the unified hierarchy. (The
// stemcell builder's cgroup_enable=memory only turns memcg on.)
var cgroupFlags = regexp.MustCompile(`(^|\s)(systemd\.unified_cgroup_hierarchy|systemd\.legacy_systemd_cgroup_controller|cgroup_no_v1|SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE)(=|\s|$)`)

func TestNobleVM(t *testing.T) {
	t.Parallel()
	qemuvm.RequireImage(t) // before the builds: a skip costs nothing
	t0 := time.Now()
	load0 := qemuvm.LoadAverage()
	bin, cfg := buildCellguard(t), renderJobConfig(t)
	vm := qemuvm.Start(t, qemuvm.Options{})
	rss, _, err := vm.RSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot: %s, %v; qemu RSS after boot %d MiB; load average %s at start, %s now",
		vm.Accel, vm.BootTime.Round(time.Second), rss>>20, load0, qemuvm.LoadAverage())
	defer func() {
		// What an idle guest costs the host (the agent sleeps in read(2)),
		// after the work: right after boot the guest still settles (30-40 %
		// of a core for about 15 s, measured).
		if c0, err := vm.CPUTime(); err == nil {
			time.Sleep(10 * time.Second)
			if c1, err := vm.CPUTime(); err == nil {
				t.Logf("idle guest at the end: qemu used %.1f%% of a core over 10 s", float64(c1-c0)/float64(10*time.Second)*100)
			}
		}
		if rss, peak, err := vm.RSS(); err == nil {
			t.Logf("qemu RSS at the end %d MiB, peak %d MiB; total %v; load average %s",
				rss>>20, peak>>20, time.Since(t0).Round(time.Second), qemuvm.LoadAverage())
		}
	}()

	const short = 2 * time.Minute
	if got := strings.TrimSpace(vm.Run(t, short, "uname", "-r")); !strings.HasPrefix(got, "6.8.0-") || got != vm.Image.Env["KERNEL_ABI"] {
		t.Errorf("uname -r = %q, want the image's Ubuntu kernel %s (6.8.0-*)", got, vm.Image.Env["KERNEL_ABI"])
	}
	cmdline := strings.TrimSpace(vm.Run(t, short, "cat", "/proc/cmdline"))
	t.Logf("/proc/cmdline: %s", cmdline)
	if m := cgroupFlags.FindString(cmdline); m != "" {
		t.Errorf("/proc/cmdline names a cgroup layout (%q): %s", strings.TrimSpace(m), cmdline)
	}
	if got := strings.TrimSpace(vm.Run(t, short, "stat", "-fc", "%T", "/sys/fs/cgroup")); got != "cgroup2fs" {
		t.Errorf("stat -fc %%T /sys/fs/cgroup = %q, want cgroup2fs (the unified hierarchy)", got)
	}
	if v := vm.Run(t, short, "systemctl", "--version"); !strings.HasPrefix(v, "systemd 255 ") {
		t.Errorf("systemctl --version: %q, want systemd 255", firstLine(v))
	} else {
		t.Logf("systemctl --version: %s", firstLine(v))
	}

	// cellguard as the job runs it: pre-start's `sysctl apply --config`
	// with the config the job renders (spec defaults: the container-host
	// profile), then check, everything on Ubuntu's kernel.
	ctx := t.Context()
	for _, f := range []struct {
		src, dst string
		mode     os.FileMode
	}{{bin, "/var/vcap/packages/cellguard/bin/cellguard", 0o755}, {cfg, "/var/vcap/jobs/cellguard/config/cellguard.json", 0o644}} {
		if err := vm.CopyIn(ctx, f.src, f.dst, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	// The job's log directory, as BOSH makes it before pre-start runs.
	vm.Run(t, short, "mkdir", "-p", "/var/vcap/sys/log/cellguard")
	cellguard := []string{"/var/vcap/packages/cellguard/bin/cellguard", "sysctl"}
	conf := []string{"--config", "/var/vcap/jobs/cellguard/config/cellguard.json"}
	apply := vm.Run(t, short, append(append(cellguard, "apply"), conf...)...)
	t.Logf("cellguard sysctl apply:\n%s", apply)
	res, err := vm.Output(short, append(append(cellguard, "check", "--json"), conf...)...)
	if err != nil {
		t.Fatal(err)
	}
	var check struct {
		Profile string `json:"profile"`
		InForce bool   `json:"in_force"`
		Keys    []struct {
			Key, Wanted, Mode, Live, Boot, Status string
		} `json:"keys"`
	}
	if err := json.Unmarshal(res.Stdout, &check); err != nil {
		t.Fatalf("cellguard sysctl check --json (exit %d): %v\n%s\n%s", res.Exit, err, res.Stdout, res.Stderr)
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPROFILE\tREAD (live)\tBOOT (sysctl.d)\tSTATUS")
	for _, k := range check.Keys {
		want := k.Wanted
		if k.Mode == "at-least" {
			want = ">=" + want
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Key, want, k.Live, k.Boot, k.Status)
	}
	tw.Flush()
	t.Logf("cellguard sysctl check, profile %s, on Ubuntu %s (%d keys):\n%s", check.Profile, vm.Image.Env["KERNEL_ABI"], len(check.Keys), table.String())
	if res.Exit != 0 || !check.InForce || len(check.Keys) == 0 {
		t.Errorf("cellguard sysctl check: exit %d, in_force %v, %d keys; want exit 0 and every key in force\n%s", res.Exit, check.InForce, len(check.Keys), res.Stderr)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// buildCellguard builds ./src/cmd/cellguard static (it runs in the guest).
func buildCellguard(t testing.TB) string {
	return buildStatic(t, "cellguard")
}

// buildStatic builds ./src/cmd/<name> without cgo, so the guest's libc
// does not matter.
func buildStatic(t testing.TB, name string) string {
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./src/cmd/"+name)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// renderJobConfig renders jobs/cellguard with its spec defaults by
// bosh-cli's own renderer (spec/cmd/render-job) and returns the rendered
// config/cellguard.json: the sysctl section pre-start hands to apply.
func renderJobConfig(t *testing.T) string {
	out := filepath.Join(t.TempDir(), "cellguard")
	root := repoRoot(t)
	cmd := exec.Command("go", "run", "-mod=mod", "./cmd/render-job", "-job", filepath.Join(root, "jobs", "cellguard"), "-o", out)
	cmd.Dir = filepath.Join(root, "spec")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("render jobs/cellguard: %v\n%s", err, b)
	}
	return filepath.Join(out, "config", "cellguard.json")
}
