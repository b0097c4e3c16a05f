package limits

import (
	"path/filepath"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// BenchmarkRead is what limits-intact adds to each of watch's event scans
// on the reference cell (250 containers of 20 processes, state files
// shaped like Garden's: 26 KB each), next to the shared scan those scans
// read anyway (snapshot). It reports; it never asserts a time.
func BenchmarkRead(b *testing.B) {
	w, err := fakehost.Generate(filepath.Join(b.TempDir(), "cell"), fakehost.Cell(1))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("limits", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := Read(Spec{Root: w.Root, RuntimeRoots: []string{"/run/runc"}})
			if err != nil || f.Containers != 250 {
				b.Fatal(err, f.Containers)
			}
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := snapshot.Read(snapshot.Spec{Root: w.Root, RuntimeRoots: []string{"/run/runc"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
