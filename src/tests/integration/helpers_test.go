package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// bootBox boots a fresh systemd container for one test and stops it when the
// test ends. A fresh box per scenario matters: once systemd has realized a
// controller for a slice, a second trigger moves nothing.
func bootBox(t *testing.T, name string) *sdbox.Box {
	t.Helper()
	sdbox.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	box, err := sdbox.Start(ctx, name)
	if err != nil {
		t.Fatalf("boot systemd container %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := box.Stop(); err != nil {
			t.Errorf("stop container %s: %v", name, err)
		}
	})
	return box
}

func writeFile(t *testing.T, box *sdbox.Box, path, content string, mode os.FileMode) {
	t.Helper()
	if err := box.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatalf("write %s into container: %v", path, err)
	}
}

// startTrigger starts trigger.service, a brand-new unit with CPU and IO
// settings in system.slice, and returns after the moves its start made
// (garden.SettleArgs).
func startTrigger(t *testing.T, box *sdbox.Box) {
	t.Helper()
	writeFile(t, box, "/etc/systemd/system/trigger.service",
		"[Service]\nExecStart=/bin/sleep infinity\nCPUAccounting=yes\nCPUWeight=50\nIOWeight=50\n", 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "trigger.service")
	box.Run(t, garden.SettleArgs...)
}

// fakeGarden is a stand-in for Garden's cgroupfs driver: it writes its own
// pid to the pidfile, forks a long-lived child, makes <own cgroup>/garden/<id>
// in every hierarchy and moves the child there, records the child's pid, and
// waits. The ctl script execs it (Type=exec), as BOSH ctl scripts do. A
// third argument "ctl" leaves the child in its parent's cgroup in the
// name=systemd and unified hierarchies, as runc before 1.1 did on a
// hybrid host (it joined cgroup v2 there from v1.1.0, runc a8435007d).
const fakeGarden = `#!/bin/bash
set -u
name=$1 id=$2 hier=${3:-all}
run=/var/vcap/sys/run/$name
mkdir -p "$run"
echo $$ > "$run/$name.pid"
sleep infinity &
child=$!
own() { # this process's path in hierarchy $1, from /proc/self/cgroup
  case $1 in
    unified) awk -F: '$1=="0"{print $3}' /proc/self/cgroup ;;
    systemd) awk -F: '$2=="name=systemd"{print $3}' /proc/self/cgroup ;;
    *) awk -F: -v c="$1" '{n=split($2,a,","); for(i=1;i<=n;i++) if(a[i]==c) print $3}' /proc/self/cgroup ;;
  esac
}
for h in $(cd /sys/fs/cgroup && for d in *; do [ -L "$d" ] || ! mountpoint -q "$d" || echo "$d"; done); do
  if [ "$hier" = ctl ] && { [ "$h" = systemd ] || [ "$h" = unified ]; }; then continue; fi
  p=$(own "$h"); p=${p%/}/garden/$id
  d=/sys/fs/cgroup/$h$p
  mkdir -p "$d" || continue
  if [ "$h" = cpuset ]; then # v1 cpuset needs cpus/mems top-down before tasks can join
    cur=/sys/fs/cgroup/cpuset
    for comp in $(echo "$p" | tr / ' '); do
      par=$cur; cur=$cur/$comp
      for f in cpuset.cpus cpuset.mems; do [ -n "$(cat "$cur/$f")" ] || cat "$par/$f" > "$cur/$f"; done
    done
  fi
  echo "$child" > "$d/cgroup.procs" || echo "could not move $child to $h:$p" >&2
done
echo "$child" > "$run/child.pid"
wait
`

const fakeGardenCtl = `#!/bin/bash
# BOSH-style ctl script: "start" execs the daemon, "stop" ends it by pidfile.
name=%[1]s
case $1 in
  start) exec /var/vcap/packages/fake-garden/bin/fake-garden "$name" c1 %[2]s ;;
  stop)  pid=$(cat /var/vcap/sys/run/$name/$name.pid 2>/dev/null) && kill "$pid"
         rm -f /var/vcap/sys/run/$name/$name.pid ;;
esac
`

// installFakeGarden lays out a daemon named name the BOSH way.
func installFakeGarden(t *testing.T, box *sdbox.Box, name string) (ctl, pidfile string) {
	t.Helper()
	writeFile(t, box, "/var/vcap/packages/fake-garden/bin/fake-garden", fakeGarden, 0o755)
	ctl = "/var/vcap/jobs/" + name + "/bin/" + name + "_ctl"
	writeFile(t, box, ctl, fmt.Sprintf(fakeGardenCtl, name, "all"), 0o755)
	return ctl, "/var/vcap/sys/run/" + name + "/" + name + ".pid"
}

// fakeGardenUnit installs the fake Garden as name in box and returns a
// Manager on box's systemd (closed when t ends) and the daemon as the job
// would install it.
func fakeGardenUnit(t *testing.T, box *sdbox.Box, name string) (*daemonctl.Manager, daemonctl.Daemon) {
	t.Helper()
	ctl, pidfile := installFakeGarden(t, box, name)
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger(name), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}
	t.Cleanup(m.Close)
	return m, daemonctl.Daemon{Name: name, Start: []string{ctl, "start"}, Stop: []string{ctl, "stop"}, PIDFile: pidfile,
		StartTimeout: 20 * time.Second, StopTimeout: 20 * time.Second}
}

// readPID reads a pidfile inside the box, waiting for it to appear.
func readPID(t *testing.T, box *sdbox.Box, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(box.Root, path))
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pidfile %s did not appear: %v", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroups returns hierarchy -> path of a container pid, as the container sees it.
func cgroups(t *testing.T, box *sdbox.Box, pid int) map[string]string {
	t.Helper()
	m, err := box.ReadCgroup(pid)
	if err != nil {
		t.Fatalf("read cgroups of pid %d: %v", pid, err)
	}
	return m
}

// moved lists the hierarchies where before and after differ.
func moved(before, after map[string]string) map[string][2]string {
	d := map[string][2]string{}
	for h, b := range before {
		if a := after[h]; a != b {
			d[h] = [2]string{b, a}
		}
	}
	return d
}
