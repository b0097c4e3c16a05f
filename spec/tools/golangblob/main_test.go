package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeZip(t *testing.T, path string, entries []struct {
	name string
	mode os.FileMode
	body string
}) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: time.Date(2026, 8, 28, 16, 20, 0, 0, time.UTC)}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, e.body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestRepackIsReproducibleAndKeepsModes(t *testing.T) {
	dir := t.TempDir()
	const prefix = "golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64/"
	entries := []struct {
		name string
		mode os.FileMode
		body string
	}{
		{prefix + "bin/go", 0o755, "#!go"},
		{prefix + "VERSION", 0o644, "go1.26.8"},
		{prefix + "src/", os.ModeDir | 0o755, ""},
	}
	zipPath := filepath.Join(dir, "tc.zip")
	writeZip(t, zipPath, entries)

	a, b := filepath.Join(dir, "a.tgz"), filepath.Join(dir, "b.tgz")
	if err := repack(zipPath, a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a wall-clock time leaking into the output would differ now
	if err := repack(zipPath, b); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two repacks of the same zip differ")
	}

	gz, err := gzip.NewReader(bytes.NewReader(ab))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	got := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: owner %d/%d %q, want 0/0 and no names", h.Name, h.Uid, h.Gid, h.Uname)
		}
		got[h.Name] = h.Mode
	}
	want := map[string]int64{"go/VERSION": 0o644, "go/bin/go": 0o755}
	if len(got) != len(want) || got["go/VERSION"] != 0o644 || got["go/bin/go"] != 0o755 {
		t.Fatalf("entries %v, want %v (sorted, go/ prefix, modes kept, no dirs)", got, want)
	}
}

func TestRepackRefusesOtherZips(t *testing.T) {
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "other.zip")
	writeZip(t, zipPath, []struct {
		name string
		mode os.FileMode
		body string
	}{{"example.com/mod@v1.0.0/x.go", 0o644, "package x"}})
	if err := repack(zipPath, filepath.Join(dir, "out.tgz")); err == nil {
		t.Fatal("repacked a zip that is not a Go toolchain")
	}
	if _, err := os.Stat(filepath.Join(dir, "out.tgz")); !os.IsNotExist(err) {
		t.Fatalf("left an output behind: %v", err)
	}
}
