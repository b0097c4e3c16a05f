//go:build !linux

package boundedexec

import "os/exec"

// setProcessGroup: only the process itself is killed on other systems;
// cellguard runs on Linux cells.
func setProcessGroup(cmd *exec.Cmd) {}
