package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// tarballEnv names a release tarball already built (release-e2e passes
// its own); without it the test builds one from the working tree.
const tarballEnv = "CELLGUARD_RELEASE_TARBALL"

// TestPackageShipsNoTestCode lists package cellguard inside a built
// release tarball: no test file, fixture or test-only package may be in
// it (a test-only edit would change the package's fingerprint, and test
// code would reach every cell), and every Go package it ships must be one
// the cellguard binary is built from.
func TestPackageShipsNoTestCode(t *testing.T) {
	files := packageFiles(t, "cellguard", releaseTarball(t))
	deps := binaryPackages(t)
	shipped := map[string]bool{}
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, "_test.go"):
			t.Errorf("package cellguard ships a test file: %s", f)
		case strings.Contains("/"+f, "/testdata/"):
			t.Errorf("package cellguard ships a fixture: %s", f)
		case strings.HasPrefix(f, "tests/") || strings.Contains("/"+f, "/testkit/"):
			t.Errorf("package cellguard ships test-only code: %s", f)
		}
		if strings.HasSuffix(f, ".go") && !strings.HasPrefix(f, "vendor/") {
			shipped[path.Dir(f)] = true
		}
	}
	var extra []string
	for dir := range shipped {
		if !deps["github.com/cloudfoundry/cellguard/src/"+dir] {
			extra = append(extra, dir)
		}
	}
	sort.Strings(extra)
	for _, dir := range extra {
		t.Errorf("package cellguard ships src/%s, which ./src/cmd/cellguard does not import (test-only or dead code): exclude it in packages/cellguard/spec", dir)
	}
	if len(shipped) == 0 || !shipped["cmd/cellguard"] {
		t.Fatalf("package cellguard holds no cmd/cellguard: %v", files)
	}
}

// releaseTarball returns the tarball to inspect, building one with
// ci/scripts/create-release.sh from a copy of the working tree (tracked
// and untracked-but-not-ignored files, as release-e2e does) when none is
// given.
func releaseTarball(t *testing.T) string {
	if p := os.Getenv(tarballEnv); p != "" {
		return p
	}
	rel := filepath.Join(t.TempDir(), "release")
	if err := os.MkdirAll(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	list := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	list.Dir = repoRoot
	names, err := list.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(names), "\x00"), "\x00") {
		copyFile(t, filepath.Join(repoRoot, name), filepath.Join(rel, name))
	}
	tarball := filepath.Join(t.TempDir(), "cellguard.tgz")
	cmd := exec.Command("bash", filepath.Join(rel, "ci/scripts/create-release.sh"), rel, tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("create-release: %v\n%s", err, out)
	}
	return tarball
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return // deleted in the working tree, not yet in the index
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err == nil {
			err = os.Symlink(target, dst)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := render.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// packageFiles lists the files of packages/<name>.tgz inside a release
// tarball.
func packageFiles(t *testing.T, name, tarball string) []string {
	t.Helper()
	inner := tarMember(t, tarball, "packages/"+name+".tgz")
	var files []string
	eachTarEntry(t, bytes.NewReader(inner), func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeReg {
			files = append(files, path.Clean(strings.TrimPrefix(h.Name, "./")))
		}
	})
	return files
}

func tarMember(t *testing.T, tarball, member string) []byte {
	t.Helper()
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []byte
	eachTarEntry(t, f, func(h *tar.Header, r io.Reader) {
		if path.Clean(strings.TrimPrefix(h.Name, "./")) == member {
			if out, err = io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
		}
	})
	if out == nil {
		t.Fatalf("%s holds no %s", tarball, member)
	}
	return out
}

func eachTarEntry(t *testing.T, r io.Reader, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	gz, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(h, tr)
	}
}

// binaryPackages are the import paths ./src/cmd/cellguard is built from.
func binaryPackages(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./src/cmd/cellguard")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./src/cmd/cellguard: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	return deps
}
