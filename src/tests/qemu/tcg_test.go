package qemu

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// TestTCGSurvivesStaticKeyPatching keeps the harness's guests alive: a
// cgroup's cpu.max coming and going turns the kernel's CFS bandwidth
// static key on and off, which patches the scheduler's code while the
// other vCPU runs it. Under QEMU 7.2's thread=multi TCG the 6.8 guest died
// of it within seconds (an int3 in pick_next_task_fair, a jump into the
// middle of an instruction in update_curr: TestNobleTopology's runc run in
// CI, and this loop); every runc container with a CPU quota does the same.
func TestTCGSurvivesStaticKeyPatching(t *testing.T) {
	vm := qemuvm.Start(t, qemuvm.Options{})
	const toggles = 50
	// Two busy loops keep both vCPUs in and out of the scheduler.
	script := `echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
for i in 1 2; do ( while :; do :; done ) & done
for i in $(seq 1 ` + strconv.Itoa(toggles) + `); do
  mkdir /sys/fs/cgroup/tcg$i
  echo "50000 100000" > /sys/fs/cgroup/tcg$i/cpu.max
  echo max > /sys/fs/cgroup/tcg$i/cpu.max
  rmdir /sys/fs/cgroup/tcg$i
done
kill $(jobs -p)
echo toggled $i`
	start := time.Now()
	out := vm.Run(t, 10*time.Minute, "bash", "-c", script)
	if got := strings.TrimSpace(out); got != "toggled "+strconv.Itoa(toggles) {
		t.Fatalf("the loop printed %q, want %q", got, "toggled "+strconv.Itoa(toggles))
	}
	t.Logf("%s: %d cpu.max quotas set and removed with both vCPUs busy in %v; the guest lives: %s",
		vm.Accel, toggles, time.Since(start).Round(time.Second), strings.TrimSpace(vm.Run(t, time.Minute, "uptime")))
}
