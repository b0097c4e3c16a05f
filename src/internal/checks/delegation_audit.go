package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// AuditedDaemon is a configured daemon whose unit delegation-audit reads.
type AuditedDaemon struct {
	// Name is the daemon's config name; its unit is cellguard-<name>.service.
	Name string
	// PIDFile, when set and naming a live process, adds the unit that
	// actually holds the daemon (it may not be cellguard's).
	PIDFile string
}

// DelegationAudit asks systemd, over D-Bus, whether every container cgroup
// and every configured daemon sits in a unit that delegates its subtree:
// the condition that makes seed-000 impossible rather than detected after
// the fact.
type DelegationAudit struct {
	host *snapshot.Source
	// Dial reaches the manager; nil (fixture roots) skips the check.
	Dial    SystemdDialer
	Daemons []AuditedDaemon
	// Units are other releases' units delegated in place
	// (delegate_units): their own Delegate= is what is audited.
	Units []string
	// Timeout bounds all D-Bus work of one run; 0 means 15s.
	Timeout time.Duration
}

var _ validator.Check = (*DelegationAudit)(nil)

const delegationAuditTimeout = 15 * time.Second

func (*DelegationAudit) Meta() validator.Meta {
	return validator.Meta{
		ID:       "delegation-audit",
		Measured: []string{"active_state"},
		Title:    "container cgroups and runtime daemons sit in delegated systemd units",
		Severity: map[validator.Phase]validator.Severity{
			// Pre-start runs after `cellguard unit install` and right
			// before monit starts the daemons: a unit that is not
			// delegated (or on v1 lacks blkio) now means the containers
			// about to be made, and any that survived the update, will be
			// moved by systemd. The daemon units are audited even on a
			// fresh VM with no container yet, so the check is never empty.
			validator.PreStart: validator.Blocking,
			// At drain the arrangement is the outgoing one; blocking would
			// stop the update whose pre-start installs the delegated units.
			// Containers that already escaped block drain through
			// cgroup-integrity.
			validator.Drain: validator.Warning,
		},
		Story: "seed-000: a daemon started by monit ran in a unit without Delegate=; when systemd realized " +
			"cgroups for another unit it moved the daemon's container processes from garden/<id> back " +
			"into the unit's cgroup, runc's state.json kept the old paths and `runc kill --all` killed " +
			"nothing. On cgroup v1 even Delegate=yes leaves blkio to systemd (systemd 252 moved it when " +
			"a unit with IOWeight= started in the same slice).",
		References: []string{
			"https://systemd.io/CGROUP_DELEGATION/",
			"https://github.com/cloudfoundry/garden-runc-release/issues/81",
			"https://www.freedesktop.org/software/systemd/man/latest/systemd.resource-control.html#Delegate=",
		},
		Fix: "Start each runtime daemon through its delegated unit (`cellguard unit install <name>`, which " +
			"sets Delegate=" + unitfile.DelegateV1 + " on cgroup v1), delegate the unit holding monit in " +
			"place (`cellguard unit protect-supervisor`), and make the runtime create container cgroups " +
			"below its own unit's cgroup rather than at the root of a hierarchy (Garden's /garden).",
	}
}

func (a *DelegationAudit) Run(ctx context.Context) ([]validator.Finding, error) {
	v, err := a.host.Get()
	if err != nil {
		return nil, err
	}
	if !systemd.Booted(v.Root()) {
		return []validator.Finding{{Subject: "systemd", Status: validator.Skip,
			Detail: fmt.Sprintf("systemd is not the init system under %s (no /run/systemd/system): no unit can delegate, nothing to audit", v.Root())}}, nil
	}
	if a.Dial == nil {
		return []validator.Finding{{Subject: "systemd", Status: validator.Skip,
			Detail: fmt.Sprintf("no D-Bus connection to the systemd of %s was configured", v.Root())}}, nil
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = delegationAuditTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := a.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit delegation: %w", err)
	}
	defer conn.Close()
	au := &audit{conn: conn, v1: v.Layout().Mode == cgroup.Legacy || v.Layout().Mode == cgroup.Hybrid,
		mode: v.Layout().Mode, units: map[string]unitRead{}}

	var fs []validator.Finding
	for _, d := range a.Daemons {
		fs = append(fs, au.daemon(ctx, v.Root(), d)...)
	}
	for _, name := range a.Units {
		fs = append(fs, au.inPlace(ctx, name))
	}
	cfs, n, err := au.containers(ctx, v)
	if err != nil {
		return nil, err
	}
	fs = append(fs, cfs...)
	fs = append(fs, validator.Finding{
		Status: validator.Pass,
		Detail: fmt.Sprintf("%d daemons, %d units delegated in place and %d containers audited, %d units read on a %s cgroup host", len(a.Daemons), len(a.Units), n, len(au.units), v.Layout().Mode),
		Data: map[string]string{"daemons": strconv.Itoa(len(a.Daemons)), "containers": strconv.Itoa(n),
			"units": strconv.Itoa(len(au.units)), "cgroup_mode": v.Layout().Mode.String()},
	})
	return fs, nil
}

// audit is one run's connection and unit cache: a cell's containers share
// one or two units, read once.
type audit struct {
	conn  SystemdUnits
	v1    bool
	mode  cgroup.Mode
	units map[string]unitRead
}

type unitRead struct {
	u   *systemd.Unit
	err error
}

func (au *audit) unit(ctx context.Context, name string) (*systemd.Unit, error) {
	if r, ok := au.units[name]; ok {
		return r.u, r.err
	}
	u, err := au.conn.Unit(ctx, name)
	au.units[name] = unitRead{u, err}
	return u, err
}

// wanted is the controllers a delegated unit must list: on a v1 or
// hybrid host every one of unitfile.DelegateV1, as plain Delegate=yes leaves
// blkio (and cpuacct, devices) to systemd; on v2 any delegation.
func (au *audit) wanted() []string {
	if au.v1 {
		return unitfile.Controllers(unitfile.DelegateV1)
	}
	return unitfile.Controllers(unitfile.DelegateV2)
}

// protects says whether u keeps systemd out of its subtree on this host,
// and if not, why.
func (au *audit) protects(u *systemd.Unit) (bool, string) {
	switch {
	case u.LoadState != "loaded":
		return false, fmt.Sprintf("%s is not loaded (LoadState=%s): systemd has no delegation for it", u.Name, u.LoadState)
	case strings.HasSuffix(u.Name, ".slice"):
		return false, fmt.Sprintf("%s is a slice, and slices cannot delegate", u.Name)
	case !u.Delegate:
		return false, fmt.Sprintf("%s does not delegate (Delegate=no): systemd moves processes in its subtree back into its cgroup when it realizes controllers", u.Name)
	}
	ok, missing := u.Delegates(au.wanted())
	if !ok {
		return false, fmt.Sprintf("%s delegates only %s on a cgroup %s host, not %s: systemd still moves processes in those hierarchies (v1 blkio is not covered by io)",
			u.Name, controllersText(u.DelegateControllers), au.mode, strings.Join(missing, " "))
	}
	return true, fmt.Sprintf("%s delegates %s", u.Name, controllersText(u.DelegateControllers))
}

func controllersText(cs []string) string {
	if len(cs) == 0 {
		return "no controllers"
	}
	return strings.Join(cs, " ")
}

func unitData(u *systemd.Unit, missing []string) map[string]string {
	d := map[string]string{
		"unit":                 u.Name,
		"load_state":           u.LoadState,
		"active_state":         u.ActiveState,
		"delegate":             strconv.FormatBool(u.Delegate),
		"delegate_controllers": strings.Join(u.DelegateControllers, " "),
		"control_group":        u.ControlGroup,
	}
	if len(missing) > 0 {
		d["missing_controllers"] = strings.Join(missing, " ")
	}
	return d
}

func (au *audit) judge(u *systemd.Unit) (validator.Status, string, map[string]string) {
	ok, why := au.protects(u)
	var missing []string
	if u.LoadState == "loaded" && u.Delegate && !strings.HasSuffix(u.Name, ".slice") {
		_, missing = u.Delegates(au.wanted())
	}
	if ok {
		return validator.Pass, why, unitData(u, nil)
	}
	return validator.Fail, why, unitData(u, missing)
}

// daemon audits cellguard's unit for d and, when its pidfile names a live
// process, the unit that actually holds it.
func (au *audit) daemon(ctx context.Context, root string, d AuditedDaemon) []validator.Finding {
	name := unitfile.UnitName(d.Name)
	var fs []validator.Finding
	u, err := au.unit(ctx, name)
	if err != nil {
		return []validator.Finding{{Subject: name, Status: validator.Error, Detail: err.Error(),
			Data: map[string]string{"daemon": d.Name, "unit": name}}}
	}
	st, why, data := au.judge(u)
	data["daemon"] = d.Name
	detail := fmt.Sprintf("daemon %s: %s", d.Name, why)
	if u.LoadState != "loaded" {
		detail += "; run `cellguard unit install " + d.Name + "`"
	}
	fs = append(fs, validator.Finding{Subject: name, Status: st, Detail: detail, Data: data})

	if d.PIDFile == "" {
		return fs
	}
	pid, err := readPIDFile(root, d.PIDFile)
	if err != nil {
		fs = append(fs, validator.Finding{Subject: name, Status: validator.Skip,
			Detail: fmt.Sprintf("daemon %s is not running (%v): only its unit was audited", d.Name, err),
			Data:   map[string]string{"daemon": d.Name, "pidfile": d.PIDFile}})
		return fs
	}
	holder, err := au.conn.UnitByPID(ctx, pid)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(root, "proc", strconv.Itoa(pid))); errors.Is(serr, os.ErrNotExist) {
			// A stale pidfile: the daemon is down.
			fs = append(fs, validator.Finding{Subject: name, Status: validator.Skip,
				Detail: fmt.Sprintf("daemon %s is not running (pid %d from %s is gone): only its unit was audited", d.Name, pid, d.PIDFile),
				Data:   map[string]string{"daemon": d.Name, "pidfile": d.PIDFile, "pid": strconv.Itoa(pid)}})
			return fs
		}
		fs = append(fs, validator.Finding{Subject: name, Status: validator.Error, Detail: err.Error(),
			Data: map[string]string{"daemon": d.Name, "pidfile": d.PIDFile, "pid": strconv.Itoa(pid)}})
		return fs
	}
	if holder == name {
		data["pid"] = strconv.Itoa(pid)
		return fs
	}
	hu, err := au.unit(ctx, holder)
	if err != nil {
		return append(fs, validator.Finding{Subject: holder, Status: validator.Error, Detail: err.Error(),
			Data: map[string]string{"daemon": d.Name, "pid": strconv.Itoa(pid), "unit": holder}})
	}
	st, why, data = au.judge(hu)
	data["daemon"], data["pid"], data["pidfile"] = d.Name, strconv.Itoa(pid), d.PIDFile
	return append(fs, validator.Finding{Subject: holder, Status: st, Data: data,
		Detail: fmt.Sprintf("daemon %s (pid %d) runs in %s, not in %s: %s", d.Name, pid, holder, name, why)})
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

// containerGroup is the containers below one unit (or, outside every unit,
// below one parent cgroup): one finding, since the fix is per unit.
type containerGroup struct {
	unit       string
	parent     string // for containers outside every unit: their parent cgroup
	own        bool
	containers []string
	cgroups    []string
	chain      []string
}

// containers audits the unit above every container's cgroup, one finding
// per unit (the fix is per unit) listing its containers.
func (au *audit) containers(ctx context.Context, v *snapshot.Host) ([]validator.Finding, int, error) {
	groups, skipped, n := au.group(v)
	fs := skipped
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		fs = append(fs, au.judgeGroup(ctx, g))
	}
	return fs, n, nil
}

// group places every container and groups them by the unit above them, in
// the order first seen; containers with no cgroup on a mounted hierarchy
// are skips. n counts the containers placed.
func (au *audit) group(v *snapshot.Host) (groups []*containerGroup, skipped []validator.Finding, n int) {
	byKey := map[string]*containerGroup{}
	for i := range v.Discovery().Containers {
		c := &v.Discovery().Containers[i]
		p, ok := au.place(v, c)
		if !ok {
			skipped = append(skipped, validator.Finding{Subject: c.Name(), Status: validator.Skip,
				Detail: fmt.Sprintf("state %s records no cgroup on a mounted hierarchy", c.StatePath),
				Data:   map[string]string{"state": c.StatePath}})
			continue
		}
		n++
		key := "unit " + p.nearest()
		g := &containerGroup{unit: p.nearest(), own: p.own(), chain: p.units}
		if g.unit == "" {
			g.parent = path.Dir(p.cgroup)
			key = "root " + g.parent
		} else if g.own {
			key = "own " + g.unit
		}
		if old, ok := byKey[key]; ok {
			g = old
		} else {
			byKey[key] = g
			groups = append(groups, g)
		}
		g.containers = append(g.containers, c.Name())
		g.cgroups = append(g.cgroups, p.cgroup)
	}
	return groups, skipped, n
}

// judgeGroup is the finding of one group: outside every unit, in a unit's
// own cgroup (a scope of runc's systemd driver), or below a unit that must
// delegate.
func (au *audit) judgeGroup(ctx context.Context, g *containerGroup) validator.Finding {
	data := map[string]string{
		"containers":      strings.Join(g.containers, " "),
		"container_count": strconv.Itoa(len(g.containers)),
		"cgroup":          g.cgroups[0],
		"units":           strings.Join(g.chain, " "),
	}
	count := plural(len(g.containers), "container")
	if g.unit == "" {
		data["parent"] = g.parent
		return validator.Finding{Subject: g.parent, Status: validator.Warn, Data: data,
			Detail: fmt.Sprintf("%s under %s, outside every systemd unit and so outside every delegated subtree: "+
				"no unit's Delegate= covers them and systemd's cgroup tree is shared with them on this %s host", count, g.parent, au.mode)}
	}
	u, err := au.unit(ctx, g.unit)
	if err != nil {
		return validator.Finding{Subject: g.unit, Status: validator.Error, Detail: err.Error(), Data: data}
	}
	if g.own {
		d := unitData(u, nil)
		for k, v := range data {
			d[k] = v
		}
		st := validator.Pass
		detail := fmt.Sprintf("%s in the cgroup of %s itself (runc's systemd cgroup driver): systemd keeps its processes where runc recorded them", count, g.unit)
		if u.LoadState != "loaded" {
			st = validator.Warn
			detail = fmt.Sprintf("%s in the cgroup of %s, which systemd does not know (LoadState=%s)", count, g.unit, u.LoadState)
		}
		return validator.Finding{Subject: g.unit, Status: st, Detail: detail, Data: d}
	}
	st, why, d := au.judge(u)
	for k, v := range data {
		d[k] = v
	}
	detail := fmt.Sprintf("%s below %s: %s", count, g.unit, why)
	if st == validator.Fail {
		verb := "are"
		if len(g.containers) == 1 {
			verb = "is"
		}
		detail = fmt.Sprintf("%s below %s %s exposed to seed-000: %s", count, g.unit, verb, why)
	}
	return validator.Finding{Subject: g.unit, Status: st, Detail: detail, Data: d}
}

// place finds a container's cgroup in the hierarchy systemd tracks units by:
// name=systemd on v1 and hybrid hosts, the v2 hierarchy otherwise (or on a
// hybrid host whose state has no name=systemd path).
func (au *audit) place(v *snapshot.Host, c *runcstate.Container) (placement, bool) {
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
		return placement{cgroup: rel, units: cgroupUnits(rel)}, true
	}
	// No tracking hierarchy recorded: any controller's path still shows
	// the units above (systemd mirrors its tree into every hierarchy).
	exps, _ := v.Expectations(c)
	if len(exps) == 0 {
		return placement{}, false
	}
	return placement{cgroup: exps[0].Rel, units: cgroupUnits(exps[0].Rel)}, true
}

// unitSuffixes are the unit types that own cgroups.
var unitSuffixes = []string{".slice", ".service", ".scope", ".socket", ".mount", ".swap"}

// cgroupUnits reads the units on a cgroup path, root first:
// "/system.slice/runit.service/garden/c1" -> system.slice, runit.service.
// Slices nest; the first unit that is not a slice is the last one the
// system manager owns: anything below it belongs to whoever the unit
// delegated to (a user manager's app.slice is not the system's).
func cgroupUnits(p string) []string {
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

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
