package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// socketsIn resolves sockets from a table, as the kernel's SIOCGSKNS would.
type socketsIn map[uint64]uint64

func (s socketsIn) SocketNS(pid, fd int, sock uint64) (uint64, error) {
	if ns, ok := s[sock]; ok {
		return ns, nil
	}
	return 0, fmt.Errorf("fd %d of pid %d closed", fd, pid)
}

// Sockets lists no tables: every socket is asked.
func (s socketsIn) Sockets(int, uint64) (map[uint64]bool, error) { return nil, nil }

func (s socketsIn) Inspect(h netns.Holder, inode uint64) ([]netns.Interface, error) {
	return []netns.Interface{{Name: "lo", Flags: "loopback"}, {Name: "ipvl0", Flags: "up", Addrs: []string{"10.255.3.7/32"}}}, nil
}

// seed 003 on a fixture cell: the agent's socket holds a pod's namespace
// that nothing else keeps; the finding names the namespace, the holder's
// pid, command and fd, and the address left in it. The host's namespace
// (pid 1 is in it) is not a leak.
func TestLeakedNetns(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.Add(fakehost.Proc{PID: 40, Comm: "datadog-agent", Cgroup: "/system.slice/datadog.service",
		FDs: map[int]string{3: "socket:[900]", 7: "socket:[901]"}})
	h.Symlink("proc/1/ns/net", "net:[4026531840]")
	h.Symlink("proc/40/ns/net", "net:[4026531840]")
	d := deps(h)
	d.NetNS = socketsIn{900: 4026531840, 901: 4026532777}
	fs := run(t, d, "leaked-netns")
	bad := failures(fs)
	if len(bad) != 1 || bad[0].Subject != "net:[4026532777]" || bad[0].Data["pids"] != "40" ||
		!strings.Contains(bad[0].Detail, "held only by pid 40 (datadog-agent) fd 7 (socket)") ||
		bad[0].Data["addresses"] != "10.255.3.7/32" || !strings.Contains(bad[0].Detail, "ipvl0 10.255.3.7/32") {
		t.Fatalf("got %+v", bad)
	}
	if last := fs[len(fs)-1]; last.Data["sockets"] != "2" || last.Data["leaks"] != "1" {
		t.Fatalf("summary %+v", last)
	}
	// A warning, never a blocker: neither phase blocks on it.
	for _, c := range all(d) {
		if m := c.Meta(); m.ID == "leaked-netns" && (m.SeverityIn(validator.PreStart) != validator.Warning || m.SeverityIn(validator.Drain) != validator.Warning) {
			t.Fatalf("severity %v", m.Severity)
		}
	}

	// The pod's sandbox process comes back into it: no leak.
	h.Add(fakehost.Proc{PID: 70, Comm: "pause", Cgroup: "/kubepods"})
	h.Symlink("proc/70/ns/net", "net:[4026532777]")
	if bad := failures(run(t, d, "leaked-netns")); len(bad) != 0 {
		t.Fatalf("a namespace with a process in it: %+v", bad)
	}
}

// Under a fixture root without a probe, nsfs files are still read and the
// sockets are reported as not asked, which is not a warning.
func TestLeakedNetnsWithoutProbe(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Add(fakehost.Proc{PID: 40, Comm: "cni", Cgroup: "/", FDs: map[int]string{3: "socket:[900]", 5: "net:[4026532778]"}})
	h.Symlink("proc/40/ns/net", "net:[4026531840]")
	fs := run(t, deps(h), "leaked-netns")
	bad := failures(fs)
	if len(bad) != 1 || bad[0].Subject != "net:[4026532778]" || !strings.Contains(bad[0].Detail, "fd 5 (nsfs)") {
		t.Fatalf("got %+v", fs)
	}
	for _, f := range fs {
		if f.Subject == "sockets" && f.Status != validator.Skip {
			t.Fatalf("unresolved sockets under a fixture root: %+v", f)
		}
	}
}

// refusing is the live probe's answer for a socket whose holder is in
// other net_cls/net_prio cgroups than the probe can receive it from.
type refusing struct{ socketsIn }

func (r refusing) SocketNS(pid, fd int, sock uint64) (uint64, error) {
	if sock == 901 {
		return 0, fmt.Errorf("%w: fd %d of pid %d: in another net_cls cgroup", netns.ErrNotInspected, fd, pid)
	}
	return r.socketsIn.SocketNS(pid, fd, sock)
}

// Issue 23: a socket that receiving would re-tag is not asked, and the
// check says so (a warning an operator can act on), apart from sockets the
// probe could not ask for other reasons.
func TestLeakedNetnsReportsSocketsNotInspected(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.Add(fakehost.Proc{PID: 40, Comm: "bosh-agent", Cgroup: "/system.slice/bosh-agent.service",
		FDs: map[int]string{3: "socket:[900]", 7: "socket:[901]"}})
	h.Symlink("proc/40/ns/net", "net:[4026531840]")
	d := deps(h)
	d.NetNS = refusing{socketsIn{900: 4026531840}}
	fs := run(t, d, "leaked-netns")
	var got *validator.Finding
	for i := range fs {
		if fs[i].Subject == "sockets" {
			got = &fs[i]
		}
	}
	if got == nil || got.Status != validator.Warn || got.Data["not_inspected"] != "1" ||
		!strings.Contains(got.Detail, "1 of 2 sockets not inspected: receiving them would re-tag them") ||
		!strings.Contains(got.Detail, "fd 7 of pid 40") {
		t.Fatalf("got %+v", fs)
	}
}
