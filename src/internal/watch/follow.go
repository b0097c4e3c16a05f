package watch

import (
	"context"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
)

// Source yields systemd's events over one connection at a time.
type Source interface {
	// Connect subscribes; the channel closes when the connection is lost
	// or ctx ends. address says where it connected, for the log.
	Connect(ctx context.Context) (events <-chan systemd.Event, address string, err error)
}

// DBus is the Source on the host's (or a box's) systemd.
type DBus struct {
	Options systemd.Options
}

// Connect dials systemd and subscribes; the connection is closed when
// the events end.
func (d DBus) Connect(ctx context.Context) (<-chan systemd.Event, string, error) {
	c, err := systemd.Dial(ctx, d.Options)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	in, err := c.Watch(ctx)
	if err != nil {
		cancel()
		c.Close()
		return nil, "", err
	}
	out := make(chan systemd.Event, systemd.EventBuffer)
	go func() {
		defer cancel()
		defer c.Close()
		defer close(out)
		for e := range in {
			out <- e
		}
	}()
	return out, c.Address, nil
}

// follow keeps a subscription to systemd: it dials, passes events on, and
// when the connection goes (daemon-reexec on the private socket,
// dbus-daemon restarting) says so and dials again with backoff. A
// reconnect asks for a scan: events may have been missed meanwhile.
func (w *Watcher) follow(ctx context.Context, out chan<- systemd.Event) {
	wait := RetryMin
	connected := false
	for ctx.Err() == nil {
		events, addr, err := w.cfg.Systemd.Connect(ctx)
		if err != nil {
			w.m.SystemdConnected.Set(0)
			w.log.Error("systemd-connect-failed", err, lager.Data{"retry_in": wait.String(),
				"hint": "scans go on every period meanwhile"})
			if !sleep(ctx, wait) {
				return
			}
			wait = min(wait*2, RetryMax)
			continue
		}
		wait = RetryMin
		w.m.SystemdConnected.Set(1)
		if connected {
			w.m.SystemdReconnects.Inc()
			w.log.Info("systemd-reconnected", lager.Data{"address": addr})
			out <- systemd.Event{Kind: TriggerReconnect}
		} else {
			w.log.Info("systemd-connected", lager.Data{"address": addr})
		}
		connected = true
		for e := range events {
			w.log.Debug("event", lager.Data{"kind": e.Kind, "unit": e.Unit})
			if e.Kind == systemd.ManagerRestarted {
				w.log.Info("systemd-restarted", lager.Data{"address": addr})
			}
			select {
			case out <- e:
			default: // a scan is due anyway
			}
		}
		if ctx.Err() != nil {
			return
		}
		w.m.SystemdConnected.Set(0)
		w.log.Error("systemd-connection-lost", nil, lager.Data{"address": addr, "retry_in": wait.String()})
		if !sleep(ctx, wait) {
			return
		}
	}
}
