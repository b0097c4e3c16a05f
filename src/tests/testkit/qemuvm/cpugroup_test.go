package qemuvm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// A process joins the group, the group gets its weight, and it is removed only once no process is left in it. On a
// group of the test's own, beside the real CPUGroup.
func TestCPUGroupHoldsAGuestAndGoesWithIt(t *testing.T) {
	testkit.SkipIntegration(t)
	testkit.RequireRoot(t, "a cgroup of the v1 cpu hierarchy")
	group := fmt.Sprintf("%s-test-%d", CPUGroup, os.Getpid())
	if !HasCPUGroups() {
		testkit.Unavailable(t, "no cgroup v1 cpu hierarchy on this host")
	}
	t.Cleanup(func() { removeCPUGroupAt(group) })
	// A stand-in for qemu.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := joinCPUGroupAt(group, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got, want := CPUGroupOf(cmd.Process.Pid), "/"+filepath.Base(group); got != want {
		t.Fatalf("the process is in cpu group %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(group, "cpu.shares")); err != nil || strings.TrimSpace(string(b)) != "65536" {
		t.Errorf("cpu.shares: %q (%v), want 65536", b, err)
	}
	// Joining again (the next guest) is fine while the group is in use.
	if err := joinCPUGroupAt(group, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	removeCPUGroupAt(group)
	if _, err := os.Stat(group); err != nil {
		t.Fatalf("the group went while a process was in it: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	removeCPUGroupAt(group)
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Fatalf("the group stayed after its last process ended: %v", err)
	}
	// Gone between two guests, the next one makes it again.
	cmd2 := exec.Command("sleep", "60")
	if err := cmd2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd2.Process.Kill(); cmd2.Wait() })
	if err := joinCPUGroupAt(group, cmd2.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got := CPUGroupOf(cmd2.Process.Pid); got != "/"+filepath.Base(group) {
		t.Fatalf("after the group was removed, a new guest is in %q", got)
	}
}
