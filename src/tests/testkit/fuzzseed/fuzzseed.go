// Package fuzzseed loads seed corpora for fuzz targets: real files (copied
// from a host's /proc, runc state, sysctl.d) kept in each package's testdata.
package fuzzseed

import (
	"os"
	"path/filepath"
	"testing"
)

// Files returns the contents of every file matching glob; a glob matching
// nothing fails the target, so a moved testdata dir cannot silently leave a
// fuzz target without its real-world seeds.
func Files(f *testing.F, glob string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seed files match %s (%v)", glob, err)
	}
	out := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
