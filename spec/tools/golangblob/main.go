// Command golangblob turns the Go toolchain zip that the Go module proxy
// serves (golang.org/toolchain@v0.0.1-goX.Y.Z.linux-amd64, verified against
// sum.golang.org by `go mod download`) into the go/ tarball the
// golang-1-linux package expects, byte for byte the same on every machine:
// entries sorted, times and owners fixed, gzip without a name or time. That
// is what lets config/blobs.yml carry one sha256 for everybody.
//
// usage: golangblob -zip TOOLCHAIN.zip -o go1.26.8.linux-amd64.tar.gz
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	zipPath := flag.String("zip", "", "toolchain zip from the module cache")
	out := flag.String("o", "", "tarball to write")
	flag.Parse()
	if *zipPath == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: golangblob -zip TOOLCHAIN.zip -o OUT.tar.gz")
		os.Exit(2)
	}
	if err := repack(*zipPath, *out); err != nil {
		fmt.Fprintf(os.Stderr, "golangblob: error: %v\n", err)
		os.Exit(1)
	}
}

func repack(zipPath, out string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open toolchain zip %s: %w", zipPath, err)
	}
	defer zr.Close()

	files := append([]*zip.File(nil), zr.File...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })

	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	defer os.Remove(tmp)
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, zf := range files {
		// golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64/bin/go -> go/bin/go
		_, rest, ok := strings.Cut(zf.Name, "/")
		if !ok || !strings.HasPrefix(zf.Name, "golang.org/toolchain@") {
			return fmt.Errorf("unexpected entry %q: not a toolchain zip", zf.Name)
		}
		_, rest, _ = strings.Cut(rest, "/")
		if rest == "" || strings.HasSuffix(zf.Name, "/") {
			continue
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     "go/" + rest,
			Mode:     int64(zf.Mode().Perm()),
			Size:     int64(zf.UncompressedSize64),
			ModTime:  zf.Modified.UTC().Truncate(1e9),
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write header %s: %w", hdr.Name, err)
		}
		rc, err := zf.Open()
		if err != nil {
			return fmt.Errorf("open %s: %w", zf.Name, err)
		}
		_, err = io.Copy(tw, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", zf.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
