// Package interrupt runs a test process's teardowns when it gets SIGINT or
// SIGTERM. go test runs no t.Cleanup and no deferred call then: the process
// just dies, and a box, VM, lab namespace or director it made outlives it.
// One handler per process: before it, each suite had its own, and when two
// were armed in one process the first to exit cut the other's teardown short.
package interrupt

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

type entry struct {
	name string
	f    func()
}

// ctx is cancelled at the signal, before any teardown runs.
var ctx, cancel = context.WithCancel(context.Background())

// Context is cancelled when the process gets SIGINT or SIGTERM, before any
// teardown runs: commands made with it stop first, so that nothing in
// flight makes more while the teardowns take things down. Asking for it
// arms the handler.
func Context() context.Context {
	state.Lock()
	defer state.Unlock()
	arm()
	return ctx
}

var state struct {
	sync.Mutex
	armed       bool
	interrupted bool
	entries     []*entry // in registration order; run newest first
}

// Add registers f to run when the process gets SIGINT or SIGTERM, after
// every teardown registered later (t.Cleanup's order). forget unregisters
// it without running it: the caller's own teardown calls it, and makes f
// safe to run twice at once (Cleanup does both). After a signal Add
// registers nothing and ok is false: the process is about to exit, and
// whatever the caller would make would outlive it.
func Add(name string, f func()) (forget func(), ok bool) {
	state.Lock()
	defer state.Unlock()
	if state.interrupted {
		return func() {}, false
	}
	arm()
	e := &entry{name: name, f: f}
	state.entries = append(state.entries, e)
	return func() {
		state.Lock()
		defer state.Unlock()
		for i, x := range state.entries {
			if x == e {
				state.entries = append(state.entries[:i], state.entries[i+1:]...)
				break
			}
		}
	}, true
}

// arm installs the one handler; state is locked.
func arm() {
	if state.armed {
		return
	}
	state.armed = true
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go teardown(sigs)
}

// Cleanup registers f with t.Cleanup and with Add: it runs once, when the
// test ends or when the process is interrupted, whichever comes first (the
// other waits for it). A test that makes something after a signal takes it
// down at once and fails.
func Cleanup(t testing.TB, name string, f func()) {
	t.Helper()
	var once sync.Once
	run := func() { once.Do(f) }
	forget, ok := Add(name, run)
	if !ok {
		run()
		t.Fatalf("interrupted: %s was made after the signal and is taken down again", name)
	}
	t.Cleanup(func() {
		run()
		forget()
	})
}

// Interrupted says whether the process got SIGINT or SIGTERM: a test that
// fails because its commands got the signal too can say so instead of
// dumping logs.
func Interrupted() bool {
	state.Lock()
	defer state.Unlock()
	return state.interrupted
}

// teardown waits for the first signal, cancels Context, runs every registered teardown,
// newest first, and exits 128+signal as a shell does. Later signals are
// swallowed: a second Ctrl-C must not leave half a teardown behind.
func teardown(sigs <-chan os.Signal) {
	s := <-sigs
	state.Lock()
	state.interrupted = true
	entries := append([]*entry(nil), state.entries...)
	state.Unlock()
	cancel()
	for i := len(entries) - 1; i >= 0; i-- {
		fmt.Fprintf(os.Stderr, "signal %v: taking down %s\n", s, entries[i].name)
		runAlone(entries[i])
	}
	code := 130
	if s == syscall.SIGTERM {
		code = 143
	}
	os.Exit(code)
}

// runAlone runs e.f on a goroutine of its own: a teardown written for
// t.Cleanup may call t.Fatal (runtime.Goexit) or panic, which must end
// only that teardown, not the ones after it.
func runAlone(e *entry) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(os.Stderr, "interrupt: taking down %s: panic: %v\n", e.name, r)
			}
		}()
		e.f()
	}()
	<-done
}
