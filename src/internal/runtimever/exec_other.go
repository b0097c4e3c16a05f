//go:build !linux

package runtimever

import "os/exec"

// setProcessGroup: only the process itself is killed on other systems;
// cellguard runs on Linux cells.
func setProcessGroup(cmd *exec.Cmd) {}
