package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
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

// placeOf parses a /proc/<pid>/cgroup or /proc/thread-self/cgroup file.
func placeOf(path string) (netPlace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return netPlace{}, fmt.Errorf("read %s: %w", path, err)
	}
	var p netPlace
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.SplitN(l, []byte{':'}, 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range bytes.Split(f[1], []byte{','}) {
			switch string(c) {
			case "net_cls":
				p.cls = string(f[2])
			case "net_prio":
				p.prio = string(f[2])
			}
		}
	}
	return p, nil
}

// keepingTags runs use on a duplicate of pid's fd received on a locked
// thread whose net_cls and net_prio cgroups are pid's, and closes the
// duplicate before the thread is released. use returns a descriptor it
// keeps (never a socket: the nsfs file SIOCGSKNS opens, say) or -1.
func keepingTags(pid, fd int, use func(dup int) (int, error)) (int, error) {
	receiving.Lock()
	defer receiving.Unlock()
	type res struct {
		fd  int
		err error
	}
	done := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		kept, err := receiveAsHolder(pid, fd, use)
		done <- res{kept, err}
	}()
	r := <-done
	return r.fd, r.err
}

// receiveAsHolder is keepingTags on the locked thread. The holder's
// cgroups are read once its pidfd is open: a pid reused before is read as
// the new process, whose fd is then received; one reused after fails the
// receive (ESRCH).
func receiveAsHolder(pid, fd int, use func(dup int) (int, error)) (int, error) {
	dup, err := getfd(pid, fd, func() error {
		holder, err := placeOf("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("pid %d exited", pid)
			}
			return fmt.Errorf("%w: %w", ErrProbe, err)
		}
		self, err := placeOf("/proc/thread-self/cgroup")
		if err != nil {
			return fmt.Errorf("%w: %w", ErrProbe, err)
		}
		if holder != self {
			return fmt.Errorf("%w: fd %d of pid %d: pid %d is in net_cls cgroup %q and net_prio cgroup %q, cellguard in %q and %q; "+
				"receiving its socket would re-tag it with cellguard's classid and priority index",
				ErrNotInspected, fd, pid, pid, holder.cls, holder.prio, self.cls, self.prio)
		}
		return nil
	})
	if err != nil {
		return -1, err
	}
	defer unix.Close(dup)
	return use(dup)
}
