package qemuvm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// HostLockFile is the lock that lets one process at a time run QEMU guests
// on this host. A TCG guest is host threads emulating a whole machine, and
// its kernel's, systemd's and agent's clocks run on while those threads
// wait for a core. make test runs two packages at once (-p 2): the landing
// CI of 2026-12-07 had src/tests/bosh's CPI guest (nice -10, two vCPUs)
// booting while src/tests/fleet's noble lane ran its own guests, and the
// CPI guest needed 340 s to reach multi-user (40-60 s alone), missed its
// bound, and the fleet's noble canary failed beside it. Each process's
// guests share the lock (their own parallelism is measured and bounded:
// priority, the fleet's nice 0); another process waits for it.
const HostLockFile = "/var/tmp/cellguard-qemu/host.lock"

// hostLockWait bounds a wait for another process's guests: make test's
// longest holder, the fleet's noble lane, held it about 20 minutes.
const hostLockWait = 60 * time.Minute

// hostLock is this process's share of HostLockFile.
type hostLock struct {
	path string
	poll time.Duration

	mu    sync.Mutex // held while acquiring, so one goroutine waits and the rest share
	users int
	f     *os.File
}

var host = &hostLock{path: HostLockFile, poll: 2 * time.Second}

// HoldHost takes this process's share of the host's QEMU lock for who
// (a test's name), waiting up to an hour for another process's guests to
// end; log hears about a wait. release must be called once this process's
// guests are gone: the last release of the process lets the lock go.
func HoldHost(ctx context.Context, who string, log func(string)) (release func(), err error) {
	return host.hold(ctx, who, log)
}

func (h *hostLock) hold(ctx context.Context, who string, log func(string)) (func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users == 0 {
		f, err := h.acquire(ctx, who, log)
		if err != nil {
			return nil, err
		}
		h.f = f
	}
	h.users++
	var once sync.Once
	return func() { once.Do(h.release) }, nil
}

func (h *hostLock) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users--; h.users == 0 {
		h.f.Close() // closing the descriptor drops the flock
		h.f = nil
	}
}

// acquire polls for the lock (a blocking flock would not hear ctx) and, once
// it has it, writes who holds it for the next waiter's log.
func (h *hostLock) acquire(ctx context.Context, who string, log func(string)) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(h.path), 0o755); err != nil {
		return nil, fmt.Errorf("host QEMU lock: %w", err)
	}
	f, err := os.OpenFile(h.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("host QEMU lock: %w", err)
	}
	t0, said := time.Now(), time.Time{}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("host QEMU lock %s: %w", h.path, err)
		}
		holder := h.holder()
		if waited := time.Since(t0); waited > hostLockWait {
			f.Close()
			return nil, fmt.Errorf("host QEMU lock %s: still held after %v by %s", h.path, waited.Round(time.Second), holder)
		}
		if log != nil && time.Since(said) >= time.Minute {
			log(fmt.Sprintf("qemuvm: %s waits for the host's QEMU guests to end (%s, held by %s; waited %v)",
				who, h.path, holder, time.Since(t0).Round(time.Second)))
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("host QEMU lock %s, held by %s: %w", h.path, holder, ctx.Err())
		case <-time.After(h.poll):
		}
	}
	if log != nil && !said.IsZero() {
		log(fmt.Sprintf("qemuvm: %s has the host's QEMU lock after %v", who, time.Since(t0).Round(time.Second)))
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d: %s, since %s\n", os.Getpid(), who, time.Now().UTC().Format(time.RFC3339))), 0)
	}
	return f, nil
}

// holder is what the lock's holder wrote into it.
func (h *hostLock) holder() string {
	b, err := os.ReadFile(h.path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	return "a process that has not said"
}
