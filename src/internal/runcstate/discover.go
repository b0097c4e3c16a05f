package runcstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// StandardRoots are the runtime roots runc, containerd, Docker and crun use
// by default: containerd's runc shim root (Garden in containerd mode,
// Concourse, Kubernetes), plain runc's (Garden's runc root), Docker's runc
// root (dockerd runs runc with --root /run/docker/runtime-runc/moby, its
// containerd namespace) and crun's (/run/crun/<id>/status). A root that does
// not exist is skipped. Roots of a particular platform (BOSH's bpm) are the
// caller's to add.
func StandardRoots() []string {
	return []string{"/run/containerd/runc", "/run/runc", DockerRoot, CrunRoot}
}

// DockerRoot is where dockerd's runc keeps its state; CrunRoot is crun's
// default state root (get_run_directory in crun's src/libcrun/status.c).
const (
	DockerRoot = "/run/docker/runtime-runc/moby"
	CrunRoot   = "/run/crun"
)

// State files: runc's, and crun's status (which runc never writes).
const (
	runcStateFile = "state.json"
	crunStateFile = "status"
)

// Container is one state file found under a runtime root.
type Container struct {
	Runtime   string // containerd, runc or bpm, from the root's path
	RootDir   string // the runtime root as configured, e.g. /run/runc
	Namespace string // containerd namespace, "" elsewhere
	ID        string // directory name; equals State.ID for runc-written files
	StatePath string // the file as seen under the root prefix
	// Created is true when exec.fifo exists: `runc create` ran and
	// `runc start` did not, so runc init is legitimately waiting.
	Created bool
	State   *State
	// CgroupPath is crun's one cgroup path, the same in every hierarchy
	// (its status file has no per-controller map); "" for runc, whose
	// State.CgroupPaths say where each hierarchy's cgroup is.
	CgroupPath string
}

// Name is how reports call the container: "garden/c1" for containerd
// namespaces, the id otherwise.
func (c *Container) Name() string {
	if c.Namespace != "" {
		return c.Namespace + "/" + c.ID
	}
	return c.ID
}

// Problem is a state file that exists but could not be read or decoded.
type Problem struct {
	Path string
	Err  error
}

// Discovery is what Discover found.
type Discovery struct {
	Containers []Container
	Problems   []Problem
	// Roots lists the runtime roots that exist under the prefix.
	Roots []string
	// Searched lists every runtime root looked for, found or not: what a
	// "nothing to check" says.
	Searched []string
	// Runtimes is one entry per root found: the runtime, the root and how
	// many containers it holds.
	Runtimes []Runtime
}

// Runtime is a runtime root found.
type Runtime struct {
	Name       string // runc, containerd, docker, crun or bpm
	Root       string
	Containers int
}

// Discover finds state files under each runtime root (relative to root).
// A root holding <id>/state.json is runc-style; one holding
// <namespace>/<id>/state.json is containerd-style, filtered by namespaces
// (empty: all). Missing roots and containers deleted mid-scan are normal.
func Discover(root string, runtimeRoots, namespaces []string) (*Discovery, error) {
	return discover(root, runtimeRoots, namespaces, nil)
}

// discover is Discover, through cache when it is not nil.
func discover(root string, runtimeRoots, namespaces []string, cache *Cache) (*Discovery, error) {
	if len(runtimeRoots) == 0 {
		runtimeRoots = StandardRoots()
	}
	want := map[string]bool{}
	for _, n := range namespaces {
		want[n] = true
	}
	d := &Discovery{Searched: runtimeRoots}
	// First list the candidate directories, then read and decode their
	// state files on a few goroutines: decoding is CPU-bound, and a cell
	// has hundreds of containers and at least two cores. Files are opened
	// relative to the runtime root's open directory, so the kernel does not
	// resolve the whole path again for each of the hundreds of containers.
	var cands []candidate
	for _, rr := range runtimeRoots {
		dir := filepath.Join(root, rr)
		f, err := os.Open(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return d, fmt.Errorf("list runtime root %s: %w", dir, err)
		}
		defer f.Close()
		ents, err := f.ReadDir(-1)
		if err != nil {
			return d, fmt.Errorf("list runtime root %s: %w", dir, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() }) // as os.ReadDir
		dirfd := int(f.Fd())
		d.Roots = append(d.Roots, rr)
		kind := runtimeKind(rr)
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if file, ok := stateFileIn(dirfd, e.Name()); ok {
				cands = append(cands, candidate{dirfd, dir, e.Name(), rr, kind, "", e.Name(), file})
				continue
			}
			// No state.json: a containerd namespace directory.
			if len(want) > 0 && !want[e.Name()] {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			inner, err := os.ReadDir(sub)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				d.Problems = append(d.Problems, Problem{Path: sub, Err: err})
				continue
			}
			for _, ie := range inner {
				if ie.IsDir() {
					rel := e.Name() + "/" + ie.Name()
					// containerd's shim runs crun with the same
					// <namespace>/<id> layout when crun is its runtime.
					file, _ := stateFileIn(dirfd, rel)
					cands = append(cands, candidate{dirfd, dir, rel, rr, kind, e.Name(), ie.Name(), file})
				}
			}
		}
	}
	d.loadAll(cands, cache)
	sort.Slice(d.Containers, func(i, j int) bool { return d.Containers[i].StatePath < d.Containers[j].StatePath })
	n := map[string]int{}
	for _, c := range d.Containers {
		n[c.RootDir]++
	}
	for _, rr := range d.Roots {
		d.Runtimes = append(d.Runtimes, Runtime{Name: runtimeKind(rr), Root: rr, Containers: n[rr]})
	}
	return d, nil
}

// stateFileIn says which state file the directory rel (under the open
// runtime root dirfd) holds: runc's state.json, else crun's status; false
// when it holds neither (a containerd namespace directory, or a container
// deleted meanwhile), with state.json for the caller to try anyway.
func stateFileIn(dirfd int, rel string) (string, bool) {
	var st unix.Stat_t
	for _, f := range []string{runcStateFile, crunStateFile} {
		if err := unix.Fstatat(dirfd, rel+"/"+f, &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.ENOENT {
			return f, true
		}
	}
	return runcStateFile, false
}

// candidate is a directory that may hold a container's state.json: rel
// under the runtime root rootDir, open as dirfd.
type candidate struct {
	dirfd        int
	rootDir, rel string
	rr, kind, ns string
	id           string
	file         string // runcStateFile or crunStateFile
}

// loadWorkers bounds the goroutines decoding state files.
const loadWorkers = 4

// loadAll loads every candidate and keeps containers and problems in
// candidate order, as a sequential loop would.
func (d *Discovery) loadAll(cands []candidate, cache *Cache) {
	type result struct {
		c       Container
		ok      bool
		prob    []Problem
		id      fileID
		decoded bool
	}
	var old map[string]cached // read-only while the workers run
	if cache != nil {
		old = cache.files
	}
	res := make([]result, len(cands))
	var next atomic.Int64
	known := new(Known) // this scan's: containers share most of their config
	var wg sync.WaitGroup
	for w := 0; w < min(loadWorkers, runtime.GOMAXPROCS(0), len(cands)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte // Decode copies what it keeps
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cands) {
					return
				}
				var one Discovery
				r := &res[i]
				if cache != nil {
					r.c, r.ok, r.id, r.decoded, buf = one.loadCached(cands[i], buf, known, old)
				} else {
					r.c, r.ok, buf = one.load(cands[i], buf, known)
				}
				r.prob = one.Problems
			}
		}()
	}
	wg.Wait()
	var files map[string]cached
	if cache != nil {
		files = make(map[string]cached, len(res))
		cache.Decoded = 0
	}
	for _, r := range res {
		d.Problems = append(d.Problems, r.prob...)
		if r.ok {
			d.Containers = append(d.Containers, r.c)
			if files != nil && r.c.CgroupPath == "" && r.c.Runtime != "crun" {
				files[r.c.StatePath] = cached{id: r.id, state: r.c.State}
			}
		}
		if r.decoded {
			cache.Decoded++
		}
	}
	if cache != nil {
		cache.files = files
	}
}

// loadCached is load for a runc state file whose identity (fileID) is the
// one old recorded for its path: the state decoded then, without reading
// it. Anything else (crun's two files, a changed or new file) is loaded;
// decoded says so.
func (d *Discovery) loadCached(k candidate, buf []byte, known *Known, old map[string]cached) (Container, bool, fileID, bool, []byte) {
	var st unix.Stat_t
	if k.file != runcStateFile || unix.Fstatat(k.dirfd, k.rel+"/"+k.file, &st, 0) != nil {
		c, ok, b := d.load(k, buf, known)
		return c, ok, fileID{}, true, b
	}
	id := idOf(&st)
	path := filepath.Join(k.rootDir, k.rel, k.file)
	if prev, ok := old[path]; ok && prev.id == id {
		var fi unix.Stat_t
		ferr := unix.Fstatat(k.dirfd, k.rel+"/exec.fifo", &fi, unix.AT_SYMLINK_NOFOLLOW)
		return Container{Runtime: k.kind, RootDir: k.rr, Namespace: k.ns, ID: k.id, StatePath: path,
			Created: ferr == nil, State: prev.state}, true, id, false, buf
	}
	c, ok, b := d.load(k, buf, known)
	return c, ok, id, true, b
}

func (d *Discovery) load(k candidate, buf []byte, known *Known) (Container, bool, []byte) {
	path := filepath.Join(k.rootDir, k.rel, k.file)
	b, err := procfs.ReadIntoAt(k.dirfd, k.rel+"/"+k.file, path, buf[:0])
	if err != nil {
		if !procfs.IsGone(err) { // deleted mid-scan is normal
			d.Problems = append(d.Problems, Problem{Path: path, Err: err})
		}
		return Container{}, false, b
	}
	kind := k.kind
	var st *State
	if k.file == crunStateFile {
		kind = "crun" // also below containerd's root, when crun is its runtime
		cfg, cerr := procfs.ReadIntoAt(k.dirfd, k.rel+"/config.json", filepath.Join(k.rootDir, k.rel, "config.json"), nil)
		if cerr != nil {
			cfg = nil // namespaces unknown: the checks go by cgroups alone
		}
		st, err = DecodeCrun(k.id, b, cfg)
	} else {
		st, err = decode(b, known)
	}
	if err != nil {
		d.Problems = append(d.Problems, Problem{Path: path, Err: fmt.Errorf("decode state %s: %w", path, err)})
		return Container{}, false, b
	}
	// Both runc and crun (libcrun_status_create_exec_fifo) leave
	// exec.fifo between create and start.
	var fi unix.Stat_t
	ferr := unix.Fstatat(k.dirfd, k.rel+"/exec.fifo", &fi, unix.AT_SYMLINK_NOFOLLOW)
	c := Container{
		Runtime: kind, RootDir: k.rr, Namespace: k.ns, ID: k.id, StatePath: path,
		Created: ferr == nil, State: st,
	}
	if k.file == crunStateFile {
		c.CgroupPath = st.Config.Cgroups.Path
	}
	return c, true, b
}

func runtimeKind(rr string) string {
	switch {
	case strings.Contains(rr, "containerd"):
		return "containerd"
	case strings.Contains(rr, "bpm"):
		return "bpm"
	case strings.Contains(rr, "docker"):
		return "docker"
	case strings.Contains(rr, "crun"):
		return "crun"
	}
	return "runc"
}
