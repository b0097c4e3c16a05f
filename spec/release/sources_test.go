package release_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// lockEntry is one line of ci/upstream-sources.lock.
type lockEntry struct {
	dir, file, sha, kind, repository, commit, what string
	paths                                          []string
}

func readLock(t *testing.T) map[string]lockEntry {
	t.Helper()
	out := map[string]lockEntry{}
	for _, line := range strings.Split(readFile(t, "ci/upstream-sources.lock"), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 7 {
			t.Fatalf("ci/upstream-sources.lock: short line %q", line)
		}
		out[f[1]] = lockEntry{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7:]}
	}
	return out
}

// sums reads a SHA256SUMS file: file -> sha256.
func sums(t *testing.T, file string) map[string]string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			out[f[1]] = f[0]
		}
	}
	return out
}

func sha256File(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sharedDir is ../shared beside the repository; the tests that need its
// files skip without it, and fail with CI=true.
func sharedDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(repoRoot, "..", "shared")
	if _, err := os.Stat(filepath.Join(d, "sources", "SHA256SUMS")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("../shared/sources is not beside the repository: %v", err)
		}
		t.Skipf("../shared/sources is not beside the repository: %v", err)
	}
	return d
}

// The lock pins exactly what the cache's readers check against: every file
// of ../shared/sources/SHA256SUMS (director.sh, garden/build.sh) and of
// src/tests/bosh/stemcell/SHA256SUMS (the stemcell builder), same sha256.
func TestSourcesLockPinsWhatTheReadersCheck(t *testing.T) {
	lock := readLock(t)
	want := map[string]map[string]string{
		"sources":  sums(t, filepath.Join(sharedDir(t), "sources", "SHA256SUMS")),
		"stemcell": sums(t, filepath.Join(repoRoot, "src/tests/bosh/stemcell/SHA256SUMS")),
	}
	seen := 0
	for dir, files := range want {
		for file, sha := range files {
			e, ok := lock[file]
			if !ok || e.dir != dir || e.sha != sha {
				t.Errorf("%s/%s (sha256 %s): the lock has %+v", dir, file, sha, e)
			}
			seen++
		}
	}
	if seen != len(lock) {
		t.Errorf("the lock has %d files, the readers' SHA256SUMS %d", len(lock), seen)
	}
	for _, e := range lock {
		if len(e.commit) != 40 || (e.kind != "archive" && e.kind != "raw") {
			t.Errorf("%s: want a full commit id and kind archive or raw: %+v", e.file, e)
		}
	}
}

// TestFetchSourcesFromAMirror: make deps' fetch against a local mirror that
// serves what GitHub would (an archive of each commit under
// REPO-COMMIT/, raw files by commit and path), made here from ../shared's
// files: the archives re-packed by GNU tar, so nothing of git archive's
// bytes survives into the mirror but the content. Into an empty cache it
// installs each file with the pinned sha256; a mirror whose content differs
// is refused and nothing is installed; with no mirror reachable the error
// names what to fetch and where to put it; and the same over HTTP on
// loopback in a network namespace of the test's own.
func TestFetchSourcesFromAMirror(t *testing.T) {
	shared := sharedDir(t)
	lock := readLock(t)
	work := t.TempDir()
	mirror := filepath.Join(work, "mirror")
	serve := func(mirror string, e lockEntry, tamper bool) {
		t.Helper()
		src := filepath.Join(shared, e.dir, e.file)
		if e.kind == "raw" {
			dst := filepath.Join(mirror, e.repository, e.commit, e.what)
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if tamper {
				b = append(b, '\n')
			}
			must(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			must(t, os.WriteFile(dst, b, 0o644))
			return
		}
		x := filepath.Join(work, "x-"+e.file)
		top := path.Base(e.repository) + "-" + e.commit
		must(t, os.MkdirAll(filepath.Join(x, top), 0o755))
		run(t, "tar", "-xzf", src, "-C", filepath.Join(x, top), "--strip-components=1")
		if len(e.paths) > 0 {
			// GitHub's archive holds the whole tree; the pathspecs leave the rest out.
			must(t, os.WriteFile(filepath.Join(x, top, "not-in-the-pathspecs"), []byte("x\n"), 0o644))
		}
		if tamper {
			must(t, os.WriteFile(filepath.Join(x, top, "README.md"), []byte("changed\n"), 0o644))
		}
		dst := filepath.Join(mirror, e.repository, "tar.gz", e.commit)
		must(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		run(t, "tar", "-C", x, "--owner=0", "--group=0", "--numeric-owner", "-czf", dst, top)
	}
	good := []string{"semi_semantic-1.2.0.tar.gz", "bosh-v283.0.0-src.tar.gz", "monit-5.2.5-validate.patch"}
	for _, f := range good {
		serve(mirror, lock[f], false)
	}
	fetch := func(cache, mirrorURL string, files ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"ci/scripts/fetch-sources.sh"}, files...)...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CELLGUARD_SOURCES="+filepath.Join(cache, "sources"),
			"CELLGUARD_STEMCELL_SOURCES="+filepath.Join(cache, "stemcell"), "CELLGUARD_SOURCES_MIRROR="+mirrorURL)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	cache := filepath.Join(work, "cache")
	out, err := fetch(cache, "file://"+mirror, good...)
	if err != nil {
		t.Fatalf("fetch from the mirror: %v\n%s", err, out)
	}
	for _, f := range good {
		e := lock[f]
		got := filepath.Join(cache, e.dir, f)
		if sha := sha256File(t, got); sha != e.sha {
			t.Errorf("%s: sha256 %s, pinned %s", got, sha, e.sha)
		}
		if sums(t, filepath.Join(cache, e.dir, "SHA256SUMS"))[f] != e.sha {
			t.Errorf("%s/SHA256SUMS lacks %s", e.dir, f)
		}
	}
	t.Logf("from file://: %s", strings.TrimSpace(out))
	if out, err := fetch(cache, "file:///nonexistent", good...); err != nil || out != "" {
		t.Errorf("a second run with everything cached: %v, %q (want silence: the cache is used)", err, out)
	}

	bad := filepath.Join(work, "bad-mirror")
	for _, f := range []string{"unix-crypt-1.3.2.tar.gz", "monit-5.2.5-validate.patch"} {
		serve(bad, lock[f], true)
	}
	badCache := filepath.Join(work, "bad-cache")
	out, err = fetch(badCache, "file://"+bad, "unix-crypt-1.3.2.tar.gz", "monit-5.2.5-validate.patch")
	if err == nil {
		t.Errorf("a mirror serving other content was accepted:\n%s", out)
	}
	for _, f := range []string{"unix-crypt-1.3.2.tar.gz", "monit-5.2.5-validate.patch"} {
		if !strings.Contains(out, f+": what file://") || !strings.Contains(out, "refused") {
			t.Errorf("no refusal of %s in:\n%s", f, out)
		}
		if _, err := os.Stat(filepath.Join(badCache, lock[f].dir, f)); err == nil {
			t.Errorf("%s was installed from a mismatching mirror", f)
		}
	}
	t.Logf("mismatch: %s", strings.TrimSpace(out))

	out, err = fetch(filepath.Join(work, "offline"), "file:///nonexistent", "semi_semantic-1.2.0.tar.gz")
	e := lock["semi_semantic-1.2.0.tar.gz"]
	if err == nil || !strings.Contains(out, e.repository+" at "+e.commit) || !strings.Contains(out, "sha256 "+e.sha) ||
		!strings.Contains(out, filepath.Join(work, "offline", "sources")) {
		t.Errorf("offline: %v; want an error naming %s at %s, its sha256 and the directory:\n%s", err, e.repository, e.commit, out)
	}
	t.Logf("offline: %s", strings.TrimSpace(out))

	// Over HTTP: a server on 127.0.0.1 inside a network namespace that only
	// this test's processes share, gone with them.
	if os.Geteuid() != 0 || exec.Command("unshare", "--net", "true").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the HTTP mirror needs root and unshare --net")
		}
		t.Skip("the HTTP mirror needs root and unshare --net")
	}
	script := `set -euo pipefail
ip link set lo up
python3 -m http.server --bind 127.0.0.1 8080 --directory "$1" >/dev/null 2>&1 &
srv=$!
trap 'kill ${srv}' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null && break; sleep 0.1; done
CELLGUARD_SOURCES="$2/sources" CELLGUARD_STEMCELL_SOURCES="$2/stemcell" CELLGUARD_SOURCES_MIRROR=http://127.0.0.1:8080 \
  bash ci/scripts/fetch-sources.sh semi_semantic-1.2.0.tar.gz monit-5.2.5-validate.patch`
	httpCache := filepath.Join(work, "http-cache")
	cmd := exec.Command("unshare", "--net", "bash", "-c", script, "bash", mirror, httpCache)
	cmd.Dir = repoRoot
	hout, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fetch over HTTP: %v\n%s", err, hout)
	}
	for _, f := range []string{"semi_semantic-1.2.0.tar.gz", "monit-5.2.5-validate.patch"} {
		if sha := sha256File(t, filepath.Join(httpCache, lock[f].dir, f)); sha != lock[f].sha {
			t.Errorf("%s over HTTP: sha256 %s, pinned %s", f, sha, lock[f].sha)
		}
	}
	t.Logf("over HTTP: %s", strings.TrimSpace(string(hout)))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
