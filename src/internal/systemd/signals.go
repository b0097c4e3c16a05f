package systemd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// EventKind says what systemd signalled.
type EventKind string

const (
	// JobFinished is Manager.JobRemoved: a start, stop, reload or restart
	// job ended. Starting a unit realizes cgroups (the seed-000 moment)
	// before its job ends.
	JobFinished EventKind = "job"
	// UnitNew is Manager.UnitNew: a unit object was loaded.
	UnitNew EventKind = "unit"
	// CgroupChanged is PropertiesChanged on a unit's cgroup settings or
	// its control group (systemctl set-property realizes at once, with no
	// job).
	CgroupChanged EventKind = "property"
	// Reloaded is Manager.Reloading(false): a daemon-reload or
	// daemon-reexec finished.
	Reloaded EventKind = "reload"
	// ManagerRestarted means org.freedesktop.systemd1 got a new owner on
	// the bus: systemd re-executed (daemon-reexec) or restarted. Its
	// subscription list survives a reexec, but Subscribe is sent again.
	ManagerRestarted EventKind = "manager"
)

// Event is one signal that may have changed where processes are.
type Event struct {
	Kind EventKind
	// Unit is the unit the signal is about, when it names one.
	Unit string
	// At is when the signal was read off the connection.
	At time.Time
}

// cgroupProperties are the properties whose change, announced in
// PropertiesChanged, means systemd (re)realized a unit's cgroups. Measured
// on systemd 252: a unit start announces ControlGroup on its type's
// interface (org.freedesktop.systemd1.Service, ...) before JobRemoved;
// `systemctl set-property` (with or without --runtime) announces nothing
// at all, so a realization it causes is seen only by the period's scan
// (docs/validator.md).
var cgroupProperties = map[string]bool{
	"ControlGroup": true, "Delegate": true, "DelegateControllers": true,
	"CPUAccounting": true, "CPUWeight": true, "StartupCPUWeight": true, "CPUShares": true, "StartupCPUShares": true,
	"CPUQuotaPerSecUSec": true, "AllowedCPUs": true, "AllowedMemoryNodes": true,
	"IOAccounting": true, "IOWeight": true, "StartupIOWeight": true, "BlockIOAccounting": true, "BlockIOWeight": true,
	"StartupBlockIOWeight": true, "IODeviceWeight": true, "BlockIODeviceWeight": true,
	"MemoryAccounting": true, "MemoryMin": true, "MemoryLow": true, "MemoryHigh": true, "MemoryMax": true,
	"MemorySwapMax": true, "MemoryLimit": true,
	"TasksAccounting": true, "TasksMax": true, "DevicePolicy": true, "DeviceAllow": true,
	"IPAccounting": true, "Slice": true,
}

// cgroupInterfaces are the unit types with a cgroup of their own.
var cgroupInterfaces = []string{
	"org.freedesktop.systemd1.Service", "org.freedesktop.systemd1.Scope", "org.freedesktop.systemd1.Slice",
	"org.freedesktop.systemd1.Socket", "org.freedesktop.systemd1.Mount", "org.freedesktop.systemd1.Swap",
}

const (
	propertiesIface = "org.freedesktop.DBus.Properties"
	busIface        = "org.freedesktop.DBus"
	unitPathPrefix  = "/org/freedesktop/systemd1/unit"
)

// EventBuffer is how many signals may wait unread: a storm of unit starts
// sends dozens per start, and a reader that falls behind drops (it scans
// anyway) rather than pile them up.
const EventBuffer = 4096

// Watch subscribes to the signals after which processes may have moved
// and returns them as Events. They arrive on go-systemd's signal
// connection, which godbus hands every signal to each of its readers:
// go-systemd's (job results) and Watch's. The channel is closed when the
// connection is lost (systemd's private socket closes on daemon-reexec;
// the bus connection when dbus-daemon goes away) or ctx ends: the caller
// dials again. The connection should be one of the watcher's own: the
// match rules stay for its whole life, and a connection has at most one
// Watch.
func (c *Conn) Watch(ctx context.Context) (<-chan Event, error) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.watching {
		return nil, errors.New("watch systemd: this connection is watched already")
	}
	if !strings.HasSuffix(c.Address, PrivateSocket) {
		// On a bus, signals reach us only through match rules (go-systemd
		// added JobRemoved's); a private socket (peer to peer, no bus
		// daemon) delivers every signal.
		for _, r := range watchRules() {
			if err := c.signals.AddMatchSignalContext(ctx, r...); err != nil {
				return nil, fmt.Errorf("watch systemd: add match: %w", err)
			}
		}
	}
	if err := c.subscribe(ctx); err != nil {
		return nil, err
	}
	raw := make(chan *godbus.Signal, EventBuffer)
	c.signals.Signal(raw)
	c.watching = true
	out := make(chan Event, EventBuffer)
	go c.forward(ctx, raw, out)
	return out, nil
}

// watchRules are the match rules Watch adds on a bus.
func watchRules() [][]godbus.MatchOption {
	rules := [][]godbus.MatchOption{
		{godbus.WithMatchInterface(managerIface), godbus.WithMatchMember("UnitNew")},
		{godbus.WithMatchInterface(managerIface), godbus.WithMatchMember("Reloading")},
		{godbus.WithMatchInterface(busIface), godbus.WithMatchMember("NameOwnerChanged"),
			godbus.WithMatchArg(0, managerName)},
	}
	// PropertiesChanged only on the interfaces of units that have
	// cgroups, where ControlGroup lives: the Unit interface's, which
	// every state change sends with ~60 properties, were most of the
	// signals (and of watch's CPU) in a storm of unit starts
	// (docs/performance.md).
	for _, iface := range cgroupInterfaces {
		rules = append(rules, []godbus.MatchOption{godbus.WithMatchInterface(propertiesIface),
			godbus.WithMatchMember("PropertiesChanged"), godbus.WithMatchPathNamespace(unitPathPrefix),
			godbus.WithMatchArg(0, iface)})
	}
	return rules
}

// forward turns raw signals into Events until the connection closes raw
// or ctx ends, then closes out.
func (c *Conn) forward(ctx context.Context, raw chan *godbus.Signal, out chan<- Event) {
	defer close(out)
	defer c.signals.RemoveSignal(raw)
	for {
		select {
		case <-ctx.Done():
			return
		case s, ok := <-raw:
			if !ok {
				return // godbus closed it: the connection is gone
			}
			e, ok := toEvent(s)
			if !ok {
				continue
			}
			if e.Kind == ManagerRestarted {
				// A new systemd on the bus: make sure it knows we listen.
				if err := c.subscribe(ctx); err != nil {
					return // the caller dials again
				}
			}
			select {
			case out <- e:
			default: // the reader is behind: it scans anyway, drop
			}
		}
	}
}

// subscribe asks systemd to emit unit and job signals, which it sends
// only while some client is subscribed; on a bus the subscriber is the
// connection that asks, so it asks on the one that listens.
func (c *Conn) subscribe(ctx context.Context) error {
	err := c.signals.Object(managerName, managerPath).CallWithContext(ctx, managerIface+".Subscribe", 0).Err
	var de godbus.Error
	if errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.AlreadySubscribed" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("watch systemd: subscribe: %w", err)
	}
	return nil
}

// toEvent keeps the signals that may move processes.
func toEvent(s *godbus.Signal) (Event, bool) {
	e := Event{At: time.Now()}
	switch s.Name {
	case managerIface + ".JobRemoved":
		// (id u, job o, unit s, result s)
		e.Kind = JobFinished
		if len(s.Body) >= 3 {
			e.Unit, _ = s.Body[2].(string)
		}
	case managerIface + ".UnitNew":
		// (id s, unit o)
		e.Kind = UnitNew
		if len(s.Body) >= 1 {
			e.Unit, _ = s.Body[0].(string)
		}
	case managerIface + ".Reloading":
		// true when it starts, false when it is done.
		if len(s.Body) < 1 || s.Body[0] != false {
			return e, false
		}
		e.Kind = Reloaded
	case propertiesIface + ".PropertiesChanged":
		// (interface s, changed a{sv}, invalidated as)
		if !strings.HasPrefix(string(s.Path), unitPathPrefix+"/") || len(s.Body) < 3 {
			return e, false
		}
		if iface, _ := s.Body[0].(string); !slices.Contains(cgroupInterfaces, iface) || !touchesCgroups(s.Body[1], s.Body[2]) {
			return e, false
		}
		e.Kind = CgroupChanged
		e.Unit = unescapeUnitPath(string(s.Path))
	case busIface + ".NameOwnerChanged":
		// (name s, old s, new s): a new owner of systemd's name.
		if len(s.Body) < 3 || s.Body[0] != managerName || s.Body[2] == "" {
			return e, false
		}
		e.Kind = ManagerRestarted
	default:
		return e, false
	}
	return e, true
}

func touchesCgroups(changed, invalidated any) bool {
	if m, ok := changed.(map[string]godbus.Variant); ok {
		for k := range m {
			if cgroupProperties[k] {
				return true
			}
		}
	}
	if l, ok := invalidated.([]string); ok {
		for _, k := range l {
			if cgroupProperties[k] {
				return true
			}
		}
	}
	return false
}

// unescapeUnitPath turns /org/freedesktop/systemd1/unit/garden_2eservice
// back into garden.service (systemd's bus_label_escape: _XX is a hex byte).
func unescapeUnitPath(p string) string {
	s := strings.TrimPrefix(p, unitPathPrefix+"/")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && i+2 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &v); err == nil {
				b.WriteByte(v)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
