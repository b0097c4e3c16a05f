package boundedexec

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in its own process group and makes
// cancellation kill the group, so a hung wrapper script and its children
// all go.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
