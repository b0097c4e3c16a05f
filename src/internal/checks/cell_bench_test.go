package checks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// BenchmarkSynthCell measures the shared host scan alone and the three
// checks that share it, on fakehost's reference cell (250 containers of 20
// processes, 1,000 host processes; realistic 26 KB state files), clean and
// with 1% of container processes escaped. The confirmation wait is skipped
// (Policy.Sleep), so escaped measures the work only. Files live in the
// benchmark's temp dir, not /proc: compare changes with it, and see
// `make bench` for the whole binary against the shell baseline.
func BenchmarkSynthCell(b *testing.B) {
	for _, tc := range []struct {
		name  string
		share float64
	}{{"clean", 0}, {"escaped", 0.01}} {
		s := fakehost.Cell(1)
		s.EscapedShare, s.Seed = tc.share, 1
		w, err := fakehost.Generate(filepath.Join(b.TempDir(), "cell"), s)
		if err != nil {
			b.Fatal(err)
		}
		d := testDeps{Root: w.Root, Sleep: func(time.Duration) {}}
		b.Run(tc.name+"/scan", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := snapshot.Read(snapshot.Spec{Root: d.Root}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Processes()), "procs")
		})
		b.Run(tc.name+"/checks", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var cs []validator.Check
				for _, c := range all(d) {
					switch c.(type) {
					case *CgroupIntegrity, *RuntimeGhosts, *StuckRuncInit:
						cs = append(cs, c)
					}
				}
				rep := validator.Run(context.Background(), cs, validator.Options{Phase: validator.Drain})
				if rep.Blocked != (tc.share > 0) {
					b.Fatalf("blocked = %v with %d escapes", rep.Blocked, len(w.Escapes))
				}
			}
		})
	}
}
