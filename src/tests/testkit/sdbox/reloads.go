package sdbox

import (
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// ReloadCounter counts systemd's Manager.Reloading(true) signals on a bus
// connection of its own: proof, independent of what cellguard reports,
// of whether a daemon-reload happened.
type ReloadCounter struct {
	conn  *godbus.Conn
	count atomic.Int64
}

// WatchReloads subscribes to the box's systemd (address: Box.SystemBusAddress)
// and counts reloads until the test ends.
func WatchReloads(t testing.TB, address string) *ReloadCounter {
	t.Helper()
	conn, err := godbus.Dial(address)
	if err != nil {
		t.Fatalf("dial %s: %v", address, err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		t.Fatalf("auth: %v", err)
	}
	if err := conn.Hello(); err != nil {
		t.Fatalf("hello: %v", err)
	}
	// systemd emits manager signals only to subscribed clients.
	if err := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		Call("org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := conn.AddMatchSignal(godbus.WithMatchInterface("org.freedesktop.systemd1.Manager"),
		godbus.WithMatchMember("Reloading")); err != nil {
		t.Fatalf("add match: %v", err)
	}
	rc := &ReloadCounter{conn: conn}
	ch := make(chan *godbus.Signal, 64)
	conn.Signal(ch)
	go func() {
		for s := range ch {
			if len(s.Body) == 1 && s.Body[0] == true {
				rc.count.Add(1)
			}
		}
	}()
	return rc
}

// Settle makes a round trip to systemd on the counter's connection, so every
// signal sent before it has been read, and returns the count so far.
func (rc *ReloadCounter) Settle(t testing.TB) int64 {
	t.Helper()
	var v godbus.Variant
	if err := rc.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		Call("org.freedesktop.DBus.Properties.Get", 0, "org.freedesktop.systemd1.Manager", "Version").Store(&v); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // the reader goroutine hands signals over asynchronously
	return rc.count.Load()
}
