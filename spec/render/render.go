// Package render renders a BOSH job directory (jobs/NAME: spec, monit,
// templates/) with bosh-cli v7.9.12's own job renderer and ERB evaluation
// context, which shell out to ruby exactly as `bosh create-env` does. It is
// what the template tests use.
package render

import (
	"fmt"
	"os"
	"path/filepath"

	bireljob "github.com/cloudfoundry/bosh-cli/v7/release/job"
	boshjobman "github.com/cloudfoundry/bosh-cli/v7/release/job/manifest"
	"github.com/cloudfoundry/bosh-cli/v7/release/resource"
	"github.com/cloudfoundry/bosh-cli/v7/templatescompiler"
	"github.com/cloudfoundry/bosh-cli/v7/templatescompiler/erbrenderer"
	boshlog "github.com/cloudfoundry/bosh-utils/logger"
	biproperty "github.com/cloudfoundry/bosh-utils/property"
	boshsys "github.com/cloudfoundry/bosh-utils/system"
	boshuuid "github.com/cloudfoundry/bosh-utils/uuid"
	"gopkg.in/yaml.v2"
)

// Job is a job directory read the way bosh-cli reads an extracted job.
type Job struct {
	Dir      string
	Manifest boshjobman.Manifest
	job      *bireljob.Job
	fs       boshsys.FileSystem
	logger   boshlog.Logger
}

// Load reads dir/spec (a release's jobs/NAME) or dir/job.MF (an unpacked
// job tarball). Both have templates/ and monit where bosh-cli's renderer
// looks for them, so it reads the directory in place.
func Load(dir string) (*Job, error) {
	logger := boshlog.NewLogger(boshlog.LevelNone)
	fs := boshsys.NewOsFileSystem(logger)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve job dir %s: %w", dir, err)
	}
	// A job directory in a release has spec; an unpacked job tarball has
	// the same file as job.MF.
	specPath, inRelease := filepath.Join(abs, "spec"), true
	if _, err := os.Stat(specPath); os.IsNotExist(err) {
		specPath, inRelease = filepath.Join(abs, "job.MF"), false
	}
	m, err := boshjobman.NewManifestFromPath(specPath, fs)
	if err != nil {
		return nil, fmt.Errorf("read job spec %s: %w", dir, err)
	}
	if inRelease && m.Name != filepath.Base(abs) {
		return nil, fmt.Errorf("job dir %s holds job %q: bosh requires the names to match", dir, m.Name)
	}
	j := bireljob.NewExtractedJob(resource.NewResource(m.Name, "", nil), abs, fs)
	j.Templates = m.Templates
	j.PackageNames = m.Packages
	// As bosh-cli's archive reader does for job.MF.
	j.Properties = make(map[string]bireljob.PropertyDefinition, len(m.Properties))
	for name, def := range m.Properties {
		d, err := biproperty.Build(def.Default)
		if err != nil {
			return nil, fmt.Errorf("job %s property %s default: %w", m.Name, name, err)
		}
		j.Properties[name] = bireljob.PropertyDefinition{Description: def.Description, Default: d}
	}
	return &Job{Dir: abs, Manifest: m, job: j, fs: fs, logger: logger}, nil
}

// Rendered maps each rendered file's destination (bin/pre-start, monit) to
// its content.
type Rendered map[string][]byte

// Render renders every template and the monit file with propsYAML as the
// instance group job's properties (a manifest's `properties:` block, e.g.
// "cellguard: {daemons: []}"). An error carries ruby's message, e.g. BOSH's
// "Can't find property '[\"x\"]'".
func (j *Job) Render(propsYAML string) (Rendered, error) {
	var raw map[interface{}]interface{}
	if err := yaml.Unmarshal([]byte(propsYAML), &raw); err != nil {
		return nil, fmt.Errorf("parse properties: %w", err)
	}
	return j.RenderFor(raw, "cellguard-spec", "")
}

// RenderFor renders as Render does, with the job's properties already
// parsed (a manifest's instance group job `properties:`), for deployment
// name and the instance's address, as bosh create-env renders a job.
func (j *Job) RenderFor(raw map[interface{}]interface{}, deployment, address string) (Rendered, error) {
	if raw == nil {
		raw = map[interface{}]interface{}{}
	}
	props, err := biproperty.BuildMap(raw)
	if err != nil {
		return nil, fmt.Errorf("build properties: %w", err)
	}
	runner := boshsys.NewExecCmdRunner(j.logger)
	jr := templatescompiler.NewJobRenderer(erbrenderer.NewERBRenderer(j.fs, runner, j.logger), j.fs, boshuuid.NewGenerator(), j.logger)
	rj, err := jr.Render(*j.job, &props, biproperty.Map{}, biproperty.Map{}, deployment, address)
	if err != nil {
		return nil, err
	}
	defer rj.DeleteSilently()
	out := Rendered{}
	dsts := []string{"monit"}
	for _, dst := range j.Manifest.Templates {
		dsts = append(dsts, dst)
	}
	for _, dst := range dsts {
		b, err := os.ReadFile(filepath.Join(rj.Path(), dst))
		if err != nil {
			return nil, fmt.Errorf("read rendered %s: %w", dst, err)
		}
		out[dst] = b
	}
	return out, nil
}

// WriteTo lays the rendered files out under dir as the agent does under
// /var/vcap/jobs/NAME (bin/ executable).
func (r Rendered) WriteTo(dir string) error {
	for dst, b := range r {
		p := filepath.Join(dir, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(p), err)
		}
		mode := os.FileMode(0o644)
		if filepath.Dir(dst) == "bin" {
			mode = 0o755
		}
		if err := WriteFile(p, b, mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}
