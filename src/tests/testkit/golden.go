package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Golden fails t unless got equals the golden file testdata/name. With
// update (the test package's -update flag) it first writes got there:
// `go test -update` creates or refreshes the file, and the diff is
// reviewed in git.
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs; got:\n%s", path, got)
	}
}
