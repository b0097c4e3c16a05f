package fleet

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TestReadManifest: the manifest is found under either name, the stemcell
// one before the image; a tarball without it says so.
func TestReadManifest(t *testing.T) {
	write := func(name string, files ...[2]string) string {
		p := filepath.Join(t.TempDir(), name)
		fh, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		gz := gzip.NewWriter(fh)
		tw := tar.NewWriter(gz)
		for _, f := range files {
			if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1]))}); err != nil {
				t.Fatal(err)
			}
			tw.Write([]byte(f[1]))
		}
		tw.Close()
		gz.Close()
		fh.Close()
		return p
	}
	st := write("stemcell.tgz", [2]string{"stemcell.MF", "operating_system: ubuntu-jammy\nversion: '4db688d332da'\n"}, [2]string{"image", "not read"})
	osName, version, err := stemcellOf(st)
	if err != nil || osName != "ubuntu-jammy" || version != "4db688d332da" {
		t.Fatalf("stemcellOf: %q %q %v", osName, version, err)
	}
	rel := write("release.tgz", [2]string{"./jobs/x.tgz", "x"}, [2]string{"./release.MF", "name: cellguard\nversion: 0+dev.1\npackages:\n- name: cellguard\n  fingerprint: abc123\n"})
	r, err := readRelease(rel)
	if err != nil || r.Name != "cellguard" || r.Version != "0+dev.1" || r.Key == "" {
		t.Fatalf("readRelease: %+v %v", r, err)
	}
	if _, err := readManifest(write("empty.tgz", [2]string{"image", "x"}), "stemcell.MF"); err == nil {
		t.Fatal("a tarball without stemcell.MF: no error")
	}
}
