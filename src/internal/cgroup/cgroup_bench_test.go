package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Benchmarks of the per-process and per-container cgroup reads. Run with
// `make bench`; they report, they never assert a time.

// hybridProcCgroup is /proc/<pid>/cgroup of a container process on a
// hybrid stemcell: nine v1 hierarchies and v2.
const hybridProcCgroup = "9:name=systemd:/garden/c000001\n8:pids:/garden/c000001\n7:blkio:/garden/c000001\n" +
	"6:freezer:/garden/c000001\n5:devices:/garden/c000001\n4:memory:/garden/c000001\n3:cpuset:/garden/c000001\n" +
	"2:cpu,cpuacct:/garden/c000001\n0::/garden/c000001\n"

func BenchmarkParseProcCgroup(b *testing.B) {
	in := []byte(hybridProcCgroup)
	var m Membership
	b.ReportAllocs()
	for b.Loop() {
		if err := ParseProcCgroup(in, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup looks up every hierarchy a runc state records, as
// cgroup-integrity does for each container process.
func BenchmarkLookup(b *testing.B) {
	var m Membership
	if err := ParseProcCgroup([]byte(hybridProcCgroup), &m); err != nil {
		b.Fatal(err)
	}
	keys := []string{"name=systemd", "pids", "blkio", "freezer", "devices", "memory", "cpuset", "cpu", ""}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			if _, ok := m.Lookup(k); !ok {
				b.Fatalf("no %q", k)
			}
		}
	}
}

// BenchmarkReadProcs reads a container cgroup's cgroup.procs of 20 pids.
func BenchmarkReadProcs(b *testing.B) {
	dir := b.TempDir()
	var content []byte
	for pid := 10020; pid < 10040; pid++ {
		content = strconv.AppendInt(content, int64(pid), 10)
		content = append(content, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), content, 0o644); err != nil {
		b.Fatal(err)
	}
	var buf []byte
	var pids []int
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, pids, err = ReadProcs(dir, buf, pids[:0]); err != nil || len(pids) != 20 {
			b.Fatal(err, len(pids))
		}
	}
}
