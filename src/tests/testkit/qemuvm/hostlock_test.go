package qemuvm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// locked says whether another open file description can take path's flock
// now (flock conflicts between descriptions, also within one process).
func locked(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return false
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return true
}

// A process's guests share the lock; the last release lets it go.
func TestHostLockSharedWithinAProcess(t *testing.T) {
	h := &hostLock{path: filepath.Join(t.TempDir(), "host.lock"), poll: 10 * time.Millisecond}
	r1, err := h.hold(context.Background(), "first", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := h.hold(context.Background(), "second", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !locked(t, h.path) {
		t.Fatal("the lock is free while two guests hold it")
	}
	b, _ := os.ReadFile(h.path)
	if !strings.Contains(string(b), "first") {
		t.Errorf("the lock says %q; want its holder, first", b)
	}
	r1()
	r1() // a release runs once
	if !locked(t, h.path) {
		t.Fatal("the lock is free while the second guest still holds it")
	}
	r2()
	if locked(t, h.path) {
		t.Fatal("the lock is held after the last release")
	}
}

// Another process's hold (another description here) is waited for, with
// its holder in the log, and then taken; a cancelled wait names the holder.
func TestHostLockWaitsForAnotherHolder(t *testing.T) {
	h := &hostLock{path: filepath.Join(t.TempDir(), "host.lock"), poll: 10 * time.Millisecond}
	other := &hostLock{path: h.path, poll: h.poll}
	release, err := other.hold(context.Background(), "TestFleet/noble", nil)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.hold(ctx, "TestQEMUCPIBootsNoble", nil); err == nil || !strings.Contains(err.Error(), "TestFleet/noble") ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait cut short by its context: %v; want the deadline and the holder's name", err)
	}

	var mu sync.Mutex
	var logs []string
	log := func(s string) { mu.Lock(); logs = append(logs, s); mu.Unlock() }
	got := make(chan error, 1)
	go func() {
		r, err := h.hold(context.Background(), "TestQEMUCPIBootsNoble", log)
		if err == nil {
			defer r()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("took the lock while another held it (%v)", err)
	default:
	}
	release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) < 2 || !strings.Contains(logs[0], "held by pid") || !strings.Contains(logs[0], "TestFleet/noble") ||
		!strings.Contains(logs[len(logs)-1], "has the host's QEMU lock") {
		t.Errorf("the waiter's log: %q; want who holds it, then that it has it", logs)
	}
}
