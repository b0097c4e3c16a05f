package netns_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/leakyns"
)

// BenchmarkScanLive is the leaked-netns scan on this host with thousands of
// extra sockets held by helper processes (a cell's agents, daemons and
// containers hold thousands) and, in the last two rounds, 4,000 extra
// processes (sleep, each with its three standard files: the fd walk's cost
// is per process), three ways: the fd walk without a probe (fd links only:
// what the scan costs before asking any socket), the fd walk with the live
// probe, and the BPF iterator (which lists open files and sockets'
// namespaces in the kernel and asks the probe nothing). cpu-ms/op is the
// process's user+sys time per scan, the iterator's kernel work included.
// Only the last round has a namespace held only by a socket: a host where
// something holds a namespace file or a socket outside its holder's
// namespace also has every process's namespaces read, whichever way files
// were listed. make bench, docs/performance.md.
func BenchmarkScanLive(b *testing.B) {
	testkit.RequireRoot(b, "pidfd_getfd on other processes' sockets, a BPF iterator")
	var h *leakyns.Helper // the leak, started for the last stage
	sleepers, sockets := 0, 0
	for _, stage := range []struct {
		procs, sockets int
		leak           bool
	}{{0, 1000, false}, {0, 5000, false}, {4000, 5000, false}, {4000, 5000, true}} {
		startSleepers(b, stage.procs-sleepers)
		sleepers = stage.procs
		for ; sockets < stage.sockets; sockets += 500 {
			leakyns.Start(b, leakyns.Sockets, 500)
		}
		if stage.leak {
			h = leakyns.Start(b, leakyns.Socket, 0)
		}
		for _, v := range []struct {
			name  string
			probe netns.Probe
			files netns.FileSource
		}{
			{"probe=false/files=fd-walk", nil, nil},
			{"probe=true/files=fd-walk", netns.Live{}, nil},
			{"probe=true/files=bpf-iterator", netns.Live{}, netns.TaskFiles{}},
		} {
			name := fmt.Sprintf("extra_processes=%d/extra_sockets=%d/leak=%v/%s", stage.procs, stage.sockets, stage.leak, v.name)
			b.Run(name, func(b *testing.B) { scanLive(b, h, v.probe, v.files) })
		}
	}
}

// scanLive scans b.N times and reports the last scan's counts; with a
// probe, h's leak (when there is one) must be found.
func scanLive(b *testing.B, h *leakyns.Helper, probe netns.Probe, files netns.FileSource) {
	var res netns.Result
	before := cpuTime(b)
	for b.Loop() {
		var err error
		if res, err = (&netns.Scanner{Root: "/", Probe: probe, Files: files}).Scan(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(res.Sockets), "sockets")
	b.ReportMetric(float64(res.Processes), "processes")
	if files != nil && res.Via != netns.ViaIterator {
		b.Fatalf("open files listed by %q (%v), want the iterator", res.Via, res.IterErr)
	}
	if probe != nil && h != nil {
		found := false
		for _, l := range res.Leaks {
			found = found || l.Inode == h.Inode
		}
		if !found {
			b.Fatalf("the helper's leak net:[%d] was not found: leaks %+v, unresolved %d (%v)", h.Inode, res.Leaks, res.Unresolved, res.ProbeErr)
		}
	}
}

// cpuTime is this process's user and system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startSleepers starts n sleep processes, killed (each by its pid) when
// the benchmark ends.
func startSleepers(b *testing.B, n int) {
	var cmds []*exec.Cmd
	b.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	for i := 0; i < n; i++ {
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			b.Fatalf("start sleeper %d: %v", i, err)
		}
		cmds = append(cmds, c)
	}
}

// BenchmarkScanCell is the scan on the 1x synthetic cell of cellbench
// (fakehost.Generate: 6,000 processes, no open files), in-process: the
// cost leaked-netns adds to every validate of a cell.
func BenchmarkScanCell(b *testing.B) {
	root := b.TempDir()
	if _, err := fakehost.Generate(root, fakehost.Cell(1)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := (&netns.Scanner{Root: root}).Scan(); err != nil {
			b.Fatal(err)
		}
	}
}
