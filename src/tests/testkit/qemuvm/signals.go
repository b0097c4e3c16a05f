package qemuvm

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// live holds every VM not yet closed, so that SIGINT and SIGTERM close them
// (kill qemu, remove the directory) before the test process exits.
var live struct {
	sync.Mutex
	vms      map[*VM]bool
	handling bool
}

func register(v *VM) {
	live.Lock()
	defer live.Unlock()
	if live.vms == nil {
		live.vms = map[*VM]bool{}
	}
	live.vms[v] = true
	if !live.handling {
		live.handling = true
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		go closeAllOn(sigs)
	}
}

func unregister(v *VM) {
	live.Lock()
	defer live.Unlock()
	delete(live.vms, v)
}

func closeAllOn(sigs <-chan os.Signal) {
	s := <-sigs
	live.Lock()
	vms := make([]*VM, 0, len(live.vms))
	for v := range live.vms {
		vms = append(vms, v)
	}
	live.Unlock()
	for _, v := range vms {
		fmt.Fprintf(os.Stderr, "qemuvm: %v: closing VM (qemu pid %d)\n", s, v.PID)
		v.Close()
	}
	os.Exit(2)
}
