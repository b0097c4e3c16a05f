package checks

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/leakyns"
)

func TestMain(m *testing.M) {
	leakyns.Main()   // returns unless this process is a helper
	pipeHolderMain() // likewise
	os.Exit(m.Run())
}

// noIterator is a FileSource that cannot run, as on a kernel without BTF.
type noIterator struct{}

func (noIterator) OpenFiles() (netns.OpenFiles, error) {
	return netns.OpenFiles{}, errors.New("load kernel BTF: no such file")
}

// seed 003 on the real kernel, through the check with the probe allowed
// (validator.netns_probe): a namespace held only by a helper's socket is
// a failure naming its pid and fd, whichever way open files were listed,
// and the pass finding says which: the BPF iterator on the live root, the
// fd walk and why when the iterator cannot run.
func TestLeakedNetnsLive(t *testing.T) {
	testkit.RequireRoot(t, "a BPF iterator, pidfd_getfd and a new network namespace")
	h := leakyns.Start(t, leakyns.Socket, 0)
	for _, tc := range []struct {
		name    string
		files   netns.FileSource
		via     string
		because string
	}{
		{"bpf-iterator", nil, netns.ViaIterator, "BPF task_file iterator (sockets' namespaces from the kernel"},
		{"fd-walk", noIterator{}, netns.ViaFDWalk, "fd walk of /proc/<pid>/fd (the BPF task_file iterator could not run: load kernel BTF: no such file)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &netnsCase{Root: "/", Files: tc.files, Probe: true, Sleep: func(time.Duration) {}}
			fs, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ns := "net:[" + strconv.FormatUint(h.Inode, 10) + "]"
			found := false
			for _, f := range fs {
				found = found || f.Subject == ns && f.Status == validator.Fail &&
					strings.Contains(f.Data["holders"], "pid "+strconv.Itoa(h.PID)+" (checks.test) fd "+strconv.Itoa(h.FD)+" (socket)")
			}
			pass := fs[len(fs)-1]
			if !found || pass.Data["files_via"] != tc.via || !strings.Contains(pass.Detail, tc.because) {
				t.Fatalf("want %s held by pid %d fd %d and the files listed by %q (%q); got %+v", ns, h.PID, h.FD, tc.via, tc.because, fs)
			}
			t.Logf("%s", pass.Detail)
		})
	}
}

// With the probe off (the default), the same leak is not looked for, and
// the check says so by the property's name: never a silent pass, never a
// guess. The fd walk still lists the helper's socket.
func TestLeakedNetnsLiveProbeOff(t *testing.T) {
	testkit.RequireRoot(t, "a new network namespace")
	h := leakyns.Start(t, leakyns.Socket, 0)
	c := &netnsCase{Root: "/", Sleep: func(time.Duration) {}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ns := "net:[" + strconv.FormatUint(h.Inode, 10) + "]"
	var off bool
	for _, f := range fs {
		if f.Subject == ns {
			t.Fatalf("probe off: the socket's namespace was judged: %+v", f)
		}
		off = off || f.Subject == "sockets" && f.Status == validator.Skip && f.Data["probe"] == "off" &&
			strings.Contains(f.Detail, "not judged: probe off (cellguard.validator.netns_probe)")
	}
	pass := fs[len(fs)-1]
	if !off || pass.Data["files_via"] != netns.ViaFDWalk {
		t.Fatalf("want the sockets not judged, probe off, by the fd walk; got %+v", fs)
	}
}
