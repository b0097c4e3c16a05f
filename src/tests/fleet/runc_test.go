package fleet

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Real runc binaries on the cells, where the shipped manifests look for
// them (/var/vcap/packages/runc/bin/runc, garden-runc-release's package):
// built from the Go module proxy at a pinned version and brought by a dev
// release of their own, fleet-runc (runc-release/), one version per runc.

// directorCache is the machine's cache of the director's dependencies,
// stemcells, compiled releases and built runc (CELLGUARD_DIRECTOR_CACHE).
func directorCache() string {
	if d := os.Getenv("CELLGUARD_DIRECTOR_CACHE"); d != "" {
		return d
	}
	return "/var/tmp/cellguard-director"
}

// buildRuncScript builds runc v$1 into $2 in the scratch directory $3: the
// source `go mod download` gives, each replace of go.mod that points into
// the source tree dropped (the proxy's zip lacks nested modules), static
// with cgo (runc's nsenter), no seccomp tag (no libseccomp on a stemcell).
// src/internal/runcstate/testdata/README.md's recipe, linked statically.
//
// runc before rc93 has no go.mod (vendor.conf, not in the proxy's zip), and
// the proxy serves none of vendor.conf's commits: $4, when set, is the
// runc version whose go.mod and go.sum build it, with the major-version
// import paths that go.mod names (go-criu/v4, go-systemd/v22, dbus/v5) and
// two call sites those moved (criu's version, hooks' state). The code is
// the pinned version's, its devices cgroup code untouched; only its
// dependencies are rc93's.
const buildRuncScript = `set -euo pipefail
v=$1 out=$2 tmp=$3 mod=${4:-}
dir() { go mod download -json "github.com/opencontainers/runc@v$1" | jq -r .Dir; }
cp -r "$(dir "$v")" "$tmp/src" && chmod -R u+w "$tmp/src" && cd "$tmp/src"
if [ -n "$mod" ]; then
  cp "$(dir "$mod")/go.mod" "$(dir "$mod")/go.sum" .
  grep -rl --include=*.go -e '"github.com/checkpoint-restore/go-criu' -e '"github.com/coreos/go-systemd/' -e '"github.com/godbus/dbus"' . |
    xargs -r sed -i -e 's#"github.com/checkpoint-restore/go-criu\([/"]\)#"github.com/checkpoint-restore/go-criu/v4\1#' \
      -e 's#"github.com/coreos/go-systemd/#"github.com/coreos/go-systemd/v22/#' -e 's#"github.com/godbus/dbus"#"github.com/godbus/dbus/v5"#'
  # Two APIs those versions moved: go-criu v4's CriuVersion fields, and
  # runtime-spec's typed container state (checkpoint and hooks' state only).
  sed -i -e 's/\*criuVersionRPC\.Major)/*criuVersionRPC.MajorNumber)/' -e 's/\*criuVersionRPC\.Minor)/*criuVersionRPC.MinorNumber)/' \
    -e 's/state\.Status = status\.String()/state.Status = specs.ContainerState(status.String())/' libcontainer/container_linux.go
fi
for r in $(go mod edit -json | jq -r '.Replace[]? | select(.New.Path | startswith("./")) | .Old.Path'); do
  go mod edit -dropreplace="$r"
done
CGO_ENABLED=1 go build -mod=mod -trimpath -tags "netgo osusergo" \
  -ldflags "-X main.version=$v -extldflags -static" -o "$out.tmp" .
"$out.tmp" --version | grep -qx "runc version $v"
mv "$out.tmp" "$out"`

// runcModFor: the runc versions whose go.mod builds one without its own.
var runcModFor = map[string]string{"1.0.0-rc90": "1.0.0-rc93"}

// runcBuilds builds each pinned runc once per test process, for every
// shape and lane; the binary is kept in the director cache by version, so
// a warm run builds none (each took 1-3 min on this machine, under load).
var runcBuilds = struct {
	mu   sync.Mutex
	byV  map[string]string
	errs map[string]error
}{byV: map[string]string{}, errs: map[string]error{}}

// pinnedRunc is runc vVERSION, built from the Go module proxy or from the cache.
func pinnedRunc(ctx context.Context, version string) (path string, built time.Duration, err error) {
	runcBuilds.mu.Lock()
	defer runcBuilds.mu.Unlock()
	if p, ok := runcBuilds.byV[version]; ok {
		return p, 0, runcBuilds.errs[version]
	}
	dst := filepath.Join(directorCache(), "runc", "runc-"+version)
	if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
		runcBuilds.byV[version] = dst
		return dst, 0, nil
	}
	t0 := time.Now()
	err = buildRunc(ctx, version, dst)
	runcBuilds.byV[version], runcBuilds.errs[version] = dst, err
	return dst, time.Since(t0), err
}

func buildRunc(ctx context.Context, version, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("build runc %s: %w", version, err)
	}
	tmp, err := os.MkdirTemp("/var/tmp", "fleet-runc-build.")
	if err != nil {
		return fmt.Errorf("build runc %s: %w", version, err)
	}
	defer os.RemoveAll(tmp)
	if out, err := sh(ctx, tmp, nil, "bash", "-c", buildRuncScript, "bash", version, dst, tmp, runcModFor[version]); err != nil {
		return fmt.Errorf("build runc %s from the Go module proxy: %w\n%s", version, err, out)
	}
	return nil
}

// runcUploads is what a shape's lanes share of fleet-runc: each version's
// release, uploaded once to the shape's director (compiled from the
// compiled-release cache when an earlier run exported it), and whether the
// cache still lacks it (stored after the first deploy that compiled it).
type runcUploads struct {
	mu  sync.Mutex
	rel map[string]*runcUpload
}

type runcUpload struct {
	once    sync.Once
	rel     release
	err     error
	toStore bool
	say     string
}

// runcRelease makes sure fleet-runc VERSION is on the shape's director:
// the runc built (or cached), its dev release created from runc-release/
// in the work directory, and uploaded.
func (f *fleet) runcRelease(ctx context.Context, r *Record, version string) (release, error) {
	f.runcs.mu.Lock()
	u, ok := f.runcs.rel[version]
	if !ok {
		u = &runcUpload{}
		f.runcs.rel[version] = u
	}
	f.runcs.mu.Unlock()
	did := false
	u.once.Do(func() {
		u.rel, u.toStore, u.say, u.err = f.uploadRunc(ctx, version)
		did = true
	})
	switch {
	case u.err != nil:
	case did:
		r.Say("   fleet-runc/%s: %s", version, u.say)
	default:
		r.Say("   fleet-runc/%s: on the director", version)
	}
	return u.rel, u.err
}

func (f *fleet) uploadRunc(ctx context.Context, version string) (release, bool, string, error) {
	bin, took, err := pinnedRunc(ctx, version)
	if err != nil {
		return release{}, false, "", err
	}
	say := "runc v" + version + " from the director cache"
	if took > 0 {
		say = fmt.Sprintf("runc v%s built from the Go module proxy in %s", version, took.Round(time.Second))
	}
	src := filepath.Join(f.work, "src", "fleet-runc-"+version)
	tarball := filepath.Join(f.work, "fleet-runc-"+version+".tgz")
	if _, err := sh(ctx, f.repo, nil, "cp", "-a", filepath.Join(f.repo, "src/tests/fleet/runc-release"), src); err != nil {
		return release{}, false, "", err
	}
	if _, err := sh(ctx, f.repo, nil, "install", "-D", "-m", "0755", bin, filepath.Join(src, "src/runc/runc")); err != nil {
		return release{}, false, "", err
	}
	if _, err := sh(ctx, src, []string{"HOME=" + filepath.Join(f.work, "home")}, f.bosh.Bin, "create-release", "--force",
		"--version="+version, "--tarball="+tarball, "--non-interactive"); err != nil {
		return release{}, false, "", fmt.Errorf("bosh create-release of fleet-runc %s: %w", version, err)
	}
	rel, err := readRelease(tarball)
	if err != nil {
		return release{}, false, "", err
	}
	up, toStore := tarball, true
	if p, ok := f.cache.Lookup(rel); ok {
		up, toStore = p, false
		say += ", its release compiled from the cache"
	}
	res, err := f.bosh.MustRun(ctx, "upload-release", up)
	if err != nil {
		return release{}, false, "", err
	}
	return rel, toStore, fmt.Sprintf("%s; uploaded in %s", say, res.Took.Round(100*time.Millisecond)), nil
}

// storeRunc exports fleet-runc VERSION into the compiled-release cache
// after a deploy of this lane compiled it (once per shape).
func (f *fleet) storeRunc(ctx context.Context, r *Record, version string) {
	f.runcs.mu.Lock()
	u := f.runcs.rel[version]
	store := u != nil && u.err == nil && u.toStore
	if store {
		u.toStore = false
	}
	f.runcs.mu.Unlock()
	if !store {
		return
	}
	if ex, err := f.cache.Store(ctx, f.bosh, f.dep, u.rel); err != nil {
		r.Say("   bosh export-release fleet-runc/%s: %v (the next run compiles it again)", version, err)
	} else {
		r.Say("   bosh export-release fleet-runc/%s: %s, kept as %s", version, ex.Took.Round(100*time.Millisecond), f.cache.Path(u.rel))
	}
}

// releaseURLVars are cellguard_url and cellguard_sha1 of the shipped
// manifests, for this run's cellguard tarball: a file:// URL, which
// bosh-cli uploads from (or skips: the director has that version).
func (f *fleet) releaseURLVars() ([]string, error) {
	tb := f.releases[0].Tarball
	fh, err := os.Open(tb)
	if err != nil {
		return nil, fmt.Errorf("sha1 of %s: %w", tb, err)
	}
	defer fh.Close()
	h := sha1.New()
	if _, err := io.Copy(h, fh); err != nil {
		return nil, fmt.Errorf("sha1 of %s: %w", tb, err)
	}
	return []string{"-v", "cellguard_url=file://" + tb, "-v", "cellguard_sha1=" + hex.EncodeToString(h.Sum(nil))}, nil
}

// runcVersionIn is what the runc at path in vm answers to --version.
func runcVersionIn(ctx context.Context, vm VM, path string) string {
	out, err := exec.CommandContext(ctx, "nsenter", "-t", vm.InitPID, "-a", "--", path, "--version").CombinedOutput()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return firstLine(string(out))
}
