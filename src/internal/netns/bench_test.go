package netns_test

import (
	"fmt"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/testkit"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/fakehost"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/leakyns"
)

// BenchmarkScanLive is the leaked-netns scan on this host with thousands of
// extra sockets held by helper processes (a cell's agents, daemons and
// containers hold thousands), against the same scan without a probe (fd
// links only: what the scan costs before asking any socket): make bench,
// docs/performance.md.
func BenchmarkScanLive(b *testing.B) {
	testkit.RequireRoot(b, "pidfd_getfd on other processes' sockets")
	for _, n := range []int{1000, 5000} {
		for i := 0; i < n/500; i++ {
			leakyns.Start(b, leakyns.Sockets, 500)
		}
		h := leakyns.Start(b, leakyns.Socket, 0) // one leak to find and inspect
		for _, probe := range []netns.Probe{nil, netns.Live{}} {
			name := fmt.Sprintf("extra_sockets=%d/probe=%v", n, probe != nil)
			b.Run(name, func(b *testing.B) {
				var res netns.Result
				for b.Loop() {
					var err error
					if res, err = (&netns.Scanner{Root: "/", Probe: probe}).Scan(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(res.Sockets), "sockets")
				b.ReportMetric(float64(res.Processes), "processes")
				if probe != nil {
					found := false
					for _, l := range res.Leaks {
						found = found || l.Inode == h.Inode
					}
					if !found {
						b.Fatalf("the helper's leak net:[%d] was not found: leaks %+v, unresolved %d (%v)", h.Inode, res.Leaks, res.Unresolved, res.ProbeErr)
					}
				}
			})
		}
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
