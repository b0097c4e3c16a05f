package fleet

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
)

// A release as the director knows it: name and version from its release.MF,
// and a key over what compiling it depends on (every package's and job's
// fingerprint), so a rebuilt tarball of the same content hits the cache and
// any changed package misses it.
type release struct {
	Name, Version, Key string
	Tarball            string
}

var (
	// YAML scalars as bosh-cli and build.sh write them: bare, '...' or "...".
	mfNameRE        = regexp.MustCompile(`(?m)^name: *['"]?([^'"\s]+)['"]?`)
	mfVersionRE     = regexp.MustCompile(`(?m)^version: *['"]?([^'"\s]+)['"]?`)
	mfFingerprintRE = regexp.MustCompile(`(?m)^\s*(?:- )?fingerprint: *['"]?([0-9a-f]+)['"]?`)
)

// readManifest reads a tarball's release.MF or stemcell.MF ("./" or not:
// bosh-cli writes either form), and stops there: both put it before the
// bulk (build.sh packs stemcell.MF before the image), where tar -xzOf read
// on to the end, twice with the two names, a whole stemcell per shape.
func readManifest(tarball, file string) ([]byte, error) {
	fh, err := os.Open(tarball)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", file, tarball, err)
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", file, tarball, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("read %s of %s: not in the tarball", file, tarball)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s of %s: %w", file, tarball, err)
		}
		if strings.TrimPrefix(h.Name, "./") == file {
			return io.ReadAll(tr)
		}
	}
}

// readRelease is a release tarball's name, version and content key.
func readRelease(tarball string) (release, error) {
	mf, err := readManifest(tarball, "release.MF")
	if err != nil {
		return release{}, err
	}
	return parseReleaseMF(mf, tarball)
}

func parseReleaseMF(mf []byte, tarball string) (release, error) {
	name, version := mfNameRE.FindSubmatch(mf), mfVersionRE.FindSubmatch(mf)
	if name == nil || version == nil {
		return release{}, fmt.Errorf("parse release.MF of %s: no name or version", tarball)
	}
	var fps []string
	for _, m := range mfFingerprintRE.FindAllSubmatch(mf, -1) {
		fps = append(fps, string(m[1]))
	}
	if len(fps) == 0 {
		return release{}, fmt.Errorf("parse release.MF of %s: no fingerprint", tarball)
	}
	sort.Strings(fps)
	h := sha256.Sum256([]byte(string(name[1]) + "\n" + string(version[1]) + "\n" + strings.Join(fps, "\n")))
	return release{Name: string(name[1]), Version: string(version[1]), Key: hex.EncodeToString(h[:])[:16], Tarball: tarball}, nil
}

// stemcellOf is a stemcell tarball's operating system and version (the
// stemcell's content key, build.sh's).
func stemcellOf(tarball string) (osName, version string, err error) {
	mf, err := readManifest(tarball, "stemcell.MF")
	if err != nil {
		return "", "", err
	}
	return parseStemcellMF(mf, tarball)
}

func parseStemcellMF(mf []byte, tarball string) (osName, version string, err error) {
	o := regexp.MustCompile(`(?m)^operating_system: *['"]?([^'"\s]+)['"]?`).FindSubmatch(mf)
	v := mfVersionRE.FindSubmatch(mf)
	if o == nil || v == nil {
		return "", "", fmt.Errorf("parse stemcell.MF of %s: no operating_system or version", tarball)
	}
	return string(o[1]), string(v[1]), nil
}

// compiledCache holds compiled releases (bosh export-release) by release key
// and stemcell, as BOSH compiles each package once per stemcell: a warm run
// uploads them and the director compiles nothing. Shared by every run on the
// machine (CELLGUARD_DIRECTOR_CACHE/compiled); an entry appears by rename,
// whole or not at all.
type compiledCache struct {
	Dir                  string
	StemcellOS, Stemcell string
}

func newCompiledCache(stemcell string) (compiledCache, error) {
	base := os.Getenv("CELLGUARD_DIRECTOR_CACHE")
	if base == "" {
		base = "/var/tmp/cellguard-director"
	}
	osName, version, err := stemcellOf(stemcell)
	if err != nil {
		return compiledCache{}, err
	}
	return compiledCache{Dir: filepath.Join(base, "compiled"), StemcellOS: osName, Stemcell: version}, nil
}

// Path is where r compiled on the cache's stemcell lives.
func (c compiledCache) Path(r release) string {
	return filepath.Join(c.Dir, fmt.Sprintf("%s-%s-%s-%s.tgz", r.Name, r.Key, c.StemcellOS, c.Stemcell))
}

// Lookup is r's compiled tarball, when the cache has it.
func (c compiledCache) Lookup(r release) (string, bool) {
	p := c.Path(r)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		return p, true
	}
	return "", false
}

// Store exports r, compiled on the cache's stemcell, from the director
// (deployment d uses both) into the cache.
func (c compiledCache) Store(ctx context.Context, b *boshlab.Bosh, d string, r release) (boshlab.Result, error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return boshlab.Result{}, fmt.Errorf("make compiled cache %s: %w", c.Dir, err)
	}
	tmp, err := os.MkdirTemp(c.Dir, ".export-")
	if err != nil {
		return boshlab.Result{}, fmt.Errorf("make export directory in %s: %w", c.Dir, err)
	}
	defer os.RemoveAll(tmp)
	res, err := b.MustRun(ctx, "-d", d, "export-release", r.Name+"/"+r.Version, c.StemcellOS+"/"+c.Stemcell, "--dir", tmp)
	if err != nil {
		return res, err
	}
	got, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if len(got) != 1 {
		return res, fmt.Errorf("bosh export-release %s/%s left %d tarballs in %s; want 1", r.Name, r.Version, len(got), tmp)
	}
	if err := os.Rename(got[0], c.Path(r)); err != nil {
		return res, fmt.Errorf("store compiled release %s: %w", c.Path(r), err)
	}
	return res, nil
}
