package fleet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestReleaseOnce: the shapes' second ask links the first build into its
// own work directory, and once the builder's work directory is gone the
// next ask builds again.
func TestReleaseOnce(t *testing.T) {
	builds := 0
	r := releaseOnce{build: func(_ context.Context, _, dir string) (string, error) {
		builds++
		p := filepath.Join(dir, "cellguard-dev.tgz")
		return p, os.WriteFile(p, []byte("release"), 0o644)
	}}
	work := func() string {
		w := t.TempDir()
		if err := os.Mkdir(filepath.Join(w, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		return w
	}
	a, b, c := work(), work(), work()
	ta, by, err := r.get(context.Background(), "repo", a, "xenial")
	if err != nil || by != "xenial" {
		t.Fatalf("first: %s %s %v", ta, by, err)
	}
	tb, by, err := r.get(context.Background(), "repo", b, "jammy")
	if err != nil || by != "xenial" || builds != 1 || filepath.Dir(tb) != filepath.Join(b, "src") {
		t.Fatalf("second: %s built for %s, %d builds, %v", tb, by, builds, err)
	}
	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(tb); err != nil || string(got) != "release" {
		t.Fatalf("the link outlives the builder's work directory: %q %v", got, err)
	}
	tc, by, err := r.get(context.Background(), "repo", c, "noble")
	if err != nil || by != "noble" || builds != 2 || filepath.Dir(tc) != filepath.Join(c, "src") {
		t.Fatalf("third: %s built for %s, %d builds, %v", tc, by, builds, err)
	}
}
