package runtimever

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/boundedexec"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// The first components cellguard probed; Components (components.go) lists
// them all.
const (
	Runc       = "runc"
	Containerd = "containerd"
)

// DefaultPath is searched (under the root prefix) after the configured
// paths. BOSH jobs run with a minimal PATH, so it is fixed, not inherited.
var DefaultPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Binary is one runtime binary found on the host.
type Binary struct {
	Component string // one of Components
	Path      string // as the host sees it (without the root prefix)
	HostPath  string // root prefix + Path: what is executed and read
	Source    string // "config" or "PATH"
}

// Locator finds runtime binaries under Root.
type Locator struct {
	Root string
	// Configured maps component to path (the job's validator.runtime_binaries).
	Configured map[string]string
	// Path is the search path; nil means DefaultPath.
	Path []string
}

// Missing is a configured binary that is not there.
type Missing struct {
	Component, Path string
	Err             error
}

// Locate returns every distinct binary of component: the configured one
// first, then each PATH hit that is not the same file (same device and
// inode, so symlinks and bind mounts are not reported twice). A configured
// path that does not exist is returned in missing.
func (l Locator) Locate(component string) (found []Binary, missing []Missing) {
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	add := func(p, source string) error {
		host := filepath.Join(l.Root, p)
		st, err := os.Stat(host)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("stat %s: not an executable file", host)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			k := key{uint64(sys.Dev), sys.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		found = append(found, Binary{Component: component, Path: p, HostPath: host, Source: source})
		return nil
	}
	if p := l.Configured[component]; p != "" {
		if err := add(p, "config"); err != nil {
			missing = append(missing, Missing{Component: component, Path: p, Err: err})
		}
	}
	dirs := l.Path
	if dirs == nil {
		dirs = DefaultPath
	}
	for _, d := range dirs {
		_ = add(filepath.Join(d, component), "PATH") // absent on PATH is normal
	}
	return found, missing
}

// Info is what a probe learned about one binary.
type Info struct {
	Binary
	// Version is the upstream version; zero with VersionErr set when it
	// could not be determined.
	Version    Version
	VersionErr error
	// VersionSource says where Version came from: the version flag
	// ("--version", "-v"), "features", "buildinfo".
	VersionSource string
	// Distro is the distribution package version when the binary reports
	// one ("1.1.5+ds1-1+deb12u1"); backports match against it.
	Distro string
	Commit string
	// Features is true when `runc features` worked, which only runc >= 1.1
	// implements.
	Features bool
	// Raw outputs, for evidence.
	RawVersion string
	// Notes are odd things seen while probing (inconsistent sources).
	Notes []string
}

// Prober runs binaries to learn their versions.
type Prober struct {
	// Timeout per exec; 0 means boundedexec.DefaultTimeout.
	Timeout time.Duration
	// Cache, when set, answers again for a file it has probed (see
	// ProbeCache); nil probes every time.
	Cache *ProbeCache
}

// Bound is how long each exec may take: Timeout, or boundedexec's default.
func (p Prober) Bound() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return boundedexec.DefaultTimeout
}

// TimedOut says whether a Probe's error is a binary that did not answer
// within the Bound (killed), as against one that could not run or failed.
func TimedOut(err error) bool { return errors.Is(err, boundedexec.ErrTimeout) }

// Probe learns b's version. It returns an error only when the binary
// could not be run at all (including boundedexec.ErrTimeout); a binary that runs but
// does not say its version yields Info.VersionErr.
//
// A binary someone other than root could change, or replace through a
// directory or a symlink on its path, is refused before any exec
// (safefile.OpenTrusted): cellguard runs it as root. Every exec and read
// of the binary goes through the file that check opened, so a path
// swapped in between changes nothing.
func (p Prober) Probe(ctx context.Context, b Binary) (Info, error) {
	bin, err := safefile.OpenTrusted(b.HostPath)
	if err != nil {
		return Info{Binary: b}, fmt.Errorf("probe %s: not running %s: %w", b.Component, b.HostPath, err)
	}
	defer bin.Close()
	if p.Cache == nil {
		return p.probe(ctx, b, bin)
	}
	k, err := keyOf(b, bin)
	if err != nil {
		return p.probe(ctx, b, bin)
	}
	if info, ok := p.Cache.get(k); ok {
		info.Binary = b
		return info, nil
	}
	info, err := p.probe(ctx, b, bin)
	if err == nil {
		p.Cache.put(k, info)
	}
	return info, err
}

func (p Prober) probe(ctx context.Context, b Binary, bin *os.File) (Info, error) {
	info := Info{Binary: b}
	args := versionArgs(b.Component)
	out, err := boundedexec.Output(ctx, p.Timeout, bin, args...)
	if err != nil && (!versionFlagOptional(b.Component) || errors.Is(err, boundedexec.ErrTimeout) || ctx.Err() != nil) {
		return info, fmt.Errorf("probe %s version: %w", b.Component, err)
	}
	info.RawVersion = strings.TrimSpace(string(out))
	ver, commit, ok := parseVersionOutput(b.Component, string(out))
	if !ok {
		return info, fmt.Errorf("probe %s: unknown component", b.Component)
	}
	info.Commit = commit
	info.Distro = DistroVersion(info.Commit)
	info.Version, info.VersionErr = ParseVersion(ver)
	if err != nil {
		// an old shim without the flag: build info may still say
		info.VersionErr = fmt.Errorf("probe %s version: %w", b.Component, err)
	}
	if info.VersionErr == nil {
		info.VersionSource = strings.Join(args, " ")
		if strings.HasSuffix(ver, "+unknown") {
			// containerd built without its version ldflags prints the
			// source tree's version: a lower bound, matched as if exact.
			info.Notes = append(info.Notes, fmt.Sprintf("%s was built without version ldflags; %s is the source tree's version, the real one may be later", b.Component, ver))
		}
	}

	if b.Component == Runc {
		if fout, ferr := boundedexec.Output(ctx, p.Timeout, bin, "features"); ferr == nil {
			p.useFeatures(&info, fout)
		} else if errors.Is(ferr, boundedexec.ErrTimeout) {
			return info, fmt.Errorf("probe %s features: %w", b.Component, ferr)
		}
	}
	if info.VersionErr != nil {
		if v, src, err := versionFromFile(bin); err == nil {
			info.Version, info.VersionErr, info.VersionSource = v, nil, src
		} else {
			info.Notes = append(info.Notes, err.Error())
		}
	}
	if info.VersionErr == nil && b.Component == Runc {
		// runc features exists since 1.1: a binary claiming less but
		// answering it (or the reverse) is a custom build whose version
		// string should not be trusted blindly.
		v11 := Version{Major: 1, Minor: 1}
		if info.Features && info.Version.Less(v11) {
			info.Notes = append(info.Notes, fmt.Sprintf("reports %s but implements `runc features` (runc >= 1.1)", info.Version.Raw))
		}
		if !info.Features && !info.Version.Less(v11) {
			info.Notes = append(info.Notes, fmt.Sprintf("reports %s but `runc features` failed (runc >= 1.1 implements it)", info.Version.Raw))
		}
	}
	return info, nil
}

func (p Prober) useFeatures(info *Info, out []byte) {
	var f struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(out, &f); err != nil {
		info.Notes = append(info.Notes, fmt.Sprintf("runc features: not JSON: %v", err))
		return
	}
	info.Features = true
	if info.VersionErr == nil {
		return
	}
	if v := f.Annotations["org.opencontainers.runc.version"]; v != "" {
		if pv, err := ParseVersion(v); err == nil {
			info.Version, info.VersionErr, info.VersionSource = pv, nil, "features"
		}
	}
	if info.Distro == "" {
		info.Distro = DistroVersion(f.Annotations["org.opencontainers.runc.commit"])
	}
}

var runcVersionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^runc version[ \t]*(\S*)[ \t]*$`) })
var runcCommitRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^commit:[ \t]*(\S*)[ \t]*$`) })

// ParseRuncVersion extracts the version and commit fields from
// `runc --version`:
//
//	runc version 1.1.5+ds1
//	commit: 1.1.5+ds1-1+deb12u1
//	spec: 1.0.2-dev
func ParseRuncVersion(out string) (version, commit string) {
	if m := runcVersionRe().FindStringSubmatch(out); m != nil {
		version = m[1]
	}
	if m := runcCommitRe().FindStringSubmatch(out); m != nil {
		commit = m[1]
	}
	return version, commit
}

// ParseContainerdVersion extracts version and revision from
// `containerd --version`, whose form is "containerd <package> <version>
// <revision>":
//
//	containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3
//	containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da
func ParseContainerdVersion(out string) (version, revision string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "containerd" {
			version = f[2]
			if len(f) >= 4 {
				revision = f[3]
			}
			return version, revision
		}
	}
	return "", ""
}

// ldflagsVersionRe finds the version variables runc, containerd (and its
// shims) and dockerd set with -X at build time.
var ldflagsVersionRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`-X[= ]'?(?:main\.version|github\.com/containerd/containerd(?:/v2)?/(?:pkg/)?version\.Version|github\.com/(?:docker/docker|moby/moby/v2)/dockerversion\.Version)=([^\s']+)`)
})

var pseudoRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d{14}-[0-9a-f]{12}`) })

// versionFromFile reads the Go build information embedded in the open
// binary f: the -X version ldflag when recorded, else the main module's
// version (set by `go install module@version`).
func versionFromFile(f *os.File) (Version, string, error) {
	bi, err := buildinfo.Read(f)
	if err != nil {
		return Version{}, "", fmt.Errorf("read build info %s: %w", f.Name(), err)
	}
	v, err := versionFromBuildInfo(bi)
	if err != nil {
		return Version{}, "", fmt.Errorf("read build info %s: %w", f.Name(), err)
	}
	return v, "buildinfo", nil
}

func versionFromBuildInfo(bi *debug.BuildInfo) (Version, error) {
	for _, s := range bi.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		if m := ldflagsVersionRe().FindStringSubmatch(s.Value); m != nil {
			if v, err := ParseVersion(m[1]); err == nil {
				return v, nil
			}
		}
	}
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
		// pseudo-versions (v1.1.13-0.20240201120000-abcdef123456) name a
		// commit, not a release; their base is one below what they say.
		if !pseudoRe().MatchString(mv) {
			if v, err := ParseVersion(strings.TrimSuffix(mv, "+incompatible")); err == nil {
				return v, nil
			}
		}
	}
	return Version{}, fmt.Errorf("no version in ldflags or main module (%q): %w", bi.Main.Version, ErrUnknownVersion)
}
