package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// inotifyInstances is fs.inotify.max_user_instances while fleets run. The
// VMs share root's user namespace, so every VM's systemd, journald and
// agent take root's inotify instances: at Debian's default of 128, three
// shapes' lanes (about 36 VMs) ran out, and a VM's systemd exited during
// boot ("Failed to create control group inotify object: Too many open
// files", lanes run 1, jammy). cellguard's own sysctl profile asks a cell
// for 8192 (src/internal/sysctl/profile.go).
const inotifyInstances = 2048

var hostInotify = &hostSysctl{proc: sysctl.Proc{Dir: "/proc/sys"}, key: sysctl.MustKey("fs.inotify.max_user_instances"), atLeast: inotifyInstances}

// hostSysctl raises one host sysctl to atLeast while any fleet runs, in
// this process or another (make cell beside a CI run), and the last one to
// end puts the old value back. Processes agree through two lock files in
// stateDir (the director's cache directory unless set): each holds the
// users lock shared while its fleets run, and takes the gate lock
// exclusively for a moment to raise, or, at its end, to learn (users lock
// exclusive, without waiting) whether it is the last one and then restore
// the value kept in a file beside them. A process killed without its
// cleanup leaves that file, and the next last one restores it.
type hostSysctl struct {
	proc     sysctl.Proc // read and written as cellguard's sysctl profile is
	key      sysctl.Key
	atLeast  int
	stateDir string

	mu    sync.Mutex
	users int
	held  *os.File // the users lock, held shared while this process's fleets run
}

func (h *hostSysctl) base() string {
	dir := h.stateDir
	if dir == "" {
		dir = os.Getenv("CELLGUARD_DIRECTOR_CACHE")
		if dir == "" {
			dir = "/var/tmp/cellguard-director"
		}
	}
	return filepath.Join(dir, "host-"+h.key.Name())
}

// lockFile opens base+suffix and flocks it with how.
func lockFile(path string, how int) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// raise counts a user and, for the process's first, raises the value if
// it is lower; release must run once the user's VMs are gone. said tells
// what changed.
func (h *hostSysctl) raise() (release func(), said string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users == 0 {
		gate, err := lockFile(h.base()+".gate", syscall.LOCK_EX)
		if err != nil {
			return nil, "", err
		}
		defer gate.Close()
		if said, err = h.raiseLocked(h.base() + ".orig"); err != nil {
			return nil, "", err
		}
		if h.held, err = lockFile(h.base()+".users", syscall.LOCK_SH); err != nil {
			return nil, "", err
		}
	}
	h.users++
	var once sync.Once
	return func() { once.Do(h.release) }, said, nil
}

func (h *hostSysctl) raiseLocked(origPath string) (string, error) {
	cur, err := h.read()
	if err != nil {
		return "", err
	}
	if cur >= h.atLeast {
		return "", nil
	}
	if _, err := os.Stat(origPath); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(origPath, []byte(strconv.Itoa(cur)), 0o644); err != nil {
			return "", err
		}
	}
	if err := h.proc.Write(h.key, strconv.Itoa(h.atLeast)); err != nil {
		return "", fmt.Errorf("raise %s to %d: %w", h.key, h.atLeast, err)
	}
	return fmt.Sprintf("%s %d -> %d while fleets run (the last one puts it back)", h.key, cur, h.atLeast), nil
}

func (h *hostSysctl) read() (int, error) {
	v, err := h.proc.Read(h.key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s: %q: %w", h.key, v, err)
	}
	return n, nil
}

func (h *hostSysctl) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users--; h.users > 0 || h.held == nil {
		return
	}
	held := h.held
	h.held = nil
	defer held.Close()
	// Under the gate no other process joins meanwhile.
	gate, err := lockFile(h.base()+".gate", syscall.LOCK_EX)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleet: %v; %s left as it is\n", err, h.key)
		return
	}
	defer gate.Close()
	if syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // another process's fleets still run: the last one restores
	}
	origPath := h.base() + ".orig"
	b, err := os.ReadFile(origPath)
	if err != nil {
		return // nobody raised it
	}
	if err := h.proc.Write(h.key, strings.TrimSpace(string(b))); err != nil {
		fmt.Fprintf(os.Stderr, "fleet: put %s back to %s: %v\n", h.key, b, err)
		return
	}
	os.Remove(origPath)
}
