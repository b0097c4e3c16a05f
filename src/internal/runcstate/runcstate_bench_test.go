package runcstate

import (
	"path/filepath"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// decoders are what BenchmarkDecode compares: Decode, and the maintained
// alternatives to its hand-written scanner (docs/performance.md). Built
// with GOEXPERIMENT=jsonv2, jsonv2_bench_test.go adds encoding/json/v2.
var decoders = []struct {
	name   string
	decode func([]byte) (*State, error)
}{{"Decode", Decode}, {"encoding-json", reference}}

// BenchmarkDecode decodes a fakehost state.json, shaped like runc's for a
// Garden container (26 KB, most of it the seccomp allowlist): every scan
// decodes one per container; encoding-json is Decode before decodeFast, for
// comparison. It reports; it never asserts a time.
func BenchmarkDecode(b *testing.B) {
	raw := synthState(b)
	for _, tc := range decoders {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				st, err := tc.decode(raw)
				if err != nil || st.InitProcessPid == 0 || len(st.CgroupPaths) != 10 {
					b.Fatal(err, st)
				}
			}
		})
	}
}

// BenchmarkDiscover finds and decodes the 250 state files of the
// reference cell.
func BenchmarkDiscover(b *testing.B) {
	w, err := fakehost.Generate(filepath.Join(b.TempDir(), "cell"), fakehost.Cell(1))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := Discover(w.Root, []string{"/run/runc"}, nil)
			if err != nil || len(d.Containers) != 250 {
				b.Fatal(err, len(d.Containers))
			}
		}
	})
	// What a period's scan of an unchanged cell costs through a Cache.
	b.Run("cached", func(b *testing.B) {
		c := &Cache{}
		if _, err := c.Discover(w.Root, []string{"/run/runc"}, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			d, err := c.Discover(w.Root, []string{"/run/runc"}, nil)
			if err != nil || len(d.Containers) != 250 || c.Decoded != 0 {
				b.Fatal(err, len(d.Containers), c.Decoded)
			}
		}
	})
}
