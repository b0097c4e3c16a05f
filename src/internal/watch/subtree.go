package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"unsafe"

	"code.cloudfoundry.org/lager/v3"
	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
)

// SubtreeChanged is the event (and scan trigger) of a write to the
// cgroup.subtree_control of a container's cgroup or one of its ancestors
// on cgroup v2: what switches a controller, and with it a container's
// limits, off below it.
//
// The kernel announces it without knowing: vfs_write calls
// fsnotify_modify on every write(2) that succeeds (fs/read_write.c), so
// IN_MODIFY fires on the file for any writer, a hand's `echo -memory` or
// systemd's `-cpuset -cpu -io` during a daemon-reload's realization, and
// whether the write changed anything or not (measured on noble, 6.8:
// TestNobleWatchLimits). cgroup.c raises no notice of its own for it
// (cgroup_file_notify is for cgroup.events' populated and frozen,
// memory.events and the like), and a child's controller files vanishing
// with it are not watched here, so the parents' files are.
const SubtreeChanged systemd.EventKind = "subtree-control"

// subtreeFiles are the cgroup.subtree_control files that decide which
// controllers the containers of h have: each container's own cgroup (its
// children, e.g. Garden's init, depend on it) and every ancestor up to and
// including the v2 hierarchy's root. None on a host without a v2
// hierarchy holding controllers (hybrid: v1 has no subtree_control).
// Sorted, each once.
func subtreeFiles(h *snapshot.Host) []string {
	l := h.Layout()
	if l == nil || l.Mode != cgroup.Unified {
		return nil
	}
	var cgroups []string
	for _, c := range h.Discovery().Containers {
		if c.State == nil {
			continue
		}
		if abs, ok := c.State.CgroupPaths[""]; ok {
			cgroups = append(cgroups, abs)
		}
	}
	return subtreeControls(l, cgroups)
}

// subtreeControls maps absolute v2 cgroup directories, as runc records
// them, to the subtree_control files of each and its ancestors.
func subtreeControls(l *cgroup.Layout, cgroups []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, abs := range cgroups {
		h, rel, ok := l.Split(abs)
		if !ok || !h.Unified {
			continue
		}
		for {
			f := filepath.Join(l.Path(h, rel), "cgroup.subtree_control")
			if seen[f] {
				break // so are its ancestors
			}
			seen[f] = true
			out = append(out, f)
			if rel == "/" {
				break
			}
			rel = filepath.Dir(rel)
		}
	}
	slices.Sort(out)
	return out
}

// subtreeWatch keeps an inotify watch (IN_MODIFY) on each file it is told
// to, and turns each write into an event. Track is called after every
// host read, from any goroutine.
type subtreeWatch struct {
	mu     sync.Mutex
	fd     int
	f      *os.File
	byPath map[string]int // file -> watch descriptor
	byWD   map[int]string
}

func newSubtreeWatch() (*subtreeWatch, error) {
	// Non-blocking, so that os.File reads through the poller and Close
	// ends a pending Read.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	return &subtreeWatch{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), byPath: map[string]int{}, byWD: map[int]string{}}, nil
}

// track makes the watched files exactly files; it returns the files it
// could not watch (a cgroup gone since the read) with why.
func (s *subtreeWatch) track(files []string) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	add, remove := diffWatched(s.byPath, files)
	for _, p := range remove {
		wd := s.byPath[p]
		delete(s.byPath, p)
		delete(s.byWD, wd)
		// EINVAL: the kernel dropped it already (the cgroup was removed).
		_, _ = unix.InotifyRmWatch(s.fd, uint32(wd))
	}
	var errs []error
	for _, p := range add {
		wd, err := unix.InotifyAddWatch(s.fd, p, unix.IN_MODIFY)
		if err != nil {
			errs = append(errs, fmt.Errorf("inotify watch %s: %w", p, err))
			continue
		}
		s.byPath[p], s.byWD[wd] = wd, p
	}
	return errs
}

// diffWatched says which of want are not watched yet, and which watched
// files are no longer wanted (sorted).
func diffWatched(watched map[string]int, want []string) (add, remove []string) {
	wanted := make(map[string]bool, len(want))
	for _, p := range want {
		wanted[p] = true
		if _, ok := watched[p]; !ok {
			add = append(add, p)
		}
	}
	for p := range watched {
		if !wanted[p] {
			remove = append(remove, p)
		}
	}
	slices.Sort(add)
	slices.Sort(remove)
	return add, remove
}

// watched is how many files are watched.
func (s *subtreeWatch) watched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byPath)
}

// run sends an event per read that holds modify events, naming the first
// file, until ctx ends or reading fails; it closes the inotify fd.
func (s *subtreeWatch) run(ctx context.Context, out chan<- systemd.Event) error {
	stop := context.AfterFunc(ctx, func() { s.f.Close() })
	defer stop()
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := s.f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			s.f.Close()
			return fmt.Errorf("read inotify: %w", err)
		}
		at := time.Now()
		if file, ok := s.firstModified(buf[:n]); ok {
			select {
			case out <- systemd.Event{Kind: SubtreeChanged, Unit: file, At: at}:
			default: // a scan is due anyway
			}
		}
	}
}

// firstModified is the file of the first IN_MODIFY event in buf.
func (s *subtreeWatch) firstModified(buf []byte) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		off += unix.SizeofInotifyEvent + int(ev.Len)
		if ev.Mask&unix.IN_MODIFY != 0 {
			if p, ok := s.byWD[int(ev.Wd)]; ok {
				return p, true
			}
		}
	}
	return "", false
}

// watchSubtrees starts watching subtree_control files, feeding events;
// the files are set after each host read (trackSubtrees). Without
// inotify watch goes on with systemd's events and its period.
func (w *Watcher) watchSubtrees(ctx context.Context, events chan<- systemd.Event) {
	s, err := newSubtreeWatch()
	if err != nil {
		w.log.Error("subtree-control-watch-failed", err, lager.Data{"hint": "a hand write to cgroup.subtree_control is seen on the period only"})
		return
	}
	w.subtree = s
	go func() {
		if err := s.run(ctx, events); err != nil {
			w.log.Error("subtree-control-watch-failed", err, lager.Data{"hint": "a hand write to cgroup.subtree_control is seen on the period only"})
		}
	}()
}

// trackSubtrees watches the subtree_control files above h's containers.
// A file that cannot be watched (its cgroup went since the read) is
// tried again after the next read.
func (w *Watcher) trackSubtrees(h *snapshot.Host) {
	files := subtreeFiles(h)
	errs := w.subtree.track(files)
	for _, err := range errs {
		w.log.Debug("subtree-control-not-watched", lager.Data{"error": err.Error()})
	}
	if n := w.subtree.watched(); n != w.subtreeShown {
		w.subtreeShown = n
		w.log.Info("watching-subtree-control", lager.Data{"files": n})
	}
}
