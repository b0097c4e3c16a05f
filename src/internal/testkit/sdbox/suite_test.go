package sdbox

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestRequireSuite: a cached rootfs or an answering archive lets the test
// run; neither skips it, also in CI (the archive is the machine's limit).
func TestRequireSuite(t *testing.T) {
	archive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ubuntu/dists/xenial/Release" {
			http.NotFound(w, r)
		}
	}))
	defer archive.Close()
	cached := t.TempDir()
	if err := os.Mkdir(filepath.Join(cached, "rootfs-xenial-074688ad69"), 0o755); err != nil {
		t.Fatal(err)
	}
	unfinished := t.TempDir()
	if err := os.Mkdir(filepath.Join(unfinished, "rootfs-xenial-074688ad69.tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, mirror, suite string
		skipped                  bool
	}{
		{"cached, archive gone", cached, "http://127.0.0.1:9/ubuntu", "xenial", false},
		{"not cached, archive answers", t.TempDir(), archive.URL + "/ubuntu", "xenial", false},
		{"not cached, archive gone", t.TempDir(), "http://127.0.0.1:9/ubuntu", "xenial", true},
		{"unfinished build, archive gone", unfinished, "http://127.0.0.1:9/ubuntu", "xenial", true},
		{"not cached, archive lacks the suite", t.TempDir(), archive.URL + "/ubuntu", "bionic", true},
	} {
		t.Setenv("SDBOX_DIR", tc.dir)
		t.Setenv("SDBOX_MIRROR", tc.mirror)
		var skipped bool
		t.Run(tc.name, func(st *testing.T) {
			defer func() { skipped = st.Skipped() }()
			RequireSuite(st, tc.suite)
		})
		if skipped != tc.skipped {
			t.Errorf("%s: skipped %v, want %v", tc.name, skipped, tc.skipped)
		}
	}
}
