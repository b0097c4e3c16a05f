package sdbox_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

var box *sdbox.Box

// helperEnv makes the test binary act as a box owner that dies without Stop.
const helperEnv = "SDBOX_TEST_HELPER_DIE"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(m.Run())
	}
	os.Exit(sdbox.Main(m, "sdbox-test", &box))
}

func TestBoot(t *testing.T) {
	sdbox.Require(t, box)
	t.Logf("boot (rootfs cached): %v", box.BootTime.Round(time.Millisecond))
	out, err := box.Exec(t.Context(), "systemctl", "is-system-running")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "running" {
		t.Errorf("is-system-running = %q, want running", got)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", box.InitPID))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(comm)); got != "systemd" {
		t.Errorf("InitPID %d runs %q, want systemd", box.InitPID, got)
	}
	out, err = box.Exec(t.Context(), "sh", "-c", "echo $$; cat /proc/1/comm; command -v monit runc busybox ip nsenter")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inside:\n%s", out)
}

// dialSystemBus connects go-systemd to the box's dbus-daemon from the host.
func dialSystemBus(ctx context.Context, t *testing.T, addr string) *sd.Conn {
	t.Helper()
	conn, err := sd.NewConnection(func() (*godbus.Conn, error) {
		c, err := godbus.Dial(addr, godbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			c.Close()
			return nil, fmt.Errorf("auth: %w", err)
		}
		if err := c.Hello(); err != nil {
			c.Close()
			return nil, fmt.Errorf("hello: %w", err)
		}
		return c, nil
	})
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func TestSystemBusVersion(t *testing.T) {
	sdbox.Require(t, box)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	conn := dialSystemBus(ctx, t, box.SystemBusAddress)
	v, err := conn.GetManagerProperty("Version")
	if err != nil {
		t.Fatalf("GetManagerProperty(Version): %v", err)
	}
	t.Logf("systemd Version %s over %s in %v", v, box.SystemBusAddress, time.Since(t0).Round(time.Microsecond))
	// go-systemd returns the variant's text form: "\"252.39-1~deb12u1\""
	if !strings.HasPrefix(strings.Trim(v, `"`), "252") {
		t.Errorf("Version = %s, want bookworm's systemd 252", v)
	}
}

// TestV1ControllersWritable proves the box's systemd really manages the v1
// controllers: a unit with accounting lands in its own memory/pids/cpu
// cgroups, which needs write access to those hierarchies inside.
func TestV1ControllersWritable(t *testing.T) {
	sdbox.Require(t, box)
	ctx := t.Context()
	if _, err := box.Exec(ctx, "sh", "-c", "mkdir /sys/fs/cgroup/memory/sdbox-probe && rmdir /sys/fs/cgroup/memory/sdbox-probe"); err != nil {
		t.Fatalf("v1 memory hierarchy not writable inside: %v", err)
	}
	if _, err := box.Exec(ctx, "systemd-run", "--unit=sdbox-acct.service", "-p", "MemoryAccounting=yes",
		"-p", "TasksAccounting=yes", "-p", "CPUAccounting=yes", "sleep", "infinity"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Exec(context.Background(), "systemctl", "stop", "sdbox-acct.service") })
	out, err := box.Exec(ctx, "systemctl", "show", "-P", "MainPID", "sdbox-acct.service")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid == 0 {
		t.Fatalf("MainPID %q: %v", out, err)
	}
	// systemd-run returns at JobRemoved, and systemd may realize the
	// unit's v1 controllers after that (a CI run read memory and pids at
	// /init.scope, cpu at /): wait for the placement, then judge it.
	const want = "/system.slice/sdbox-acct.service"
	hierarchies := []string{"memory", "pids", "cpu", "name=systemd", ""}
	var got map[string]string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got, err = box.ReadCgroup(pid); err != nil {
			t.Fatal(err)
		}
		placed := true
		for _, h := range hierarchies {
			placed = placed && got[h] == want
		}
		if placed || time.Now().After(deadline) {
			break
		}
	}
	for _, h := range hierarchies {
		if got[h] != want {
			t.Errorf("ReadCgroup(%d)[%q] = %q, want %q within 10 s (all: %v)", pid, h, got[h], want, got)
		}
	}
	// the same seen from inside, to pin ReadCgroup's translation
	inside, err := box.Exec(ctx, "cat", fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(inside)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if got[f[1]] != f[2] {
			t.Errorf("inside %q, ReadCgroup says %q", line, got[f[1]])
		}
	}
	host := filepath.Join("/sys/fs/cgroup/memory", box.HostCgroup, "system.slice/sdbox-acct.service")
	if _, err := os.Stat(host); err != nil {
		t.Errorf("unit's memory cgroup not below the box's host cgroup: %v", err)
	}
}

func TestFiles(t *testing.T) {
	sdbox.Require(t, box)
	ctx := t.Context()
	// /var/run is an absolute symlink to /run: it must resolve inside the box,
	// never to the host's /run.
	name := fmt.Sprintf("sdbox-probe-%d", os.Getpid())
	if err := box.WriteFile("/var/run/"+name, []byte("hello\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/" + name); !errors.Is(err, fs.ErrNotExist) {
		os.Remove("/run/" + name)
		t.Fatalf("WriteFile escaped to the host's /run: %v", err)
	}
	out, err := box.Exec(ctx, "stat", "-c", "%a %s", "/run/"+name)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "640 6" {
		t.Errorf("stat in box = %q, want \"640 6\"", got)
	}
	data, err := box.ReadFile("/var/run/" + name)
	if err != nil || string(data) != "hello\n" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}

	bin := sdbox.BuildCellguard(t)
	if err := box.CopyIn(bin, "/var/vcap/packages/cellguard/bin/cellguard", 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = box.Exec(ctx, "/var/vcap/packages/cellguard/bin/cellguard", "version")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cellguard version in box: %s", strings.TrimSpace(string(out)))
	if p := box.InstallCellguard(t); p != "/usr/local/bin/cellguard" {
		t.Errorf("InstallCellguard = %q", p)
	}
	if _, err := box.Exec(ctx, "cellguard", "version"); err != nil {
		t.Fatal(err)
	}
}

func TestExecError(t *testing.T) {
	sdbox.Require(t, box)
	out, err := box.Exec(t.Context(), "sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3")
	if err == nil {
		t.Fatal("exit 3: want an error")
	}
	for _, s := range []string{"to-stdout", "to-stderr", "exit status 3"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if !strings.Contains(string(out), "to-stderr") {
		t.Errorf("output %q lacks stderr", out)
	}
}

// leftovers lists what a stopped box could have left behind.
func leftovers(t *testing.T, b *sdbox.Box) []string {
	t.Helper()
	var left []string
	hs, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range append(hs, "/sys/fs/cgroup") {
		filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Contains(d.Name(), b.Name) {
				left = append(left, "cgroup "+p)
				return filepath.SkipDir
			}
			if strings.Count(strings.TrimPrefix(p, h), "/") >= 3 {
				return filepath.SkipDir // boxes live at the top; don't walk others' trees
			}
			return nil
		})
	}
	for _, pid := range []int{b.InitPID, b.NspawnPID} {
		// A zombie has exited; reaping it is up to its parent (here the host's
		// PID 1, which reaps about once a second).
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || pid == 0 {
			continue
		}
		if i := strings.LastIndex(string(stat), ") "); i < 0 || !strings.HasPrefix(string(stat[i+2:]), "Z") {
			left = append(left, fmt.Sprintf("process %d: %s", pid, stat))
		}
	}
	if _, err := os.Stat("/run/systemd/nspawn/propagate/" + b.Name); err == nil {
		left = append(left, "dir /run/systemd/nspawn/propagate/"+b.Name)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.Contains(l, b.Name) {
			left = append(left, "mount "+l)
		}
	}
	return left
}

func TestStartStopLeavesNothing(t *testing.T) {
	sdbox.RequireRoot(t)
	sdbox.Require(t, box)
	for _, mode := range []cgroup.Mode{cgroup.Hybrid, cgroup.Legacy, cgroup.Unified} {
		t.Run(mode.String(), func(t *testing.T) {
			b, err := sdbox.Start(t.Context(), "sdbox-"+mode.String(), sdbox.WithCgroupMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Stop() })
			t.Logf("%s: boot %v", mode, b.BootTime.Round(time.Millisecond))
			out, err := b.Exec(t.Context(), "sh", "-c", "stat -fc %T /sys/fs/cgroup; ls /sys/fs/cgroup; systemctl is-system-running")
			if err != nil {
				t.Fatal(err)
			}
			fields := strings.Fields(string(out))
			wantFS, wantUnified := "tmpfs", mode == cgroup.Hybrid
			if mode == cgroup.Unified {
				wantFS = "cgroup2fs"
			}
			if fields[0] != wantFS || strings.Contains(string(out), "unified") != wantUnified ||
				fields[len(fields)-1] != "running" {
				t.Errorf("%s: /sys/fs/cgroup type, entries, state:\n%s", mode, out)
			}
			// a process of the box, started via Exec, that must die with it
			if _, err := b.Exec(t.Context(), "sh", "-c", "setsid sleep infinity >/dev/null 2>&1 &"); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			if err := b.Stop(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: stop %v", mode, time.Since(t0).Round(time.Millisecond))
			if left := leftovers(t, b); len(left) > 0 {
				t.Errorf("left after Stop:\n%s", strings.Join(left, "\n"))
			}
			if err := b.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
		})
	}
}

// TestOwnerDiesWithoutStop: a test binary that boots a box and is SIGKILLed
// leaves nothing behind: the watcher stops the box.
func TestOwnerDiesWithoutStop(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		b, err := sdbox.Start(context.Background(), "sdbox-orphan")
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("BOX %s %d %d\n", b.Name, b.InitPID, b.NspawnPID)
		os.Stdout.Sync()
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	sdbox.Require(t, box)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnerDiesWithoutStop$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, _ := cmd.Output()
	var name string
	var initPID, nspawnPID int
	if _, err := fmt.Sscanf(string(out), "BOX %s %d %d", &name, &initPID, &nspawnPID); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	orphan := &sdbox.Box{Name: name, InitPID: initPID, NspawnPID: nspawnPID}
	t0 := time.Now()
	var left []string
	for time.Since(t0) < 30*time.Second {
		if left = leftovers(t, orphan); len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Fatalf("30s after its owner was killed, box %s left:\n%s", name, strings.Join(left, "\n"))
	}
	t.Logf("box of a SIGKILLed owner gone after %v", time.Since(t0).Round(time.Millisecond))
}

// TestGCOwnerGoneBeforeBoot: an owner that died while sdbox.sh start ran (a
// Ctrl-C during boot: CI5's integration box) is recorded as "gone", and gc
// stops that box; it used to match proc_start's "gone" and live on.
func TestGCOwnerGoneBeforeBoot(t *testing.T) {
	sdbox.Require(t, box)
	script, err := sdbox.ScriptPath()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("sdbox-gone-%d", os.Getpid())
	env := append(os.Environ(), "SDBOX_NAME="+name, "SDBOX_OWNER_PID="+strconv.Itoa(dead.Process.Pid))
	start := exec.Command("bash", script, "start")
	start.Env = env
	out, err := start.CombinedOutput()
	stop := func() {
		c := exec.Command("bash", script, "stop")
		c.Env = env
		c.Run()
	}
	t.Cleanup(stop)
	if err != nil {
		t.Fatalf("sdbox.sh start: %v\n%s", err, out)
	}
	boxes := "/var/tmp/cellguard-sdbox/boxes" // sdbox.sh's, SDBOX_DIR unset
	if d := os.Getenv("SDBOX_DIR"); d != "" {
		boxes = filepath.Join(d, "boxes")
	}
	owner, _ := os.ReadFile(filepath.Join(boxes, name, "owner"))
	if !strings.HasSuffix(strings.TrimSpace(string(owner)), " gone") {
		t.Fatalf("owner file %q, want the dead owner recorded as gone", owner)
	}
	gc := exec.Command("bash", script, "gc")
	gc.Env = os.Environ()
	if out, err := gc.CombinedOutput(); err != nil {
		t.Fatalf("sdbox.sh gc: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(boxes, name)); err == nil {
		t.Fatalf("gc left box %s (its owner died before it booted)", name)
	}
	if left := leftovers(t, &sdbox.Box{Name: name}); len(left) > 0 {
		t.Fatalf("gc left:\n%s", strings.Join(left, "\n"))
	}
}

// TestExecCancel: cancelling ctx kills the command inside the box too, not
// only the host-side nsenter.
func TestExecCancel(t *testing.T) {
	sdbox.Require(t, box)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	marker := fmt.Sprintf("sdbox-cancel-%d", os.Getpid())
	if _, err := box.Exec(ctx, "bash", "-c", "exec -a "+marker+" sleep 600"); err == nil {
		t.Fatal("want an error from a cancelled Exec")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := box.Exec(t.Context(), "pgrep", "-f", marker)
		if err != nil { // pgrep: exit 1, nothing found
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cancelled command still runs in the box: pids %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSameNameInParallel: two boxes of one name in one process get distinct
// names and do not disturb each other.
func TestSameNameInParallel(t *testing.T) {
	sdbox.Require(t, box)
	boxes := make([]*sdbox.Box, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for i := range boxes {
		go func() {
			boxes[i], errs[i] = sdbox.Start(t.Context(), "sdbox-twin")
			done <- i
		}()
	}
	<-done
	<-done
	for i, b := range boxes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { b.Stop() })
	}
	if boxes[0].Name == boxes[1].Name {
		t.Fatalf("both boxes are named %s", boxes[0].Name)
	}
	t.Logf("names %s, %s; boot %v, %v (in parallel)", boxes[0].Name, boxes[1].Name,
		boxes[0].BootTime.Round(time.Millisecond), boxes[1].BootTime.Round(time.Millisecond))
	if err := boxes[0].Stop(); err != nil {
		t.Fatal(err)
	}
	out, err := boxes[1].Exec(t.Context(), "systemctl", "is-system-running")
	if err != nil || strings.TrimSpace(string(out)) != "running" {
		t.Errorf("second box after the first stopped: %q, %v", out, err)
	}
	if err := boxes[1].Stop(); err != nil {
		t.Fatal(err)
	}
	for _, b := range boxes {
		if left := leftovers(t, b); len(left) > 0 {
			t.Errorf("box %s left:\n%s", b.Name, strings.Join(left, "\n"))
		}
	}
}

// TestStartFailureLeavesNothing: a boot that times out returns an error with
// the reason and cleans up after itself.
func TestStartFailureLeavesNothing(t *testing.T) {
	sdbox.Require(t, box)
	b, err := sdbox.Start(t.Context(), "sdbox-fail", sdbox.WithBootTimeout(0))
	if err == nil {
		b.Stop()
		t.Fatal("Start with a zero boot timeout: want an error")
	}
	if !strings.Contains(err.Error(), "boot timeout") {
		t.Errorf("error lacks the reason: %v", err)
	}
	name := fmt.Sprintf("sdbox-fail-%d", os.Getpid())
	if left := leftovers(t, &sdbox.Box{Name: name}); len(left) > 0 {
		t.Errorf("failed Start left:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat("/var/tmp/cellguard-sdbox/boxes/" + name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed Start left its state dir: %v", err)
	}
}
