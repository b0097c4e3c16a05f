package qemu

import (
	"os"
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
	t.Parallel()
	vm := qemuvm.Start(t, qemuvm.Options{})
	// The model took: a guest of qemuvm.TCGCPU has no cmpxchg16b (its SLUB
	// fast path crashed guests under QEMU 7.2's TCG).
	flags := " " + strings.TrimSpace(vm.Run(t, time.Minute, "grep", "-m1", "^flags", "/proc/cpuinfo")) + " "
	cx16 := strings.Contains(flags, " cx16 ")
	if vm.Accel == "tcg" && os.Getenv(qemuvm.TCGCPUEnv) == "" && cx16 {
		t.Errorf("the TCG guest of -cpu %s has cx16: %s", qemuvm.TCGCPU, flags)
	}
	t.Logf("%s guest's cx16: %v", vm.Accel, cx16)
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
