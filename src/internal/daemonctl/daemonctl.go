// Package daemonctl installs, starts, stops and inspects the delegated units
// of monit-managed daemons, and protects the supervisor's unit. It is what
// `cellguard unit ...`, `cellguard start` and `cellguard stop` run; where
// systemd is absent it falls back to running the daemon's commands directly
// so monit keeps working.
package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// Unit directories.
const (
	PersistentUnitDir = "/etc/systemd/system"
	RuntimeUnitDir    = "/run/systemd/system"
)

// Daemon is one monit-managed daemon.
type Daemon struct {
	Name         string
	Start        []string
	Stop         []string
	PIDFile      string
	Type         string // unitfile.TypeExec (default) or unitfile.TypeForking
	Runtime      bool   // /run/systemd/system instead of /etc/systemd/system
	StartTimeout time.Duration
	StopTimeout  time.Duration
}

// Manager carries what every operation needs.
type Manager struct {
	Logger lager.Logger
	// Root is where the managed system's files are seen ("/" in production,
	// /proc/<pid>/root when a test drives a container's systemd from outside).
	Root string
	// DBus selects how to reach systemd; empty means the local defaults.
	DBus systemd.Options
	// Delegate overrides the Delegate= value; empty means detect the cgroup
	// layout under Root.
	Delegate string

	deprecationLogged bool
	// conn is dialed on first use and shared by every operation; a test
	// sets it to a fake before the first.
	conn systemdAPI
}

func (m *Manager) path(p string) string { return filepath.Join(m.rootDir(), p) }

func (m *Manager) rootDir() string { return hostroot.Dir(m.Root) }

// HasSystemd reports whether systemd manages this system. An explicit D-Bus
// address means the caller knows it does.
func (m *Manager) HasSystemd() bool {
	return m.conn != nil || m.DBus.Address != "" || systemd.Booted(m.rootDir())
}

// dial returns the Manager's connection, dialing it on first use: `cellguard
// start` installs and then starts over one connection, not two.
func (m *Manager) dial(ctx context.Context) (systemdAPI, error) {
	if m.conn != nil {
		return m.conn, nil
	}
	if !m.HasSystemd() {
		return nil, systemd.ErrNoSystemd
	}
	c, err := systemd.Dial(ctx, m.DBus)
	if err != nil {
		return nil, err
	}
	m.conn = c
	return c, nil
}

// Close closes the Manager's connection, if one was dialed.
func (m *Manager) Close() {
	if m.conn != nil {
		m.conn.Close()
		m.conn = nil
	}
}

// delegate picks Delegate= for the cgroup layout: an explicit v1 controller
// list on legacy and hybrid hosts (plain "yes" leaves v1 blkio movable).
func (m *Manager) delegate() string {
	if m.Delegate != "" {
		return m.Delegate
	}
	if DetectUnified(m.rootDir()) {
		return unitfile.DelegateV2
	}
	return unitfile.DelegateV1
}

// delegateFor is delegate for the systemd behind conn: one that predates
// controller lists in Delegate= (systemd.DelegateListSince) ignores the v1
// list, so it gets "yes", which there delegates every controller.
func (m *Manager) delegateFor(ctx context.Context, conn systemdAPI) string {
	d := m.delegate()
	if m.Delegate != "" || d != unitfile.DelegateV1 {
		return d
	}
	v, err := conn.Version(ctx)
	if err != nil {
		m.Logger.Error("read-systemd-version", err)
		return d
	}
	if major, err := systemd.ParseVersion(v); err == nil && major < systemd.DelegateListSince {
		m.Logger.Info("delegate-yes-on-old-systemd", lager.Data{"systemd_version": v,
			"reason": "systemd before 236 takes Delegate= only as a boolean; yes delegates every controller there"})
		return unitfile.DelegateV2
	}
	return d
}

// DetectUnified reports whether root's /sys/fs/cgroup is a pure cgroup v2
// mount. Unknown counts as not unified: the explicit v1 list is the safe
// choice, systemd accepts it on any layout.
func DetectUnified(root string) bool {
	mode, err := cgroup.DetectMode(root)
	return err == nil && mode == cgroup.Unified
}

// unitDir returns the directory a daemon's unit lives in.
func (d Daemon) unitDir() string {
	if d.Runtime {
		return RuntimeUnitDir
	}
	return PersistentUnitDir
}

// UnitName is the daemon's unit name.
func (d Daemon) UnitName() string { return unitfile.UnitName(d.Name) }

// spec builds the unit spec; the executables must exist under root.
func (m *Manager) spec(d Daemon, killMode string) (unitfile.Spec, error) {
	typ := d.Type
	if typ == "" {
		typ = unitfile.TypeExec
	}
	s := unitfile.Spec{
		Name: d.Name, Start: d.Start, Stop: d.Stop, PIDFile: d.PIDFile, Type: typ,
		Delegate: m.delegate(), KillMode: killMode,
		TimeoutStartSec: int(d.StartTimeout / time.Second), TimeoutStopSec: int(d.StopTimeout / time.Second),
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	for _, cmd := range [][]string{d.Start, d.Stop} {
		if len(cmd) == 0 {
			continue
		}
		if err := m.checkExecutable(cmd[0]); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (m *Manager) checkExecutable(p string) error {
	fi, err := os.Stat(m.path(p))
	if err != nil {
		return fmt.Errorf("%w: executable %s: %w", unitfile.ErrBadCommand, p, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable file (mode %v)", unitfile.ErrBadCommand, p, fi.Mode())
	}
	return nil
}

// InstallResult says what Install did.
type InstallResult struct {
	Unit     string `json:"unit"`
	Path     string `json:"path"`
	Written  bool   `json:"written"`  // the file content changed
	Reloaded bool   `json:"reloaded"` // systemd was asked to reread units
	KillMode string `json:"kill_mode"`
	Delegate string `json:"delegate"`
	// NoSystemd: systemd is not init here; nothing was installed.
	NoSystemd bool `json:"no_systemd,omitempty"`
}

// Install writes the daemon's unit and reloads systemd when (and only when)
// the content changed or systemd says it needs a reload (a previous run that
// died between write and Reload). Nothing is written on invalid input. The
// decisions are initialKillMode, needsReload and judgeInstalled.
func (m *Manager) Install(ctx context.Context, d Daemon) (InstallResult, error) {
	res := InstallResult{Unit: d.UnitName(), Path: filepath.Join(d.unitDir(), d.UnitName())}
	s, err := m.spec(d, unitfile.KillModeNone)
	if err != nil {
		return res, fmt.Errorf("install %s: %w", res.Unit, err)
	}
	res.Delegate = s.Delegate
	if !m.HasSystemd() {
		res.NoSystemd = true
		m.Logger.Info("no-systemd-nothing-to-install", lager.Data{"unit": res.Unit,
			"reason": "systemd is not init here (bosh-lite/warden container?): start and stop will run the daemon's commands directly"})
		return res, nil
	}
	conn, err := m.dial(ctx)
	if err != nil {
		return res, err
	}
	u, err := conn.Unit(ctx, res.Unit)
	if err != nil {
		return res, err
	}
	installed := m.unitFileSetting(res.Path) // the file as an earlier install left it, read once
	s.KillMode = initialKillMode(u, installed("KillMode") == unitfile.KillModeProcess)
	// systemd before 236 reads Delegate= as a boolean: the v1 list reads back
	// as Delegate=no there (measured on xenial's 229), and "yes" delegates
	// every controller. Its version is asked only where that can matter: the
	// file already says "yes" (an earlier install on such a systemd), or the
	// list did not take (below); every start on a newer systemd asks nothing.
	if s.Delegate == unitfile.DelegateV1 && installed("Delegate") == unitfile.DelegateV2 {
		s.Delegate = m.delegateFor(ctx, conn)
		res.Delegate = s.Delegate
	}
	// At most three rounds: the delegation this systemd takes, KillMode=none,
	// then process if systemd refused none.
	for range 3 {
		text, err := unitfile.Render(s)
		if err != nil {
			return res, fmt.Errorf("install %s: %w", res.Unit, err)
		}
		if u, err = m.writeAndLoad(ctx, conn, &res, d.unitDir(), text, u); err != nil {
			return res, err
		}
		retry, err := judgeInstalled(u, res.Path, s.KillMode, s.Delegate, m.overriding(u, ""))
		var re *RefusedError
		if errors.As(err, &re) && re.Setting == "Delegate" && s.Delegate == unitfile.DelegateV1 {
			if d := m.delegateFor(ctx, conn); d != s.Delegate {
				s.Delegate, res.Delegate = d, d
				continue
			}
		}
		if err != nil {
			return res, fmt.Errorf("install %s: %w", res.Unit, err)
		}
		if retry != "" {
			m.Logger.Info("kill-mode-none-refused-falling-back", lager.Data{"unit": res.Unit, "kill_mode_read_back": u.KillMode,
				"reason": "this systemd does not honour KillMode=none; KillMode=process (containerd's choice) still leaves container processes alone when the daemon stops"})
			s.KillMode = retry
			continue
		}
		res.KillMode = u.KillMode
		if res.Written && res.KillMode == unitfile.KillModeNone {
			m.noteKillModeDeprecation(ctx, conn)
		}
		m.Logger.Info("installed", lager.Data{"unit": res.Unit, "path": res.Path, "written": res.Written,
			"reloaded": res.Reloaded, "delegate_controllers": u.DelegateControllers, "kill_mode": u.KillMode})
		return res, nil
	}
	return res, fmt.Errorf("install %s: KillMode could not be set to none or process", res.Unit)
}

// writeAndLoad writes the unit file text, reloads systemd when needed and
// returns what systemd then says of the unit; prev is what it said before.
func (m *Manager) writeAndLoad(ctx context.Context, conn systemdAPI, res *InstallResult, dir string, text []byte,
	prev *systemd.Unit) (*systemd.Unit, error) {
	if err := os.MkdirAll(m.path(dir), 0o755); err != nil {
		return nil, fmt.Errorf("install %s: create %s: %w", res.Unit, dir, err)
	}
	w, err := safefile.WriteFileAtomic(m.path(res.Path), text, 0o644)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", res.Unit, err)
	}
	res.Written = res.Written || w.Changed
	u := prev // nothing changed on disk: what systemd said a moment ago holds
	if w.Changed {
		if u, err = conn.Unit(ctx, res.Unit); err != nil {
			return nil, err
		}
	}
	if !needsReload(w.Changed, u) {
		return u, nil
	}
	if err := conn.Reload(ctx); err != nil {
		return nil, err
	}
	res.Reloaded = true
	return conn.Unit(ctx, res.Unit)
}

// initialKillMode is the KillMode Install writes first: none, unless an
// earlier install found none refused and settled on process (loaded, and
// the file on disk says so): flipping back would Reload on every run.
func initialKillMode(prev *systemd.Unit, fileSetsProcess bool) string {
	if prev.LoadState == "loaded" && prev.KillMode == unitfile.KillModeProcess && fileSetsProcess {
		return unitfile.KillModeProcess
	}
	return unitfile.KillModeNone
}

// needsReload says whether systemd must reread unit files: the file
// changed, or systemd says its copy is stale (a run that died between
// write and Reload) or never loaded it.
func needsReload(changed bool, u *systemd.Unit) bool {
	return changed || u.NeedDaemonReload || u.LoadState != "loaded"
}

// judgeInstalled judges what systemd read back after the unit file at path
// was written with killMode; overriding names the drop-ins that assign a
// setting. retry names the KillMode to write instead when this systemd
// does not take none (process, containerd's choice, still leaves container
// processes alone when the unit stops). Every other difference is an error
// naming the fix (RefusedError): KillMode overridden by a drop-in or
// process refused too (stopping the unit could then kill every container
// below it), Delegate= not as written (systemd would move the containers
// on v1, strip their controllers on v2), the unit not loaded.
func judgeInstalled(u *systemd.Unit, path, killMode, delegate string, overriding func(setting string) []string) (retry string, err error) {
	if u.LoadState != "loaded" {
		return "", fmt.Errorf("systemd did not load %s (LoadState=%s); see `journalctl -b | grep %s`", path, u.LoadState, u.Name)
	}
	if u.KillMode != killMode {
		over := overriding("KillMode")
		if killMode == unitfile.KillModeNone && len(over) == 0 {
			return unitfile.KillModeProcess, nil
		}
		return "", refused(u, path, "KillMode", killMode, "KillMode="+u.KillMode, over)
	}
	if re := delegationRefused(u, path, delegate, overriding("Delegate")); re != nil {
		return "", re
	}
	return "", nil
}

// unitFileSetting reads the unit file at p once and returns its [Service]
// settings by name ("" for a missing file or setting).
func (m *Manager) unitFileSetting(p string) func(name string) string {
	b, readErr := os.ReadFile(m.path(p))
	return func(name string) string {
		if readErr != nil {
			return ""
		}
		v, ok, err := unitfile.Setting(b, "Service", name)
		if err != nil || !ok {
			return ""
		}
		return v
	}
}

// noteKillModeDeprecation logs once per Manager why KillMode=none stays,
// when Install has written a unit with it: the note is for whoever reads
// that install's log, and asking systemd's Version on every unchanged
// install (every `cellguard start`) cost a round trip each.
func (m *Manager) noteKillModeDeprecation(ctx context.Context, conn systemdAPI) {
	if m.deprecationLogged {
		return
	}
	v, err := conn.Version(ctx)
	if err != nil {
		m.Logger.Error("read-systemd-version", err)
		return
	}
	major, err := systemd.ParseVersion(v)
	if err != nil {
		m.Logger.Error("parse-systemd-version", err)
		return
	}
	m.deprecationLogged = true
	if major >= systemd.KillModeNoneDeprecatedSince {
		m.Logger.Info("kill-mode-none-deprecated", lager.Data{"systemd_version": v,
			"reason": "systemd logs that KillMode=none is deprecated; cellguard keeps it because any other mode lets stopping or restarting the unit kill the container processes in its delegated subtree, which the daemon's own stop command must decide"})
	}
}

// ErrUnitMissing means the unit is not installed.
var ErrUnitMissing = errors.New("unit not installed")

// Status reads a unit's state over D-Bus.
func (m *Manager) Status(ctx context.Context, unitName string) (*systemd.Unit, error) {
	conn, err := m.dial(ctx)
	if err != nil {
		return nil, err
	}
	u, err := conn.Unit(ctx, unitName)
	if err != nil {
		return nil, err
	}
	if u.LoadState == "not-found" {
		return u, fmt.Errorf("%s: %w (run `cellguard unit install`)", unitName, ErrUnitMissing)
	}
	return u, nil
}
