package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/boundedexec"
	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// systemd releases that change what a cgroup v1 host can do.
const (
	// systemdRefusesV1 refuses to boot on cgroup v1 (legacy or hybrid)
	// unless SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1 is on the kernel command
	// line (systemd v256 NEWS).
	systemdRefusesV1 = 256
	// systemdDropsV1 has no cgroup v1 support at all (systemd v258).
	systemdDropsV1 = 258
	legacyForceArg = "SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1"
)

// SystemdVersioner tells a systemd version number (252 for
// "252.39-1~deb12u2"). The running manager's comes over D-Bus (the Manager
// object's Version property); SystemctlVersion reads the installed one.
type SystemdVersioner interface {
	SystemdVersion(ctx context.Context) (int, error)
}

// SystemdCgroupMode checks that the host's systemd can keep running on the
// host's cgroup mode, and reports units relying on the deprecated
// KillMode=none.
type SystemdCgroupMode struct {
	Root string
	// Running is the manager's version (D-Bus); nil skips it. It is asked
	// only when systemd is the init system (<root>/run/systemd/system).
	Running SystemdVersioner
	// Installed is the packaged systemd's version; nil means
	// SystemctlVersion under Root. It decides the next boot.
	Installed SystemdVersioner
	// Mode detects the cgroup mode; nil means cgroup.DetectMode.
	Mode func(root string) (cgroup.Mode, error)
}

var _ validator.Check = (*SystemdCgroupMode)(nil)

func (*SystemdCgroupMode) Meta() validator.Meta {
	return validator.Meta{
		ID:    "systemd-cgroup-mode",
		Title: "systemd supports the host's cgroup mode",
		Severity: map[validator.Phase]validator.Severity{
			validator.PreStart: validator.Blocking,
			validator.Drain:    validator.Warning,
		},
		Story: "systemd 256 refuses to boot on cgroup v1 (legacy or hybrid, what CF cells and " +
			"Concourse workers on older stemcells use) unless SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1 " +
			"is on the kernel command line, and systemd 258 removed cgroup v1 support: a stemcell " +
			"or OS upgrade that brings either leaves the cell unbootable. KillMode=none, which " +
			"keeps systemd from killing a unit's leftover processes, is deprecated since systemd 246.",
		References: []string{
			"https://github.com/systemd/systemd/releases/tag/v256",
			"https://github.com/systemd/systemd/releases/tag/v258",
			"https://github.com/systemd/systemd/releases/tag/v246",
		},
		Fix: "Move the host to cgroup v2 (systemd.unified_cgroup_hierarchy=1 on the kernel command " +
			"line and a v2-capable runtime), or keep systemd below 256; as a stopgap for 256 and " +
			"257 only, add SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1 to the kernel command line. For " +
			"KillMode=none units, plan a KillMode=mixed or control-group replacement.",
	}
}

func (c *SystemdCgroupMode) Run(ctx context.Context) ([]validator.Finding, error) {
	detect := c.Mode
	if detect == nil {
		detect = cgroup.DetectMode
	}
	mode, err := detect(c.Root)
	if err != nil {
		return nil, err
	}
	installed := c.Installed
	if installed == nil {
		installed = SystemctlVersion{Root: c.Root}
	}
	var sources []source
	var fs []validator.Finding
	if c.Running != nil && systemd.Booted(c.Root) {
		n, err := c.Running.SystemdVersion(ctx)
		if err != nil {
			return nil, fmt.Errorf("read running systemd version: %w", err)
		}
		sources = append(sources, source{"running", n})
	} else if c.Running != nil {
		fs = append(fs, validator.Finding{Subject: "systemd", Status: validator.Skip,
			Detail: "systemd is not the init system here (no /run/systemd/system); only the installed version is checked"})
	}
	n, err := installed.SystemdVersion(ctx)
	switch {
	case errors.Is(err, ErrNoSystemctl):
		fs = append(fs, validator.Finding{Subject: "systemd", Status: validator.Skip, Detail: err.Error()})
	case err != nil:
		return nil, err
	default:
		if len(sources) == 1 && sources[0].v == n {
			sources[0].name = "running and installed"
		} else {
			sources = append(sources, source{"installed", n})
		}
	}
	if len(sources) == 0 {
		return fs, nil
	}
	forced := cmdlineHas(c.Root, legacyForceArg)
	maxV := 0
	for _, s := range sources {
		maxV = max(maxV, s.v)
		fs = append(fs, judgeSystemd(s, mode, forced))
	}
	if maxV >= systemd.KillModeNoneDeprecatedSince {
		units, err := killModeNoneUnits(c.Root)
		if err != nil {
			return nil, err
		}
		for _, u := range units {
			// Information, not a failure: systemd still honours it.
			fs = append(fs, validator.Finding{Subject: u.name, Status: validator.Pass,
				Detail: fmt.Sprintf("%s sets KillMode=none (%s), deprecated since systemd %d and logged as unsafe by systemd %d", u.name, u.path, systemd.KillModeNoneDeprecatedSince, maxV),
				Data:   map[string]string{"level": "info", "path": u.path, "kill_mode": "none"}})
		}
	}
	return fs, nil
}

// source is one systemd version read: the running manager's or the
// installed binary's.
type source struct {
	name string
	v    int
}

// judgeSystemd says whether systemd of version s boots on a host in cgroup
// mode (forced: with the kernel's legacy-force argument).
func judgeSystemd(s source, mode cgroup.Mode, forced bool) validator.Finding {
	v1 := mode == cgroup.Legacy || mode == cgroup.Hybrid
	d := map[string]string{"systemd": strconv.Itoa(s.v), "which": s.name, "cgroup_mode": mode.String(),
		"legacy_force": strconv.FormatBool(forced)}
	f := validator.Finding{Subject: "systemd " + s.name, Data: d}
	switch {
	case !v1 || s.v < systemdRefusesV1:
		f.Status = validator.Pass
		f.Detail = fmt.Sprintf("systemd %d (%s) supports the %s cgroup mode", s.v, s.name, mode)
	case s.v >= systemdDropsV1:
		f.Status = validator.Fail
		f.Detail = fmt.Sprintf("systemd %d (%s) has no cgroup v1 support (removed in %d) and this host uses cgroup %s: it will not boot", s.v, s.name, systemdDropsV1, mode)
	case forced:
		f.Status = validator.Warn
		f.Detail = fmt.Sprintf("systemd %d (%s) on cgroup %s boots only because the kernel command line has %s; systemd %d drops cgroup v1 entirely", s.v, s.name, mode, legacyForceArg, systemdDropsV1)
	default:
		f.Status = validator.Fail
		f.Detail = fmt.Sprintf("systemd %d (%s) refuses to boot on cgroup v1 and this host uses cgroup %s without %s on the kernel command line", s.v, s.name, mode, legacyForceArg)
	}
	return f
}

func cmdlineHas(root, arg string) bool {
	b, err := os.ReadFile(filepath.Join(root, "/proc/cmdline"))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(b)) {
		if f == arg {
			return true
		}
	}
	return false
}

type killModeUnit struct{ name, path string }

// unitDirs are the systemd system unit directories, in precedence order.
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// killModeNoneUnits lists unit files and drop-ins that set KillMode=none.
// /lib is /usr/lib on merged-/usr hosts: the same file is listed once.
func killModeNoneUnits(root string) ([]killModeUnit, error) {
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var out []killModeUnit
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
				rel := strings.TrimPrefix(f, filepath.Clean(root))
				if !strings.HasPrefix(rel, "/") {
					rel = "/" + rel
				}
				name := filepath.Base(f)
				if strings.HasSuffix(filepath.Dir(f), ".d") {
					name = strings.TrimSuffix(filepath.Base(filepath.Dir(f)), ".d")
				}
				out = append(out, killModeUnit{name: name, path: rel})
			}
		}
	}
	return out, nil
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
