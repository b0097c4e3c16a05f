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

// Conn is one connection to systemd's manager, for calls and for the
// signals that end the jobs it starts (see doc.go for why one).
type Conn struct {
	bus     *godbus.Conn
	Address string
	cancel  context.CancelFunc // ends the connection's context (godbus closes it)

	jobsMu sync.Mutex
	jobs   map[godbus.ObjectPath]chan<- JobResult // waiting for JobRemoved

	watchMu sync.Mutex
	watch   chan *godbus.Signal // every signal, for Watch (signals.go); nil when none
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
		// The system bus first: systemd sends every client of its private
		// socket every signal it emits, which a start job makes dozens
		// of (each unit's PropertiesChanged), and decoding them made
		// `cellguard start` 1.5-2 ms slower than through the bus, which
		// forwards only the signals asked for (docs/performance.md). The
		// private socket still works where no bus daemon runs.
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

// connect dials address, authenticates, says Hello to a bus (systemd's
// private socket is peer-to-peer: no bus daemon, no Hello) and starts
// following JobRemoved signals, as go-systemd's connection does on its
// second connection.
func connect(ctx context.Context, address string) (*Conn, error) {
	bus, err := godbus.Dial(address, godbus.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	if err := bus.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		bus.Close()
		return nil, fmt.Errorf("auth: %w", err)
	}
	if !strings.HasSuffix(address, PrivateSocket) {
		if err := bus.Hello(); err != nil {
			bus.Close()
			return nil, fmt.Errorf("hello: %w", err)
		}
		// The bus forwards only the signals a client asks for; systemd's
		// private socket sends every client all of them.
		if err := bus.AddMatchSignal(godbus.WithMatchInterface(managerIface), godbus.WithMatchMember("JobRemoved")); err != nil {
			bus.Close()
			return nil, fmt.Errorf("subscribe to JobRemoved: %w", err)
		}
	}
	c := &Conn{bus: bus, Address: address, jobs: map[godbus.ObjectPath]chan<- JobResult{}}
	signals := make(chan *godbus.Signal, 64)
	bus.Signal(signals)
	go c.dispatch(signals)
	return c, nil
}

// dispatch hands each JobRemoved to the job's waiter, and every signal to
// Watch's reader when there is one; godbus closes signals when the
// connection closes.
func (c *Conn) dispatch(signals <-chan *godbus.Signal) {
	defer c.endWatch()
	for sig := range signals {
		c.toWatch(sig)
		if sig.Name != managerIface+".JobRemoved" {
			continue
		}
		var (
			id           uint32
			job          godbus.ObjectPath
			unit, result string
		)
		if err := godbus.Store(sig.Body, &id, &job, &unit, &result); err != nil {
			continue
		}
		c.jobsMu.Lock()
		if ch, ok := c.jobs[job]; ok {
			ch <- JobResult(result)
			delete(c.jobs, job)
		}
		c.jobsMu.Unlock()
	}
}

// Close closes the connection.
func (c *Conn) Close() {
	c.bus.Close()
	if c.cancel != nil {
		c.cancel()
	}
}

const managerIface = "org.freedesktop.systemd1.Manager"

func (c *Conn) manager() godbus.BusObject {
	return c.bus.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
}

// Version returns the Manager's Version property ("252.38-1~deb12u1").
func (c *Conn) Version(ctx context.Context) (string, error) {
	var v godbus.Variant
	err := c.manager().CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		managerIface, "Version").Store(&v)
	if err != nil {
		return "", fmt.Errorf("read systemd Version: %w", err)
	}
	s, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("read systemd Version: unexpected type %T", v.Value())
	}
	return s, nil
}

// KillModeNoneDeprecatedSince is the systemd release that started logging
// KillMode=none as deprecated and unsafe (systemd v246 NEWS); it still
// honours it.
const KillModeNoneDeprecatedSince = 246

// DelegateListSince is the first systemd whose Delegate= takes a list of
// controllers (systemd v236 NEWS: "Delegate= now optionally takes a list of
// controllers (instead of a boolean, as before)"). systemd 229 ignores the
// list and reads back Delegate=false; its Delegate=yes kept every controller
// of a running unit's subtree in place when a new unit started (measured,
// src/tests/harness/seed000-matrix.sh, layouts +protect and +yes on xenial).
const DelegateListSince = 236

// ParseVersion returns the major version of systemd from the Manager's
// Version property or from `systemctl --version`: "252.38-1~deb12u1" ->
// 252, "v256.5" -> 256, "256~rc3" -> 256, "245 (245.4-4ubuntu3)" -> 245,
// "systemd 252 (252.39-1~deb12u2)\n+PAM ..." -> 252.
func ParseVersion(s string) (int, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, "systemd"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		line = strings.TrimSpace(rest)
	}
	v := strings.TrimPrefix(line, "v")
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, fmt.Errorf("parse systemd version %q: no version number", line)
	}
	n, err := strconv.Atoi(v[:end])
	if err != nil {
		return 0, fmt.Errorf("parse systemd version %q: %w", line, err)
	}
	return n, nil
}

// Reload is `daemon-reload`: systemd rereads unit files.
func (c *Conn) Reload(ctx context.Context) error {
	if err := c.manager().CallWithContext(ctx, managerIface+".Reload", 0).Store(); err != nil {
		return fmt.Errorf("reload systemd: %w", err)
	}
	return nil
}

// JobResult is what systemd says of a finished job.
type JobResult string

// Explain puts a job result in words for an operator.
func (r JobResult) Explain() string {
	switch r {
	case "done":
		return "done: the job completed"
	case "canceled":
		return "canceled: another job replaced it before it finished (someone started or stopped the unit meanwhile)"
	case "timeout":
		return "timeout: the unit did not finish starting or stopping within its TimeoutStartSec/TimeoutStopSec"
	case "failed":
		return "failed: the command exited non-zero, was killed, or the unit's main process could not be found"
	case "dependency":
		return "dependency: a unit this one requires failed"
	case "skipped":
		return "skipped: the job did not apply in the unit's current state"
	}
	return string(r) + ": unknown job result"
}

// Start starts unit (mode "replace") and waits for the job to finish.
func (c *Conn) Start(ctx context.Context, unit string) (JobResult, error) {
	return c.job(ctx, "start", "StartUnit", unit)
}

// Stop stops unit (mode "replace") and waits for the job to finish.
func (c *Conn) Stop(ctx context.Context, unit string) (JobResult, error) {
	return c.job(ctx, "stop", "StopUnit", unit)
}

// job enqueues a job with method and waits for its JobRemoved. The waiter
// is registered before dispatch can see the signal: dispatch takes jobsMu
// to deliver, and the call holds it until the job's path is known.
func (c *Conn) job(ctx context.Context, verb, method, unit string) (JobResult, error) {
	ch := make(chan JobResult, 1)
	var job godbus.ObjectPath
	c.jobsMu.Lock()
	err := c.manager().CallWithContext(ctx, managerIface+"."+method, 0, unit, "replace").Store(&job)
	if err == nil {
		c.jobs[job] = ch
	}
	c.jobsMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		c.jobsMu.Lock()
		delete(c.jobs, job)
		c.jobsMu.Unlock()
		return "", fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, ctx.Err())
	}
}

// UnitByPID returns the name of the unit whose cgroup holds pid.
func (c *Conn) UnitByPID(ctx context.Context, pid int) (string, error) {
	var path godbus.ObjectPath
	err := c.manager().CallWithContext(ctx, managerIface+".GetUnitByPID", 0, uint32(pid)).Store(&path)
	var id godbus.Variant
	if err == nil {
		err = c.bus.Object("org.freedesktop.systemd1", path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
			"org.freedesktop.systemd1.Unit", "Id").Store(&id)
	}
	name, ok := id.Value().(string)
	if err == nil && !ok {
		err = fmt.Errorf("unit Id of type %T", id.Value())
	}
	if err != nil {
		return "", fmt.Errorf("find unit of pid %d: %w", pid, err)
	}
	return name, nil
}

// SetUnitProperties sets properties at runtime (not persisted), like
// `systemctl set-property --runtime`.
func (c *Conn) SetUnitProperties(ctx context.Context, unit string, props ...sd.Property) error {
	if err := c.manager().CallWithContext(ctx, managerIface+".SetUnitProperties", 0, unit, true, props).Store(); err != nil {
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
