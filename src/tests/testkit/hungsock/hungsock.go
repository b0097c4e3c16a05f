// Package hungsock is a unix socket that accepts every connection and
// never answers: a wedged systemd, or a stale socket something else bound.
// Tests of cellguard's D-Bus timeouts dial it.
package hungsock

import (
	"net"
	"path/filepath"
	"sync"
	"testing"
)

// Listen serves the socket until the test ends and returns its path. Each
// accepted connection's close (the client gave up and closed its end) is
// reported on closed, which holds up to 16 unread reports; more are
// dropped, never blocking.
func Listen(t testing.TB) (path string, closed <-chan struct{}) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "bus")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil { // read and ignore the AUTH lines
						select {
						case ch <- struct{}{}:
						default:
						}
						return
					}
				}
			}()
		}
	}()
	return path, ch
}
