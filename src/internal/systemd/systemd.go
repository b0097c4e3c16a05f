package systemd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// Well-known sockets, relative to a root.
const (
	PrivateSocket   = "/run/systemd/private"
	SystemBusSocket = "/run/dbus/system_bus_socket"
)

const (
	managerName  = "org.freedesktop.systemd1"
	managerPath  = "/org/freedesktop/systemd1"
	managerIface = "org.freedesktop.systemd1.Manager"
)

// ErrNoSystemd means systemd is not the init system here (bosh-lite and
// warden containers), so there is nothing to talk to.
var ErrNoSystemd = errors.New("systemd is not running as init (no /run/systemd/system)")

// Booted reports whether systemd is PID 1 of the system under root, by the
// same test as sd_booted(3).
func Booted(root string) bool {
	fi, err := os.Lstat(filepath.Join(root, "/run/systemd/system"))
	return err == nil && fi.IsDir()
}

// Options choose how to reach systemd.
type Options struct {
	// Address is a D-Bus address ("unix:path=/proc/123/root/run/dbus/system_bus_socket").
	// Empty means: the system bus, then systemd's private socket.
	Address string
}

// Conn is go-systemd's connection to systemd's manager (its dbus.Conn,
// which makes the calls and follows the jobs cellguard starts), with the
// two godbus connections it was handed: calls, for the methods go-systemd
// lacks (GetUnitProcesses; the Manager's Version under a context), and
// signals, which Watch reads beside go-systemd (signals.go).
type Conn struct {
	sd      *sd.Conn
	calls   *godbus.Conn
	signals *godbus.Conn
	Address string
	cancel  context.CancelFunc // ends the connections' context (godbus closes them)

	watchMu  sync.Mutex
	watching bool
}

// DialTimeout bounds each address's connect and authentication handshake
// when ctx allows longer: a socket that accepts and never answers (a wedged
// systemd, a stale socket bound by something else) must give an error, not
// hang a monit start program or a BOSH pre-start. Tests lower it.
var DialTimeout = 15 * time.Second

// Dial connects to systemd. It honours ctx for the whole handshake: a hung
// socket gives an error, not a hung monit start program.
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	addrs := []string{opts.Address}
	if opts.Address == "" {
		// The system bus first, as go-systemd's NewWithContext: systemd
		// sends every client of its private socket every signal it emits,
		// which a start job makes dozens of, while the bus forwards only
		// the signals asked for (docs/performance.md). The private socket
		// still works where no bus daemon runs.
		addrs = []string{"unix:path=" + SystemBusSocket, "unix:path=" + PrivateSocket}
	}
	var errs []error
	for _, a := range addrs {
		c, err := dialOne(ctx, a)
		if err == nil {
			return c, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connect to systemd over D-Bus: %w", errors.Join(errs...))
}

func dialOne(ctx context.Context, address string) (*Conn, error) {
	type result struct {
		c   *Conn
		err error
	}
	done := make(chan result, 1)
	// godbus closes a connection when its context ends: cancelling dctx
	// unblocks a handshake stuck reading from a silent peer. The connection
	// outlives ctx (callers reuse it across operations with their own
	// contexts): only our cancel, on abandon or Close, ends it.
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		c, err := connect(dctx, address)
		if err != nil {
			done <- result{err: err}
			return
		}
		c.cancel = cancel
		done <- result{c: c}
	}()
	abandon := func() {
		cancel()
		go func() { // close whatever the abandoned dial produces
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
	}
	timer := time.NewTimer(DialTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
		}
		return r.c, r.err
	case <-ctx.Done():
		abandon()
		return nil, fmt.Errorf("dial: %w", ctx.Err())
	case <-timer.C:
		abandon()
		return nil, fmt.Errorf("dial: no answer within %s: %w", DialTimeout, context.DeadlineExceeded)
	}
}

// connect makes go-systemd's connection to address. go-systemd dials
// twice (one connection for calls, one for the JobRemoved signals); each
// dial authenticates and says Hello to a bus (systemd's private socket is
// peer to peer: no bus daemon, no Hello), as go-systemd's own
// NewSystemConnectionContext and NewSystemdConnectionContext do (go-systemd
// v22.7.0, dbus/dbus.go), but to the address cellguard was given (a box's
// bus, /proc/PID/root/...).
func connect(ctx context.Context, address string) (*Conn, error) {
	private := strings.HasSuffix(address, PrivateSocket)
	var dialed []*godbus.Conn
	conn, err := sd.NewConnection(func() (*godbus.Conn, error) {
		bus, err := godbus.Dial(address, godbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := bus.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			bus.Close()
			return nil, fmt.Errorf("auth: %w", err)
		}
		if !private {
			if err := bus.Hello(); err != nil {
				bus.Close()
				return nil, fmt.Errorf("hello: %w", err)
			}
		}
		dialed = append(dialed, bus)
		return bus, nil
	})
	if err != nil {
		return nil, err
	}
	return &Conn{sd: conn, calls: dialed[0], signals: dialed[1], Address: address}, nil
}

// Close closes the connection.
func (c *Conn) Close() {
	c.sd.Close()
	if c.cancel != nil {
		c.cancel()
	}
}

// manager is systemd's manager object on the calls connection.
func (c *Conn) manager() godbus.BusObject { return c.calls.Object(managerName, managerPath) }

// Version returns the Manager's Version property ("252.38-1~deb12u1").
// go-systemd's GetManagerProperty takes no context.
func (c *Conn) Version(ctx context.Context) (string, error) {
	var v godbus.Variant
	err := c.manager().CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, managerIface, "Version").Store(&v)
	if err != nil {
		return "", fmt.Errorf("read systemd Version: %w", err)
	}
	s, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("read systemd Version: unexpected type %T", v.Value())
	}
	return s, nil
}

// Reload is `daemon-reload`: systemd rereads unit files.
func (c *Conn) Reload(ctx context.Context) error {
	if err := c.sd.ReloadContext(ctx); err != nil {
		return fmt.Errorf("reload systemd: %w", err)
	}
	return nil
}

// Start starts unit (mode "replace") and waits for the job to finish.
func (c *Conn) Start(ctx context.Context, unit string) (JobResult, error) {
	return job(ctx, "start", unit, c.sd.StartUnitContext)
}

// Stop stops unit (mode "replace") and waits for the job to finish.
func (c *Conn) Stop(ctx context.Context, unit string) (JobResult, error) {
	return job(ctx, "stop", unit, c.sd.StopUnitContext)
}

// job enqueues a job and waits for go-systemd to hand over its result. The
// channel has room for it: go-systemd sends while it holds its job table's
// lock, so a waiter that gave up must not block it.
func job(ctx context.Context, verb, unit string,
	enqueue func(context.Context, string, string, chan<- string) (int, error)) (JobResult, error) {
	done := make(chan string, 1)
	if _, err := enqueue(ctx, unit, "replace", done); err != nil {
		return "", fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	select {
	case r := <-done:
		return JobResult(r), nil
	case <-ctx.Done():
		return "", fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, ctx.Err())
	}
}

// UnitByPID returns the name of the unit whose cgroup holds pid.
func (c *Conn) UnitByPID(ctx context.Context, pid int) (string, error) {
	name, err := c.sd.GetUnitNameByPID(ctx, uint32(pid))
	if err != nil {
		return "", fmt.Errorf("find unit of pid %d: %w", pid, err)
	}
	return name, nil
}

// SetUnitProperties sets properties at runtime (not persisted), like
// `systemctl set-property --runtime`.
func (c *Conn) SetUnitProperties(ctx context.Context, unit string, props ...sd.Property) error {
	if err := c.sd.SetUnitPropertiesContext(ctx, unit, true, props...); err != nil {
		return fmt.Errorf("set properties of %s: %w", unit, err)
	}
	return nil
}

// RealizeCgroups makes systemd realize a running unit's cgroups now, in every
// controller its (new) delegation asks for, by setting TasksMax=infinity at
// runtime: the value cellguard's drop-ins set anyway, so nothing changes but
// the realization. Without it a Delegate= added by a drop-in only takes
// effect at the next realization event, and until then the unit's
// processes sit outside its (unrealized) cgroup in v1 cpu and blkio, where the
// next brand-new unit moves them to the slice.
func (c *Conn) RealizeCgroups(ctx context.Context, unit string) error {
	return c.SetUnitProperties(ctx, unit, sd.Property{Name: "TasksMax", Value: godbus.MakeVariant(uint64(math.MaxUint64))})
}
