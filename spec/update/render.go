package update

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1" //nolint:gosec // BOSH's digests: what the agent checks, not a security boundary
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v2"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// Job is one job of an instance group: its release and properties, as the
// manifest names them.
type Job struct {
	Name       string
	Release    string
	Properties map[interface{}]interface{}
}

// InstanceGroup reads the named instance group's jobs from an interpolated
// manifest (`bosh interpolate` output), and the deployment's name.
func InstanceGroup(manifestYAML []byte, group string) (deployment string, jobs []Job, err error) {
	var m struct {
		Name           string `yaml:"name"`
		InstanceGroups []struct {
			Name string `yaml:"name"`
			Jobs []struct {
				Name       string                      `yaml:"name"`
				Release    string                      `yaml:"release"`
				Properties map[interface{}]interface{} `yaml:"properties"`
			} `yaml:"jobs"`
		} `yaml:"instance_groups"`
	}
	if err := yaml.Unmarshal(manifestYAML, &m); err != nil {
		return "", nil, fmt.Errorf("parse manifest: %w", err)
	}
	for _, ig := range m.InstanceGroups {
		if ig.Name != group {
			continue
		}
		for _, j := range ig.Jobs {
			jobs = append(jobs, Job{Name: j.Name, Release: j.Release, Properties: j.Properties})
		}
		if len(jobs) == 0 {
			return "", nil, fmt.Errorf("instance group %s has no jobs", group)
		}
		return m.Name, jobs, nil
	}
	return "", nil, fmt.Errorf("manifest has no instance group %s", group)
}

// Rendered is the instance's jobs rendered into one archive, as the
// director uploads it (rendered_templates_archive): a gzipped tar with one
// directory per job.
type Rendered struct {
	Archive string // path of the .tgz
	SHA1    string // hex digest of the archive
	// ConfigurationHash digests every rendered file (job, path, content),
	// so it changes exactly when what the jobs see changes.
	ConfigurationHash string
	Jobs              []string
}

// RenderJobs renders each job from its release tarball (releases: release
// name -> path of its .tgz) with the manifest's properties, for deployment
// and address, into dir.
func RenderJobs(jobs []Job, releases map[string]string, deployment, address, dir string) (Rendered, error) {
	var out Rendered
	files := map[string]render.Rendered{}
	for _, j := range jobs {
		tarball, ok := releases[j.Release]
		if !ok {
			return out, fmt.Errorf("job %s: no tarball given for release %s", j.Name, j.Release)
		}
		jobDir := filepath.Join(dir, "jobs", j.Name)
		if err := extractJob(tarball, j.Name, jobDir); err != nil {
			return out, err
		}
		loaded, err := render.Load(jobDir)
		if err != nil {
			return out, fmt.Errorf("load job %s: %w", j.Name, err)
		}
		r, err := loaded.RenderFor(j.Properties, deployment, address)
		if err != nil {
			return out, fmt.Errorf("render job %s: %w", j.Name, err)
		}
		files[j.Name] = r
		out.Jobs = append(out.Jobs, j.Name)
	}
	out.ConfigurationHash = configurationHash(files)
	out.Archive = filepath.Join(dir, "rendered-templates.tgz")
	if err := writeArchive(out.Archive, files); err != nil {
		return out, err
	}
	sum, err := fileSHA1(out.Archive)
	if err != nil {
		return out, err
	}
	out.SHA1 = sum
	return out, nil
}

// extractJob unpacks jobs/NAME.tgz of a release tarball into dir.
func extractJob(releaseTarball, name, dir string) error {
	f, err := os.Open(releaseTarball)
	if err != nil {
		return fmt.Errorf("open release %s: %w", releaseTarball, err)
	}
	defer f.Close()
	inner, err := findInTgz(f, "jobs/"+name+".tgz")
	if err != nil {
		return fmt.Errorf("release %s: %w", releaseTarball, err)
	}
	return untgz(bytes.NewReader(inner), dir)
}

func findInTgz(r io.Reader, want string) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no %s in the tarball", want)
		}
		if err != nil {
			return nil, fmt.Errorf("read tar: %w", err)
		}
		if strings.TrimPrefix(h.Name, "./") == want {
			return io.ReadAll(tr)
		}
	}
}

func untgz(r io.Reader, dir string) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("gunzip job: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read job tar: %w", err)
		}
		name := filepath.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			continue
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", p, err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("create %s: %w", filepath.Dir(p), err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", p, err)
			}
		}
	}
}

func sortedPaths(r render.Rendered) []string {
	ps := make([]string, 0, len(r))
	for p := range r {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

func sortedJobs(files map[string]render.Rendered) []string {
	js := make([]string, 0, len(files))
	for j := range files {
		js = append(js, j)
	}
	sort.Strings(js)
	return js
}

func configurationHash(files map[string]render.Rendered) string {
	h := sha1.New() //nolint:gosec
	for _, j := range sortedJobs(files) {
		for _, p := range sortedPaths(files[j]) {
			fmt.Fprintf(h, "%s/%s\x00%d\x00", j, p, len(files[j][p]))
			h.Write(files[j][p])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeArchive lays the jobs out as bosh-cli's rendered job list archive
// does: ./JOB/monit, ./JOB/bin/..., bin/ executable.
func writeArchive(path string, files map[string]render.Rendered) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	addDir := func(d string) error {
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Name: "./" + d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	for _, j := range sortedJobs(files) {
		for _, p := range sortedPaths(files[j]) {
			// Parent directories first, each once.
			parts := strings.Split(filepath.Dir(filepath.Join(j, p)), "/")
			for i := range parts {
				if err := addDir(strings.Join(parts[:i+1], "/")); err != nil {
					return fmt.Errorf("write archive: %w", err)
				}
			}
			mode := int64(0o644)
			if filepath.Dir(p) == "bin" {
				mode = 0o755
			}
			b := files[j][p]
			if err := tw.WriteHeader(&tar.Header{Name: "./" + filepath.Join(j, p), Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(b))}); err != nil {
				return fmt.Errorf("write archive: %w", err)
			}
			if _, err := tw.Write(b); err != nil {
				return fmt.Errorf("write archive: %w", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return f.Close()
}

func fileSHA1(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	h := sha1.New() //nolint:gosec
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("digest %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
