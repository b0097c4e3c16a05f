package procfs

import (
	"os"
	"testing"
)

// Benchmarks of what the validator does once per process on a cell. Run
// with `make bench` or `go test -run '^$' -bench . -benchmem`; they report,
// they never assert a time.

// statLine is a real /proc/<pid>/stat line: 52 fields, starttime is 22nd.
const statLine = "20257 (garden-init) S 20253 20253 17276 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 100718 3133440 413 18446744073709551615 94171182817280 94171182837161 140732541437440 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94171182853168 94171182854784 94171856625664 140732541438657 140732541438677 140732541438677 140732541439979 0\n"

func BenchmarkParseStat(b *testing.B) {
	in := []byte(statLine)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseStat(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReaderLive reads this process's entries from the real /proc,
// where the kernel formats each file on read: the live host's cost.
func BenchmarkReaderLive(b *testing.B) {
	r := New("/").NewReader()
	self := os.Getpid()
	b.Run("stat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Stat(self); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cgroup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Cgroup(self); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ns-pid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.PidNS(self); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPIDsLive lists the real /proc (this host's processes).
func BenchmarkPIDsLive(b *testing.B) {
	fs := New("/")
	dst := make([]int, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = fs.PIDs(dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(dst)), "pids")
}
