package sdbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestRequireSuite: a rootfs sdbox.sh calls built (its .sdbox-complete
// marker) or an answering archive lets the test run; with neither it is
// refused: skipped on a developer's machine, failed in CI (testkit.Unavailable),
// whichever CI says here.
func TestRequireSuite(t *testing.T) {
	RequireRoot(t)
	archive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ubuntu/dists/xenial/Release" {
			http.NotFound(w, r)
		}
	}))
	defer archive.Close()
	// The rootfs path is sdbox.sh's: ask it, as RequireSuite does.
	rootfs := func(dir string) string {
		t.Setenv("SDBOX_DIR", dir)
		t.Setenv("SDBOX_SUITE", "xenial")
		script, err := ScriptPath()
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", script, "source").Output()
		if err != nil {
			t.Fatal(err)
		}
		return keyValues(out)["ROOTFS"]
	}
	cached := t.TempDir()
	if err := os.MkdirAll(rootfs(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs(cached), ".sdbox-complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unfinished := t.TempDir() // the directory without the marker: a build that did not finish
	if err := os.MkdirAll(rootfs(unfinished), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := t.TempDir() // a finished rootfs of another recipe is not the one sdbox.sh boots
	if err := os.MkdirAll(filepath.Join(stale, "rootfs-xenial-0000000000"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "rootfs-xenial-0000000000", ".sdbox-complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, mirror, suite string
		refused                  bool
	}{
		{"cached, archive gone", cached, "http://127.0.0.1:9/ubuntu", "xenial", false},
		{"not cached, archive answers", t.TempDir(), archive.URL + "/ubuntu", "xenial", false},
		{"not cached, archive gone", t.TempDir(), "http://127.0.0.1:9/ubuntu", "xenial", true},
		{"unfinished build, archive gone", unfinished, "http://127.0.0.1:9/ubuntu", "xenial", true},
		{"another recipe's rootfs, archive gone", stale, "http://127.0.0.1:9/ubuntu", "xenial", true},
		{"not cached, archive lacks the suite", t.TempDir(), archive.URL + "/ubuntu", "bionic", true},
	} {
		t.Setenv("SDBOX_DIR", tc.dir)
		t.Setenv("SDBOX_MIRROR", tc.mirror)
		for _, ci := range []string{"", "true"} {
			t.Setenv("CI", ci)
			rec := &refusal{TB: t}
			done := make(chan struct{})
			go func() { // Skipf and Fatalf end the goroutine, as they end a test
				defer close(done)
				RequireSuite(rec, tc.suite)
			}()
			<-done
			want := ""
			if tc.refused && ci == "true" {
				want = "failed"
			} else if tc.refused {
				want = "skipped"
			}
			if rec.how != want {
				t.Errorf("%s, CI=%q: RequireSuite %q, want %q (%s)", tc.name, ci, rec.how, want, rec.why)
			}
		}
	}
}

// refusal records how RequireSuite refused instead of ending the real test.
type refusal struct {
	testing.TB
	how, why string
}

func (r *refusal) Helper() {}

func (r *refusal) Skipf(format string, args ...any) {
	r.how, r.why = "skipped", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *refusal) Fatalf(format string, args ...any) {
	r.how, r.why = "failed", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *refusal) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *refusal) Skip(args ...any) { r.Skipf("%s", fmt.Sprint(args...)) }
