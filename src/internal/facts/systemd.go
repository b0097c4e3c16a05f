package facts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/boundedexec"
	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// SystemdFacts is what systemd-cgroup-mode judges.
type SystemdFacts struct {
	// Err is set when nothing could be read (a provider that panicked, or
	// a judge that did not wait).
	Err error
	// Mode is the host's cgroup mode.
	Mode    cgroup.Mode
	ModeErr error
	// Booted: systemd is the init system under the root.
	Booted bool
	// RunningAsked: a manager was configured and systemd is init, so its
	// version was asked; Running or RunningErr holds the answer.
	RunningConfigured, RunningAsked bool
	Running                         int
	RunningErr                      error
	// Installed is the packaged systemd's version; InstalledErr wraps
	// ErrNoSystemctl when there is none.
	Installed    int
	InstalledErr error
	// Cmdline is the kernel command line's words; nil when unreadable.
	Cmdline []string
	// KillModeNone lists unit files and drop-ins that set KillMode=none.
	KillModeNone    []KillModeUnit
	KillModeNoneErr error
}

// KillModeUnit is a unit (file or drop-in) that sets KillMode=none.
type KillModeUnit struct{ Name, Path string }

// SystemdVersioner tells a systemd version number (252 for
// "252.39-1~deb12u2"). The running manager's comes over D-Bus (the Manager
// object's Version property); SystemctlVersion reads the installed one.
type SystemdVersioner interface {
	SystemdVersion(ctx context.Context) (int, error)
}

func readSystemd(ctx context.Context, s Spec) SystemdFacts {
	detect := s.Mode
	if detect == nil {
		detect = cgroup.DetectMode
	}
	var f SystemdFacts
	f.Mode, f.ModeErr = detect(s.Root)
	f.Booted = systemd.Booted(s.Root)
	f.RunningConfigured = s.Running != nil
	if s.Running != nil && f.Booted {
		f.RunningAsked = true
		f.Running, f.RunningErr = s.Running.SystemdVersion(ctx)
	}
	installed := s.Installed
	if installed == nil {
		installed = SystemctlVersion{Root: s.Root}
	}
	f.Installed, f.InstalledErr = installed.SystemdVersion(ctx)
	if b, err := os.ReadFile(filepath.Join(s.Root, "/proc/cmdline")); err == nil {
		f.Cmdline = strings.Fields(string(b))
	}
	f.KillModeNone, f.KillModeNoneErr = killModeNoneUnits(s.Root)
	return f
}

// unitDirs are the systemd system unit directories, in precedence order.
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// killModeNoneUnits lists unit files and drop-ins that set KillMode=none.
// /lib is /usr/lib on merged-/usr hosts: the same file is listed once.
func killModeNoneUnits(root string) ([]KillModeUnit, error) {
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var out []KillModeUnit
	for _, dir := range unitDirs {
		var files []string
		for _, pat := range []string{"*.service", "*.service.d/*.conf"} {
			m, err := filepath.Glob(filepath.Join(root, dir, pat))
			if err != nil {
				return nil, fmt.Errorf("list units %s: %w", dir, err)
			}
			files = append(files, m...)
		}
		sort.Strings(files)
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil || !st.Mode().IsRegular() {
				continue // dangling link or masked (/dev/null)
			}
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				k := key{uint64(sys.Dev), sys.Ino}
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			has, err := setsKillModeNone(f)
			if err != nil {
				return nil, err
			}
			if has {
				out = append(out, killModeUnitOf(root, f))
			}
		}
	}
	return out, nil
}

func killModeUnitOf(root, f string) KillModeUnit {
	rel := strings.TrimPrefix(f, filepath.Clean(root))
	if !strings.HasPrefix(rel, "/") {
		rel = "/" + rel
	}
	name := filepath.Base(f)
	if strings.HasSuffix(filepath.Dir(f), ".d") {
		name = strings.TrimSuffix(filepath.Base(filepath.Dir(f)), ".d")
	}
	return KillModeUnit{Name: name, Path: rel}
}

// setsKillModeNone reports whether the unit file or drop-in at path
// assigns KillMode=none in [Service], read as systemd reads it (comments,
// continued lines); a file that cannot be read or parsed sets nothing
// this check could tell.
func setsKillModeNone(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return false, nil
		}
		return false, fmt.Errorf("read unit %s: %w", path, err)
	}
	v, ok, err := unitfile.Setting(b, "Service", "KillMode")
	return err == nil && ok && v == unitfile.KillModeNone, nil
}

// ErrNoSystemctl means no systemctl binary was found under the root.
var ErrNoSystemctl = errors.New("checks: no systemctl binary")

// SystemctlVersion reads the installed systemd's version from
// `systemctl --version` ("systemd 252 (252.39-1~deb12u2)"), bounded by
// Timeout like every runtime exec.
type SystemctlVersion struct {
	Root    string
	Timeout time.Duration
}

func (s SystemctlVersion) SystemdVersion(ctx context.Context) (int, error) {
	for _, p := range []string{"/usr/bin/systemctl", "/bin/systemctl"} {
		host := filepath.Join(s.Root, p)
		if _, err := os.Stat(host); err != nil {
			continue
		}
		// run as root: only a binary no one else could change or replace,
		// run through the file that check opened
		bin, err := safefile.OpenTrusted(host)
		if err != nil {
			return 0, fmt.Errorf("read systemd version: not running %s: %w", host, err)
		}
		out, err := boundedexec.Output(ctx, s.Timeout, bin, "--version")
		bin.Close()
		if err != nil {
			return 0, fmt.Errorf("read systemd version: %w", err)
		}
		return systemd.ParseVersion(string(out))
	}
	return 0, fmt.Errorf("read systemd version under %s: %w", s.Root, ErrNoSystemctl)
}

// ManagerVersion asks the running systemd for its version over D-Bus,
// dialing only when asked (only when systemd is init), and never for
// longer than ManagerVersionTimeout.
type ManagerVersion struct {
	Options systemd.Options
}

// ManagerVersionTimeout bounds one ask of the manager's version.
const ManagerVersionTimeout = 5 * time.Second

func (m ManagerVersion) SystemdVersion(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, ManagerVersionTimeout)
	defer cancel()
	c, err := systemd.Dial(ctx, m.Options)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return 0, err
	}
	return systemd.ParseVersion(v)
}

// KillModeNoneDeprecatedSince is the systemd release that deprecated
// KillMode=none: from it on, the units setting it are worth a line.
const KillModeNoneDeprecatedSince = systemd.KillModeNoneDeprecatedSince
