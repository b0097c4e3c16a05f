package systemd

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/hungsock"
)

// hungSocket is a socket that accepts and never answers, as a D-Bus
// address, with its connections' closes.
func hungSocket(t *testing.T) (string, <-chan struct{}) {
	path, closed := hungsock.Listen(t)
	return "unix:path=" + path, closed
}

func TestDialMissingSocket(t *testing.T) {
	addr := "unix:path=" + filepath.Join(t.TempDir(), "no-such-socket")
	start := time.Now()
	c, err := Dial(context.Background(), Options{Address: addr})
	if err == nil {
		c.Close()
		t.Fatal("dialled a socket that does not exist")
	}
	if !strings.Contains(err.Error(), "connect to systemd over D-Bus") || !strings.Contains(err.Error(), "no-such-socket") {
		t.Errorf("error does not say what it tried: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v to notice a missing socket", d)
	}
}

// The caller's deadline ends the handshake with a silent peer, and the
// abandoned connection is closed, not leaked.
func TestDialHungSocketHonoursContext(t *testing.T) {
	addr, closed := hungSocket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, Options{Address: addr})
	if err == nil {
		c.Close()
		t.Fatal("dial of a silent socket succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v is not DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("dial returned after %v, deadline was 300ms", d)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the abandoned connection was never closed")
	}
}

// Without a deadline from the caller (cellguard start under monit, unit
// install in pre-start), DialTimeout still bounds the handshake.
func TestDialHungSocketWithoutDeadline(t *testing.T) {
	addr, closed := hungSocket(t)
	old := DialTimeout
	DialTimeout = 300 * time.Millisecond
	defer func() { DialTimeout = old }()
	start := time.Now()
	c, err := Dial(context.Background(), Options{Address: addr})
	if err == nil {
		c.Close()
		t.Fatal("dial of a silent socket succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("error %v does not say it timed out", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("dial returned after %v, DialTimeout was 300ms", d)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the abandoned connection was never closed")
	}
}
