package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// A socket carries two v1 cgroup tags that tc, iptables (-m cgroup
// --cgroup) and per-interface priorities match on: its net_cls classid and
// its net_prio index. Receiving a socket file re-tags it with the
// receiver's: pidfd_getfd(2) installs the duplicate through receive_fd(),
// which calls __receive_sock() (net/core/sock.c), the SCM_RIGHTS rule;
// that calls sock_update_classid() (include/net/cls_cgroup.h: the classid
// of current's net_cls css) and sock_update_netprioidx()
// (include/net/netprio_cgroup.h: current's net_prio css id). The tags live
// in the socket (struct sock_cgroup_data), not in the descriptor, so the
// holder's own descriptor is re-tagged too: the bosh-agent's NATS firewall
// then dropped every packet of its socket (issue 23). Read in the kernel
// source, not in a man page.
//
// So the probe receives a socket only from a thread whose net_cls and
// net_prio cgroups are the holder's: the kernel then writes back the tags
// the socket has (a socket takes its holder's cgroups' tags when it is
// made, received, or its holder moved: the attach callbacks of both
// controllers re-tag every socket in the mover's fd table). Where the
// thread cannot be there, the socket is not asked.

// ErrNotInspected wraps the refusal to receive a socket whose tags the
// receive would change.
var ErrNotInspected = fmt.Errorf("%w: socket not inspected", ErrProbe)

// receiving serializes every receive of another process's file: a socket
// duplicate open in this process while another probe thread moves between
// cgroups would be re-tagged by that move (net_prio's attach walks the
// whole fd table).
var receiving sync.Mutex

// netPlace is where a task is in the v1 hierarchies of net_cls and
// net_prio: each cgroup's path, "" when the controller is in no v1
// hierarchy (every task is then in its root, with the same tags).
type netPlace struct{ cls, prio string }

// placeOf reads a /proc/<pid>/cgroup or /proc/thread-self/cgroup file.
func placeOf(path string) (netPlace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return netPlace{}, fmt.Errorf("read %s: %w", path, err)
	}
	var m cgroup.Membership
	if err := cgroup.ParseProcCgroup(b, &m); err != nil {
		return netPlace{}, fmt.Errorf("parse %s: %w", path, err)
	}
	cls, _ := m.Lookup("net_cls")
	prio, _ := m.Lookup("net_prio")
	return netPlace{cls: string(cls), prio: string(prio)}, nil
}

// keepingTags runs use on a duplicate of pid's fd received on a locked
// thread whose net_cls and net_prio cgroups are pid's, and closes the
// duplicate before the thread is released. use returns a descriptor it
// keeps (never a socket: the nsfs file SIOCGSKNS opens, say) or -1.
func keepingTags(pid, fd int, use func(dup int) (int, error)) (int, error) {
	receiving.Lock()
	defer receiving.Unlock()
	var kept int
	var err error
	onWorkerThread(func() (stuck bool) {
		kept, stuck, err = receiveAsHolder(pid, fd, use)
		return stuck
	})
	return kept, err
}

// onWorkerThread runs fn on a locked thread that is not the main one, and
// unlocks it unless fn says it is stuck in another cgroup: the runtime then
// ends it with its goroutine. The main thread is never used: it could not
// be ended, and /proc/<pid>/cgroup is its.
func onWorkerThread(fn func() (stuck bool)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Holding the main thread here, the next goroutine runs on another.
			onWorkerThread(fn)
			runtime.UnlockOSThread()
			return
		}
		if !fn() {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}

// receiveAsHolder is keepingTags on the locked thread. The holder's
// cgroups are read once its pidfd is open (a pid reused before is read as
// the new process, whose fd is then received; one reused after fails the
// receive, ESRCH). A thread elsewhere moves into them for the receive and
// back once the duplicate is closed: stuck when it could not move back.
func receiveAsHolder(pid, fd int, use func(dup int) (int, error)) (kept int, stuck bool, err error) {
	var back func() error
	dup, err := getfd(pid, fd, func() error {
		var err error
		back, err = joinHolder(pid, fd)
		return err
	})
	kept = -1
	if err == nil {
		kept, err = use(dup)
		unix.Close(dup) // before moving back: the move re-tags every socket this process holds
	}
	if back != nil {
		if berr := back(); berr != nil {
			if kept >= 0 {
				unix.Close(kept)
			}
			return -1, true, fmt.Errorf("%w: fd %d of pid %d: %w", ErrProbe, fd, pid, berr)
		}
	}
	return kept, false, err
}

// joinHolder moves the calling thread into pid's net_cls and net_prio
// cgroups when it is not in them, and returns how to move it back (nil
// when it did not move). When it cannot, it refuses: ErrNotInspected.
func joinHolder(pid, fd int) (back func() error, err error) {
	holder, err := placeOf("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("pid %d exited", pid)
		}
		return nil, fmt.Errorf("%w: %w", ErrProbe, err)
	}
	self, err := placeOf("/proc/thread-self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProbe, err)
	}
	if holder == self {
		return nil, nil
	}
	refuse := func(why error) error {
		return fmt.Errorf("%w: fd %d of pid %d: pid %d is in net_cls cgroup %q and net_prio cgroup %q, cellguard in %q and %q, "+
			"and receiving its socket from there would re-tag it with cellguard's classid and priority index; "+
			"joining its cgroups failed: %w", ErrNotInspected, fd, pid, pid, holder.cls, holder.prio, self.cls, self.prio, why)
	}
	moves, err := tagMoves(holder, self)
	if err != nil {
		return nil, refuse(err)
	}
	tid := strconv.Itoa(unix.Gettid())
	var done []move
	back = func() error {
		var errs []error
		for i := len(done) - 1; i >= 0; i-- {
			if err := writeTasks(done[i].from, tid); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, m := range moves {
		if err := writeTasks(m.to, tid); err != nil {
			if berr := back(); berr != nil {
				return nil, fmt.Errorf("%w: move back: %w", ErrProbe, berr) // stuck; see receiveAsHolder
			}
			return nil, refuse(err)
		}
		done = append(done, m)
	}
	return back, nil
}

// move is one hierarchy's part of joining: from the thread's cgroup
// directory to the holder's.
type move struct{ from, to string }

// tagMoves finds, in this mount namespace's cgroup mounts, the directories
// of the cgroups in each hierarchy where holder and self differ (one move
// when net_cls and net_prio share a hierarchy, as systemd's mount-setup.c
// mounts them).
func tagMoves(holder, self netPlace) ([]move, error) {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	var moves []move
	for _, c := range []struct{ name, to, from string }{{"net_cls", holder.cls, self.cls}, {"net_prio", holder.prio, self.prio}} {
		if c.to == c.from {
			continue
		}
		mnt, root, ok := v1Mount(b, c.name)
		if !ok {
			return nil, fmt.Errorf("no %s hierarchy is mounted in cellguard's mount namespace", c.name)
		}
		to, okTo := under(mnt, root, c.to)
		from, okFrom := under(mnt, root, c.from)
		if !okTo || !okFrom {
			return nil, fmt.Errorf("%s cgroups %q and %q are not both under the mount at %s (root %s)", c.name, c.to, c.from, mnt, root)
		}
		if m := (move{from: from, to: to}); !slices.Contains(moves, m) {
			moves = append(moves, m)
		}
	}
	return moves, nil
}

// v1Mount returns the mount point and root of a v1 cgroup mount of
// controller, from a mountinfo.
func v1Mount(mountinfo []byte, controller string) (mnt, root string, ok bool) {
	for _, l := range bytes.Split(mountinfo, []byte{'\n'}) {
		pre, post, found := bytes.Cut(l, []byte(" - "))
		f, g := bytes.Fields(pre), bytes.Fields(post)
		if !found || len(f) < 5 || len(g) < 3 || string(g[0]) != "cgroup" {
			continue
		}
		for _, o := range bytes.Split(g[2], []byte{','}) {
			if string(o) == controller {
				return unescapeMount(string(f[4])), unescapeMount(string(f[3])), true
			}
		}
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// under is the directory of cgroup path cg in a mount of its hierarchy at
// mnt whose root is root; false when the mount does not show it.
func under(mnt, root, cg string) (string, bool) {
	// A holder outside cellguard's cgroup namespace reads as "/../..": the
	// write must not be steered out of the mount (as cgroup.Layout.Move).
	if !strings.HasPrefix(cg, "/") || filepath.Clean(cg) != cg {
		return "", false
	}
	rel, ok := strings.CutPrefix(cg, root)
	if root == "/" {
		rel, ok = cg, true
	}
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return "", false
	}
	return filepath.Join(mnt, rel), true
}

// writeTasks moves thread tid into the v1 cgroup at dir (its tasks file
// moves one thread; cgroup.procs would move the whole process).
func writeTasks(dir, tid string) error {
	f, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("move thread %s into %s: %w", tid, dir, err)
	}
	_, err = f.WriteString(tid)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("move thread %s into %s: %w", tid, dir, err)
	}
	return nil
}
