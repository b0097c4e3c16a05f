package facts

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
)

// Recheck is the one door through which the snapshot's judges
// (cgroup-integrity, runtime-ghosts, and the runc vouching they and
// stuck-runc-init share) read the host after the snapshot: a suspect is
// confirmed by waiting and reading it again, since a process joining its
// cgroups or a container being destroyed looks like an escape or a ghost
// for a moment. It is I/O, so it lives here; the judges call it only for
// the suspects they name.
type Recheck interface {
	// Sleep waits d between confirmation rounds.
	Sleep(d time.Duration)
	// Rereader reads a suspect process of v again.
	Rereader(v *snapshot.Host) snapshot.Rereader
	// StateExists says whether a runtime state file is still there.
	StateExists(path string) bool
	// Rediscover reads v's runtime states again (snapshot.Host.Rediscover).
	Rediscover(v *snapshot.Host) (*runcstate.Discovery, error)
	// FileID is what path resolves to (a runc binary, /proc/<pid>/exe).
	FileID(path string) (FileID, bool)
	// RuncFiles are the identities of the host's runc binaries under
	// root: the configured one, every runc on the runtime search path,
	// and paths.
	RuncFiles(root string, configured map[string]string, paths []string) map[FileID]bool
}

// FileID is a file's identity: what a path or a link resolves to.
type FileID struct{ Dev, Ino uint64 }

// LiveRecheck reads the host. Zero fields mean the host's own.
type LiveRecheck struct {
	// Wait sleeps between rounds; nil means time.Sleep.
	Wait func(time.Duration)
	// Reread replaces the snapshot's re-read of /proc (tests).
	Reread snapshot.Rereader
}

var _ Recheck = LiveRecheck{}

func (r LiveRecheck) Sleep(d time.Duration) {
	if r.Wait != nil {
		r.Wait(d)
		return
	}
	time.Sleep(d)
}

func (r LiveRecheck) Rereader(v *snapshot.Host) snapshot.Rereader {
	if r.Reread != nil {
		return r.Reread
	}
	return v.Rereader()
}

func (LiveRecheck) Rediscover(v *snapshot.Host) (*runcstate.Discovery, error) { return v.Rediscover() }

func (LiveRecheck) StateExists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func (LiveRecheck) FileID(path string) (FileID, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return FileID{}, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, false
	}
	return FileID{uint64(sys.Dev), sys.Ino}, true
}

func (r LiveRecheck) RuncFiles(root string, configured map[string]string, paths []string) map[FileID]bool {
	found, _ := runtimever.Locator{Root: root, Configured: configured}.Locate(runtimever.Runc)
	out := map[FileID]bool{}
	for _, b := range found {
		if id, ok := r.FileID(b.HostPath); ok {
			out[id] = true
		}
	}
	for _, p := range paths {
		if id, ok := r.FileID(hostroot.Join(root, p)); ok {
			out[id] = true
		}
	}
	return out
}

// Recheck is the host's door for confirming suspects: Spec.Recheck, else
// the live one, which waits only on the live root: a tree under a prefix is
// a snapshot (fixtures, benchmarks), where waiting 1.5s for a join in
// flight only adds latency.
func (h *Host) Recheck() Recheck {
	if h.spec.Recheck != nil {
		return h.spec.Recheck
	}
	if !hostroot.IsLive(h.spec.Root) {
		return LiveRecheck{Wait: func(time.Duration) {}}
	}
	return LiveRecheck{}
}
