package qemuvm

import (
	"fmt"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
)

// register makes SIGINT and SIGTERM close v (kill qemu, remove its
// directory) before the test process exits; Close forgets it.
func register(v *VM) {
	forget, ok := interrupt.Add(fmt.Sprintf("VM (qemu pid %d)", v.PID), func() { v.Close() })
	if !ok { // interrupted while booting: the process is exiting
		v.Close()
		return
	}
	v.mu.Lock()
	v.forget = forget
	v.mu.Unlock()
}
