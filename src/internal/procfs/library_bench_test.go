package procfs_test

import (
	"testing"

	promprocfs "github.com/prometheus/procfs"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// BenchmarkEveryProcess is what a scan reads of every process on the live
// /proc: the list, each stat (state, ppid, start time) and each cgroup
// membership parsed, through this package and through
// github.com/prometheus/procfs (already a dependency of client_golang), on
// the same processes. docs/decisions.md records the numbers. Processes that
// exit between the list and the read are skipped by both.
func BenchmarkEveryProcess(b *testing.B) {
	b.Run("cellguard", func(b *testing.B) {
		fs := procfs.New("/")
		r := fs.NewReader()
		defer r.Close()
		pids := make([]int, 0, 4096)
		var m cgroup.Membership
		b.ReportAllocs()
		var n int
		for b.Loop() {
			var err error
			if pids, err = fs.PIDs(pids[:0]); err != nil {
				b.Fatal(err)
			}
			n = 0
			for _, pid := range pids {
				st, err := r.Stat(pid)
				if err != nil {
					continue
				}
				cg, err := r.Cgroup(pid)
				if err != nil || cgroup.ParseProcCgroup(cg, &m) != nil {
					continue
				}
				if st.StartTime > 0 && len(m.Entries()) > 0 {
					n++
				}
			}
		}
		b.ReportMetric(float64(n), "procs")
	})
	b.Run("prometheus-procfs", func(b *testing.B) {
		fs, err := promprocfs.NewFS("/proc")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		var n int
		for b.Loop() {
			procs, err := fs.AllProcs()
			if err != nil {
				b.Fatal(err)
			}
			n = 0
			for _, p := range procs {
				st, err := p.Stat()
				if err != nil {
					continue
				}
				cgs, err := p.Cgroups()
				if err != nil {
					continue
				}
				if st.Starttime > 0 && len(cgs) > 0 {
					n++
				}
			}
		}
		b.ReportMetric(float64(n), "procs")
	})
}
