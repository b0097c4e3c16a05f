package checks

import (
	"context"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
)

// SystemdUnits is what delegation-audit reads from the running manager:
// the part of *systemd.Conn it needs, so tests can hand it a fake.
type SystemdUnits interface {
	Unit(ctx context.Context, name string) (*systemd.Unit, error)
	UnitByPID(ctx context.Context, pid int) (string, error)
	Close()
}

var _ SystemdUnits = (*systemd.Conn)(nil)

// SystemdDialer connects to the manager. Checks call it only once they know
// systemd is init, so a host without systemd never waits on a socket; the
// caller closes what it returns.
type SystemdDialer func(ctx context.Context) (SystemdUnits, error)

// DialSystemd returns a dialer for the manager opts names (empty: the
// host's, system bus first). A test reaches a booted container's
// manager with Options{Address: "unix:path=/proc/<pid>/root/run/dbus/system_bus_socket"}.
func DialSystemd(opts systemd.Options) SystemdDialer {
	return func(ctx context.Context) (SystemdUnits, error) {
		c, err := systemd.Dial(ctx, opts)
		if err != nil {
			// A nil *Conn in a non-nil interface would look usable.
			return nil, err
		}
		return c, nil
	}
}
