package fleet

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// inotifyInstances is fs.inotify.max_user_instances while fleets run. The
// VMs share root's user namespace, so every VM's systemd, journald and
// agent take root's inotify instances: at Debian's default of 128, three
// shapes' lanes (about 36 VMs) ran out, and a VM's systemd exited during
// boot ("Failed to create control group inotify object: Too many open
// files", lanes run 1, jammy). cellguard's own sysctl profile asks a cell
// for 8192 (src/internal/sysctl/profile.go).
const inotifyInstances = 2048

var hostInotify = &hostSysctl{path: "/proc/sys/fs/inotify/max_user_instances", atLeast: inotifyInstances}

// hostSysctl raises one host sysctl to atLeast while any fleet runs, and
// puts the old value back when the last one ends.
type hostSysctl struct {
	path    string
	atLeast int

	mu    sync.Mutex
	users int
	old   string // "" when it was already high enough
}

// raise counts a user and, for the first, raises the value; the returned
// release must run once the user's VMs are gone. said tells what changed.
func (h *hostSysctl) raise() (release func(), said string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users == 0 {
		b, err := os.ReadFile(h.path)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", h.path, err)
		}
		cur := strings.TrimSpace(string(b))
		n, err := strconv.Atoi(cur)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %q: %w", h.path, cur, err)
		}
		h.old = ""
		if n < h.atLeast {
			if err := os.WriteFile(h.path, []byte(strconv.Itoa(h.atLeast)), 0o644); err != nil {
				return nil, "", fmt.Errorf("raise %s to %d: %w", h.path, h.atLeast, err)
			}
			h.old = cur
			said = fmt.Sprintf("%s %s -> %d while the fleets run (put back after)", h.path, cur, h.atLeast)
		}
	}
	h.users++
	var once sync.Once
	return func() { once.Do(h.release) }, said, nil
}

func (h *hostSysctl) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.users--
	if h.users == 0 && h.old != "" {
		if err := os.WriteFile(h.path, []byte(h.old), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "fleet: put %s back to %s: %v\n", h.path, h.old, err)
		}
		h.old = ""
	}
}
