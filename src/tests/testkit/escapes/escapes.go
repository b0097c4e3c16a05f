// Package escapes makes seed-000 escapes on demand in an sdbox, as many
// as a test or benchmark needs: each round runs a real runc container
// (Debian's runc, busybox sleeping) from a plain transient unit in a slice
// of its own, and its trigger starts a brand-new unit with CPU and IO
// accounting in that slice, so systemd moves the container's cpu and blkio
// into the unit's cgroup. A fresh slice per round matters: once systemd
// has realized a controller for a slice, another new unit there moves
// nothing (../shared/harness/FINDINGS.md).
//
// Only test code imports this package.
package escapes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// RuncRoot is where the rounds' runc keeps its state in the box.
const RuncRoot = "/run/runc"

const rootfs = "/var/lib/escapes/rootfs"

// Kit makes rounds in one box over a D-Bus connection of its own.
type Kit struct {
	box  *sdbox.Box
	conn *godbus.Conn
	mu   sync.Mutex
	jobs map[godbus.ObjectPath]chan string
}

// Round is one container and its trigger.
type Round struct {
	N         int
	Slice     string // r<N>.slice
	Unit      string // the container's unit, g<N>.service
	Trigger   string // t<N>.service
	Container string // c<N>
	Cgroup    string // the cgroup runc records: /r<N>.slice/g<N>.service/garden/c<N>
	PID       int    // the container's init, host-side pid numbering of the box
}

// New installs runc and a busybox rootfs in the box and connects to its
// systemd (box.SystemBusAddress).
func New(ctx context.Context, box *sdbox.Box) (*Kit, error) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, fmt.Errorf("runc not installed on the host (apt-get install runc): %w", err)
	}
	if _, err := box.ReadFile("/usr/local/sbin/runc"); err != nil {
		if err := box.CopyIn(runc, "/usr/local/sbin/runc", 0o755); err != nil {
			return nil, err
		}
	}
	if err := box.CopyIn("/bin/busybox", rootfs+"/bin/busybox", 0o755); err != nil {
		return nil, fmt.Errorf("busybox-static: %w", err)
	}
	if out, err := box.Exec(ctx, "ln", "-sf", "busybox", rootfs+"/bin/sleep"); err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	conn, err := godbus.Dial(box.SystemBusAddress)
	if err != nil {
		return nil, fmt.Errorf("dial the box's bus: %w", err)
	}
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("auth: %w", err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	k := &Kit{box: box, conn: conn, jobs: map[godbus.ObjectPath]chan string{}}
	if err := conn.AddMatchSignal(godbus.WithMatchInterface("org.freedesktop.systemd1.Manager"), godbus.WithMatchMember("JobRemoved")); err != nil {
		conn.Close()
		return nil, fmt.Errorf("add match: %w", err)
	}
	if err := k.manager().Call("org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
		conn.Close()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	ch := make(chan *godbus.Signal, 256)
	conn.Signal(ch)
	go func() {
		for s := range ch {
			if s.Name != "org.freedesktop.systemd1.Manager.JobRemoved" || len(s.Body) < 4 {
				continue
			}
			job, _ := s.Body[1].(godbus.ObjectPath)
			result, _ := s.Body[3].(string)
			k.mu.Lock()
			if c, ok := k.jobs[job]; ok {
				c <- result
				delete(k.jobs, job)
			}
			k.mu.Unlock()
		}
	}()
	return k, nil
}

// Box is the kit's box.
func (k *Kit) Box() *sdbox.Box { return k.box }

// Close ends the kit's connection.
func (k *Kit) Close() { k.conn.Close() }

func (k *Kit) manager() godbus.BusObject {
	return k.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
}

type property struct {
	Name  string
	Value godbus.Variant
}

type execCommand struct {
	Path          string
	Args          []string
	UncleanIsFail bool
}

// StartUnit starts a transient service running argv with props and
// returns when systemd's JobRemoved for it arrived on the kit's connection,
// with that moment: what a watcher on the bus sees as "the job finished".
func (k *Kit) StartUnit(ctx context.Context, name, slice string, argv []string, props map[string]any) (time.Time, error) {
	ps := []property{
		{"ExecStart", godbus.MakeVariant([]execCommand{{argv[0], argv, false}})},
		{"Slice", godbus.MakeVariant(slice)},
	}
	for n, v := range props {
		ps = append(ps, property{n, godbus.MakeVariant(v)})
	}
	done := make(chan string, 1)
	// The job path is known only from the reply; hold the lock so its
	// JobRemoved cannot be handled before the path is registered.
	k.mu.Lock()
	var job godbus.ObjectPath
	err := k.manager().CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StartTransientUnit", 0,
		name, "replace", ps, []struct {
			Name  string
			Props []property
		}{}).Store(&job)
	if err == nil {
		k.jobs[job] = done
	}
	k.mu.Unlock()
	if err != nil {
		return time.Time{}, fmt.Errorf("start %s: %w", name, err)
	}
	select {
	case r := <-done:
		at := time.Now()
		if r != "done" {
			return at, fmt.Errorf("start %s: job %s", name, r)
		}
		return at, nil
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("start %s: %w", name, ctx.Err())
	}
}

// Start runs round n's container and waits until runc recorded its init.
func (k *Kit) Start(ctx context.Context, n int) (*Round, error) {
	r := &Round{N: n, Slice: fmt.Sprintf("r%d.slice", n), Unit: fmt.Sprintf("g%d.service", n),
		Trigger: fmt.Sprintf("t%d.service", n), Container: fmt.Sprintf("c%d", n)}
	r.Cgroup = fmt.Sprintf("/%s/%s/garden/%s", r.Slice, r.Unit, r.Container)
	bundle := "/var/lib/escapes/" + r.Container
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{"terminal": false, "user": map[string]any{"uid": 0, "gid": 0},
			"args": []string{"sleep", "100000"}, "env": []string{"PATH=/bin"}, "cwd": "/"},
		"root":     map[string]any{"path": rootfs, "readonly": true},
		"hostname": r.Container,
		"mounts":   []map[string]any{{"destination": "/proc", "type": "proc", "source": "proc"}},
		"linux": map[string]any{
			"cgroupsPath": r.Cgroup,
			"namespaces":  []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
		},
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := k.box.WriteFile(bundle+"/config.json", b, 0o644); err != nil {
		return nil, err
	}
	// As Garden under monit: the daemon runs `runc run -d` and lives on.
	script := fmt.Sprintf("runc --root %s run -d --no-new-keyring --bundle %s %s </dev/null >%s/run.log 2>&1; exec sleep infinity",
		RuncRoot, bundle, r.Container, bundle)
	if _, err := k.StartUnit(ctx, r.Unit, r.Slice, []string{"/bin/sh", "-c", script}, nil); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := k.box.ReadFile(RuncRoot + "/" + r.Container + "/state.json")
		if err == nil {
			var st struct {
				Pid int `json:"init_process_pid"`
			}
			if json.Unmarshal(b, &st) == nil && st.Pid > 0 {
				r.PID = st.Pid
				return r, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			log, _ := k.box.ReadFile(bundle + "/run.log")
			return nil, fmt.Errorf("runc did not start %s: %s", r.Container, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Trigger starts round r's trigger unit (CPUAccounting, CPUWeight,
// IOWeight) in its slice. It returns when the job finished, as seen on the
// bus, once systemd has moved the container's cpu and blkio.
func (k *Kit) Trigger(ctx context.Context, r *Round) (time.Time, error) {
	at, err := k.StartUnit(ctx, r.Trigger, r.Slice, []string{"/bin/sleep", "infinity"},
		map[string]any{"CPUAccounting": true, "CPUWeight": uint64(50), "IOWeight": uint64(50)})
	if err != nil {
		return at, err
	}
	// One more call, whose reply comes after the moves the start made
	// (garden.SettleArgs says why).
	if _, err := k.manager().GetProperty("org.freedesktop.systemd1.Manager.Version"); err != nil {
		return at, fmt.Errorf("after starting %s: %w", r.Trigger, err)
	}
	return at, nil
}

// Moved returns the hierarchies (as /proc/<pid>/cgroup names them) where
// the container's init is outside its recorded cgroup.
func (k *Kit) Moved(r *Round) ([]string, error) {
	m, err := k.box.ReadCgroup(r.PID)
	if err != nil {
		return nil, err
	}
	var out []string
	for h, p := range m {
		if h == "" || strings.HasPrefix(h, "name=") || h == "cpuset" || h == "freezer" {
			continue // v2, name=systemd: systemd's own; cpuset, freezer: never moved
		}
		if p != r.Cgroup {
			out = append(out, h)
		}
	}
	return out, nil
}

// Remove deletes the round's container and stops its units: a container's
// init ignores the SIGTERM systemd sends at the box's shutdown.
func (k *Kit) Remove(ctx context.Context, r *Round) {
	k.box.Exec(ctx, "runc", "--root", RuncRoot, "delete", "--force", r.Container) //nolint:errcheck // best effort at cleanup
	k.box.Exec(ctx, "systemctl", "stop", r.Trigger, r.Unit, r.Slice)              //nolint:errcheck
	k.box.Exec(ctx, "rm", "-rf", "/var/lib/escapes/"+r.Container)                 //nolint:errcheck
}
