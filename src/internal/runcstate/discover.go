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
)

// DefaultRoots are the runtime roots of a CF cell or Concourse worker:
// containerd's runc shim root (Garden in containerd mode, Concourse),
// plain runc (Garden's runc root), bpm.
func DefaultRoots() []string {
	return []string{"/run/containerd/runc", "/run/runc", "/var/vcap/sys/run/bpm-runc"}
}

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
}

// Discover finds state files under each runtime root (relative to root).
// A root holding <id>/state.json is runc-style; one holding
// <namespace>/<id>/state.json is containerd-style, filtered by namespaces
// (empty: all). Missing roots and containers deleted mid-scan are normal.
func Discover(root string, runtimeRoots, namespaces []string) (*Discovery, error) {
	if len(runtimeRoots) == 0 {
		runtimeRoots = DefaultRoots()
	}
	want := map[string]bool{}
	for _, n := range namespaces {
		want[n] = true
	}
	d := &Discovery{}
	// First list the candidate directories, then read and decode their
	// state files on a few goroutines: decoding is CPU-bound, and a cell
	// has hundreds of containers and at least two cores.
	var cands []candidate
	for _, rr := range runtimeRoots {
		dir := filepath.Join(root, rr)
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return d, fmt.Errorf("list runtime root %s: %w", dir, err)
		}
		d.Roots = append(d.Roots, rr)
		kind := runtimeKind(rr)
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(filepath.Join(sub, "state.json")); !errors.Is(err, fs.ErrNotExist) {
				cands = append(cands, candidate{sub, rr, kind, "", e.Name()})
				continue
			}
			// No state.json: a containerd namespace directory.
			if len(want) > 0 && !want[e.Name()] {
				continue
			}
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
					cands = append(cands, candidate{filepath.Join(sub, ie.Name()), rr, kind, e.Name(), ie.Name()})
				}
			}
		}
	}
	d.loadAll(cands)
	sort.Slice(d.Containers, func(i, j int) bool { return d.Containers[i].StatePath < d.Containers[j].StatePath })
	return d, nil
}

// candidate is a directory that may hold a container's state.json.
type candidate struct{ dir, rr, kind, ns, id string }

// loadWorkers bounds the goroutines decoding state files.
const loadWorkers = 4

// loadAll loads every candidate and keeps containers and problems in
// candidate order, as a sequential loop would.
func (d *Discovery) loadAll(cands []candidate) {
	type result struct {
		c    Container
		ok   bool
		prob []Problem
	}
	res := make([]result, len(cands))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(loadWorkers, runtime.GOMAXPROCS(0), len(cands)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cands) {
					return
				}
				var one Discovery
				k := cands[i]
				res[i].c, res[i].ok = one.load(k.dir, k.rr, k.kind, k.ns, k.id)
				res[i].prob = one.Problems
			}
		}()
	}
	wg.Wait()
	for _, r := range res {
		d.Problems = append(d.Problems, r.prob...)
		if r.ok {
			d.Containers = append(d.Containers, r.c)
		}
	}
}

func (d *Discovery) load(dir, rr, kind, ns, id string) (Container, bool) {
	path := filepath.Join(dir, "state.json")
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.Problems = append(d.Problems, Problem{Path: path, Err: err})
		}
		return Container{}, false
	}
	st, err := Decode(b)
	if err != nil {
		d.Problems = append(d.Problems, Problem{Path: path, Err: fmt.Errorf("decode state %s: %w", path, err)})
		return Container{}, false
	}
	_, ferr := os.Lstat(filepath.Join(dir, "exec.fifo"))
	return Container{
		Runtime: kind, RootDir: rr, Namespace: ns, ID: id, StatePath: path,
		Created: ferr == nil, State: st,
	}, true
}

func runtimeKind(rr string) string {
	switch {
	case strings.Contains(rr, "containerd"):
		return "containerd"
	case strings.Contains(rr, "bpm"):
		return "bpm"
	}
	return "runc"
}
