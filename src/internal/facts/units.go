package facts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// Daemon is a configured daemon whose unit is read.
type Daemon struct {
	// Name is the daemon's config name; its unit is cellguard-<name>.service.
	Name string
	// PIDFile, when set and naming a live process, adds the unit that
	// actually holds the daemon (it may not be cellguard's).
	PIDFile string
}

// SystemdUnits is what the unit provider reads from the running manager:
// the part of *systemd.Conn it needs, so tests can hand it a fake.
type SystemdUnits interface {
	Unit(ctx context.Context, name string) (*systemd.Unit, error)
	UnitByPID(ctx context.Context, pid int) (string, error)
	Close()
}

var _ SystemdUnits = (*systemd.Conn)(nil)

// SystemdDialer connects to the manager. The provider calls it only once
// it knows systemd is init, so a host without systemd never waits on a
// socket; the caller closes what it returns.
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

// UnitFacts is what delegation-audit judges: the units of the configured
// daemons, of the units delegated in place and above every container.
type UnitFacts struct {
	// Err: the snapshot could not be read, the manager could not be
	// reached, or the deadline passed while reading.
	Err  error
	Root string
	// Booted: systemd is init under Root; otherwise nothing else is read.
	Booted bool
	// Dialer: a connection to the manager was configured; otherwise
	// nothing else is read.
	Dialer bool
	Mode   cgroup.Mode
	// Daemons, InPlace and Groups are in the order configured and found.
	Daemons []DaemonUnits
	InPlace []UnitRead
	// Unplaced are containers whose state records no cgroup on a mounted
	// hierarchy.
	Unplaced []Unplaced
	Groups   []ContainerGroup
	// Containers counts the containers placed; UnitsRead the distinct
	// units asked for.
	Containers, UnitsRead int
}

// UnitRead is one unit's properties, or why they could not be read.
type UnitRead struct {
	Name string
	Unit *systemd.Unit
	Err  error
}

// DaemonUnits is a daemon's unit and, when its pidfile names a process,
// the unit that holds that process.
type DaemonUnits struct {
	Daemon Daemon
	Unit   UnitRead
	// PID is the pidfile's process; PIDErr why it could not be read (the
	// daemon is not running).
	PID    int
	PIDErr error
	// Gone: the manager did not know the pid and /proc has no such process
	// (a stale pidfile). HolderErr: it did not know it otherwise.
	Gone      bool
	HolderErr error
	// Holder is the unit holding PID; its Name is Unit's when that is the
	// daemon's own, "" when not asked.
	Holder UnitRead
}

// Unplaced is a container whose state records no cgroup on a mounted
// hierarchy.
type Unplaced struct{ Name, StatePath string }

// ContainerGroup is the containers below one unit (or, outside every
// unit, below one parent cgroup).
type ContainerGroup struct {
	Unit       string // the deepest unit above them; "" outside every unit
	Parent     string // outside every unit: their parent cgroup
	Own        bool   // the cgroup is the unit's own (a scope of runc's systemd driver)
	Containers []string
	Cgroups    []string
	Chain      []string // the units on the path, root first
	Read       UnitRead // Unit's properties; zero when Unit is ""
	// Top is, outside every unit on the unified hierarchy and below a
	// top-level cgroup (Garden's /garden), that cgroup: what decides
	// whether systemd can disable their controllers. Nil otherwise.
	Top *TopCgroup
	// Slice is, on the unified hierarchy below a slice (a privileged
	// container of Garden's at /system.slice/<h>), the units realized in
	// that slice: what decides whether systemd keeps its controllers. Nil
	// otherwise.
	Slice *SliceMembers
}

// SliceMembers is a slice's cgroup and the service and scope units
// realized in it (its child cgroups named as units, each read). systemd
// enables in a slice's cgroup.subtree_control what its loaded members
// need, their delegated controllers included (src/core/cgroup.c,
// unit_get_members_mask over UNIT_ATOM_SLICE_OF, systemd 255), so an active
// member that delegates keeps them there through every daemon-reload.
// Sub-slices are not followed.
type SliceMembers struct {
	Cgroup string // "/system.slice"
	// Offered is the root's cgroup.controllers, what the kernel has to give.
	Offered []string
	Units   []UnitRead
	Err     error // the slice's cgroup or the root's controllers could not be read
}

// TopCgroup is a top-level cgroup no unit owns and the controllers it
// passes down. systemd writes "-cpu" and the like only into the
// subtree_control of the root and of its units' cgroups; the kernel refuses
// that write at the root (EBUSY) while a child such as /garden still enables
// the controller in its own subtree_control.
type TopCgroup struct {
	Cgroup string // "/garden"
	// SubtreeControl is its cgroup.subtree_control; Offered the root's
	// cgroup.controllers, what the kernel has to give.
	SubtreeControl, Offered []string
	Err                     error // either file could not be read
}

// unitReader reads each unit once: a cell's containers share one or two.
type unitReader struct {
	conn  SystemdUnits
	units map[string]UnitRead
}

func (r *unitReader) unit(ctx context.Context, name string) UnitRead {
	if u, ok := r.units[name]; ok {
		return u
	}
	u, err := r.conn.Unit(ctx, name)
	read := UnitRead{Name: name, Unit: u, Err: err}
	r.units[name] = read
	return read
}

func readUnits(ctx context.Context, s Spec, snap *snapshot.Source) UnitFacts {
	v, err := snap.Get()
	if err != nil {
		return UnitFacts{Err: err}
	}
	f := UnitFacts{Root: v.Root(), Booted: systemd.Booted(v.Root()), Dialer: s.Units != nil, Mode: v.Layout().Mode}
	if !f.Booted || !f.Dialer {
		return f
	}
	conn, err := s.Units(ctx)
	if err != nil {
		f.Err = fmt.Errorf("audit delegation: %w", err)
		return f
	}
	defer conn.Close()
	r := &unitReader{conn: conn, units: map[string]UnitRead{}}
	for _, d := range s.Daemons {
		f.Daemons = append(f.Daemons, r.daemon(ctx, v.Root(), d))
	}
	for _, name := range s.DelegateUnits {
		f.InPlace = append(f.InPlace, r.unit(ctx, name))
	}
	groups, unplaced, n := group(v)
	f.Unplaced, f.Containers = unplaced, n
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			f.Err = err
			return f
		}
		if g.Unit != "" {
			g.Read = r.unit(ctx, g.Unit)
		}
		f.Groups = append(f.Groups, *g)
	}
	if h := v.Layout().ForKey(""); f.Mode == cgroup.Unified && h != nil {
		pr := v.Layout().NewProcsReader()
		defer pr.Close()
		// Both judges of v2 placement want what the root offers; read it
		// once, and only when a group needs it.
		offered := sync.OnceValues(func() ([]string, error) { return rootControllers(pr, h) })
		readTops(pr, h, offered, f.Groups)
		readSlices(ctx, v.Layout(), h, r, offered, f.Groups)
	}
	f.UnitsRead = len(r.units)
	return f
}

// daemon reads d's unit and, when its pidfile names a process, the unit
// that actually holds it.
func (r *unitReader) daemon(ctx context.Context, root string, d Daemon) DaemonUnits {
	du := DaemonUnits{Daemon: d, Unit: r.unit(ctx, unitfile.UnitName(d.Name))}
	if du.Unit.Err != nil || d.PIDFile == "" {
		return du
	}
	du.PID, du.PIDErr = readPIDFile(root, d.PIDFile)
	if du.PIDErr != nil {
		return du
	}
	holder, err := r.conn.UnitByPID(ctx, du.PID)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(root, "proc", strconv.Itoa(du.PID))); errors.Is(serr, os.ErrNotExist) {
			du.Gone = true
		} else {
			du.HolderErr = err
		}
		return du
	}
	if holder == du.Unit.Name {
		du.Holder = du.Unit
		return du
	}
	du.Holder = r.unit(ctx, holder)
	return du
}

func readPIDFile(root, path string) (int, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return 0, fmt.Errorf("read pidfile %s: %w", path, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("read pidfile %s: no pid in %q", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// readTops fills the top-level cgroup of every group outside every unit
// and below one (not directly in the root, whose leaves systemd's writes
// reach), each read once.
func readTops(r *cgroup.ProcsReader, h *cgroup.Hierarchy, offered func() ([]string, error), groups []ContainerGroup) {
	tops := map[string]*TopCgroup{}
	for i := range groups {
		g := &groups[i]
		if g.Unit != "" || g.Parent == "/" || g.Parent == "" {
			continue
		}
		name := "/" + strings.SplitN(strings.TrimPrefix(g.Parent, "/"), "/", 2)[0]
		if t, ok := tops[name]; ok {
			g.Top = t
			continue
		}
		t := &TopCgroup{Cgroup: name}
		t.Offered, t.Err = offered()
		if t.Err == nil {
			b, err := r.ReadFile(h, name, "cgroup.subtree_control")
			t.SubtreeControl, t.Err = strings.Fields(string(b)), err
		}
		if t.Err != nil {
			t.Err = fmt.Errorf("read what %s passes down: %w", name, t.Err)
		}
		tops[name], g.Top = t, t
	}
}

// rootControllers is the root's cgroup.controllers: what the kernel
// offers, and so all systemd could enable or disable.
func rootControllers(r *cgroup.ProcsReader, h *cgroup.Hierarchy) ([]string, error) {
	b, err := r.ReadFile(h, "/", "cgroup.controllers")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// readSlices fills, for every group below a slice (not in a unit's own
// cgroup), that slice's members, each slice listed and read once. A child
// cgroup named as a unit is realized, so systemd has the unit loaded and
// reading it loads nothing.
func readSlices(ctx context.Context, l *cgroup.Layout, h *cgroup.Hierarchy, units *unitReader, offered func() ([]string, error), groups []ContainerGroup) {
	seen := map[string]*SliceMembers{}
	for i := range groups {
		g := &groups[i]
		if g.Own || !strings.HasSuffix(g.Unit, ".slice") || g.Read.Err != nil || g.Read.Unit == nil {
			continue
		}
		if s, ok := seen[g.Unit]; ok {
			g.Slice = s
			continue
		}
		s := &SliceMembers{Cgroup: g.Read.Unit.ControlGroup}
		s.Offered, s.Err = offered()
		if s.Err == nil && s.Cgroup == "" {
			s.Err = fmt.Errorf("systemd reports no cgroup for %s", g.Unit)
		}
		if s.Err == nil {
			s.Units, s.Err = sliceUnits(ctx, l.Path(h, s.Cgroup), units)
		}
		if s.Err != nil {
			s.Err = fmt.Errorf("read the units of %s: %w", g.Unit, s.Err)
		}
		seen[g.Unit], g.Slice = s, s
	}
}

// sliceUnits reads the services and scopes whose cgroups are children of
// dir: the only unit types that can delegate.
func sliceUnits(ctx context.Context, dir string, units *unitReader) ([]UnitRead, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []UnitRead
	for _, e := range ents {
		name := cgUnescape(e.Name())
		if !e.IsDir() || !(strings.HasSuffix(name, ".service") || strings.HasSuffix(name, ".scope")) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, units.unit(ctx, name))
	}
	return out, nil
}

// placement is where one container's cgroup sits in systemd's tree.
type placement struct {
	cgroup string   // the container's cgroup in the hierarchy systemd tracks units by
	units  []string // the units on its path, root first (system.slice, runit.service)
}

// nearest is the deepest unit above the container, "" at the root.
func (p placement) nearest() string {
	if len(p.units) == 0 {
		return ""
	}
	return p.units[len(p.units)-1]
}

// own reports whether the cgroup is the unit's own cgroup: runc's systemd
// driver makes each container a scope, which systemd itself keeps in place.
func (p placement) own() bool {
	return len(p.units) > 0 && len(p.units) == len(strings.Split(strings.Trim(p.cgroup, "/"), "/"))
}

// group places every container and groups them by the unit above them, in
// the order first seen. n counts the containers placed.
func group(v *snapshot.Host) (groups []*ContainerGroup, unplaced []Unplaced, n int) {
	byKey := map[string]*ContainerGroup{}
	for i := range v.Discovery().Containers {
		c := &v.Discovery().Containers[i]
		p, ok := placeActual(v, i)
		if !ok {
			p, ok = place(v, c)
		}
		if !ok {
			unplaced = append(unplaced, Unplaced{Name: c.Name(), StatePath: c.StatePath})
			continue
		}
		n++
		key := "unit " + p.nearest()
		g := &ContainerGroup{Unit: p.nearest(), Own: p.own(), Chain: p.units}
		if g.Unit == "" {
			g.Parent = path.Dir(p.cgroup)
			key = "root " + g.Parent
		} else if g.Own {
			key = "own " + g.Unit
		}
		if old, ok := byKey[key]; ok {
			g = old
		} else {
			byKey[key] = g
			groups = append(groups, g)
		}
		g.Containers = append(g.Containers, c.Name())
		g.Cgroups = append(g.Cgroups, p.cgroup)
	}
	return groups, unplaced, n
}

// place finds a container's cgroup in the hierarchy systemd tracks units by:
// name=systemd on v1 and hybrid hosts, the v2 hierarchy otherwise (or on a
// hybrid host whose state has no name=systemd path).
func place(v *snapshot.Host, c *runcstate.Container) (placement, bool) {
	paths := c.State.CgroupPaths
	for _, key := range []string{"name=systemd", ""} {
		abs, ok := paths[key]
		if !ok {
			continue
		}
		h, rel, ok := v.Layout().Split(abs)
		if !ok || v.Layout().ForKey(key) != h {
			continue
		}
		return placement{cgroup: rel, units: CgroupUnits(rel)}, true
	}
	// No tracking hierarchy recorded: any controller's path still shows
	// the units above (systemd mirrors its tree into every hierarchy).
	exps, _ := v.Expectations(c)
	if len(exps) == 0 {
		return placement{}, false
	}
	return placement{cgroup: exps[0].Rel, units: CgroupUnits(exps[0].Rel)}, true
}

// placeActual places a container whose record is false (none of the
// cgroups it names exists: guardian's CPU throttler writes /garden/good/<h>
// for a privileged container runc put at /system.slice/<h>) where its init
// is, which is where systemd's realizations reach it. ok is false for a
// record that is not false, or an init that was not read.
func placeActual(v *snapshot.Host, i int) (placement, bool) {
	c := &v.Discovery().Containers[i]
	p := v.InitOf(c)
	if !v.Members(i).NoneExists() || p == nil {
		return placement{}, false
	}
	b, err := v.Cgroup(p.PID)
	var m cgroup.Membership
	if err != nil || cgroup.ParseProcCgroup(b, &m) != nil {
		return placement{}, false
	}
	for _, key := range []string{"name=systemd", ""} {
		if h := v.Layout().ForKey(key); h != nil {
			if cg, ok := m.Lookup(h.Key()); ok {
				return placement{cgroup: string(cg), units: CgroupUnits(string(cg))}, true
			}
		}
	}
	return placement{}, false
}

// unitSuffixes are the unit types that own cgroups.
var unitSuffixes = []string{".slice", ".service", ".scope", ".socket", ".mount", ".swap"}

// CgroupUnits reads the units on a cgroup path, root first:
// "/system.slice/runit.service/garden/c1" -> system.slice, runit.service.
// Slices nest; the first unit that is not a slice is the last one the
// system manager owns: anything below it belongs to whoever the unit
// delegated to (a user manager's app.slice is not the system's).
func CgroupUnits(p string) []string {
	var units []string
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		c = cgUnescape(c)
		suffix := ""
		for _, s := range unitSuffixes {
			if len(c) > len(s) && strings.HasSuffix(c, s) {
				suffix = s
			}
		}
		if suffix == "" {
			break
		}
		units = append(units, c)
		if suffix != ".slice" {
			break
		}
	}
	return units
}

// cgUnescape undoes systemd's cg_escape: names that could clash with
// kernel files or controller prefixes get a leading "_".
func cgUnescape(s string) string { return strings.TrimPrefix(s, "_") }

// Unit is one unit's D-Bus properties, as the judges read them.
type Unit = systemd.Unit
