// Package release_test checks the release's own YAML and scripts: config/,
// packages/, jobs/ and the CI pipeline parse and agree with each other.
package release_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar"
	"gopkg.in/yaml.v3"
)

const repoRoot = "../.."

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

func dirs(t *testing.T, parent string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, parent))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatalf("no directories under %s", parent)
	}
	return out
}

type blob struct {
	Size     int64  `yaml:"size"`
	ObjectID string `yaml:"object_id"`
	SHA      string `yaml:"sha"`
}

type pkgSpec struct {
	Name          string   `yaml:"name"`
	Dependencies  []string `yaml:"dependencies"`
	Files         []string `yaml:"files"`
	ExcludedFiles []string `yaml:"excluded_files"`
}

func TestFinalYML(t *testing.T) {
	var final struct {
		Name      string `yaml:"name"`
		Blobstore struct {
			Provider string            `yaml:"provider"`
			Options  map[string]string `yaml:"options"`
		} `yaml:"blobstore"`
	}
	readYAML(t, "config/final.yml", &final)
	if final.Name != "cellguard" {
		t.Errorf("name %q, want cellguard", final.Name)
	}
	// Final releases are shared: a remote blobstore, never a path on one
	// machine, and no credential in a committed file.
	if final.Blobstore.Provider != "s3" || final.Blobstore.Options["bucket_name"] == "" {
		t.Errorf("blobstore %+v: want the s3 provider with a bucket_name", final.Blobstore)
	}
	for k := range final.Blobstore.Options {
		if strings.Contains(k, "key") || strings.Contains(k, "secret") || k == "blobstore_path" {
			t.Errorf("config/final.yml sets %s: credentials go in config/private.yml, a local path only in FINAL_BLOBSTORE_DIR", k)
		}
	}
	b, _ := os.ReadFile(filepath.Join(repoRoot, "config/final.yml"))
	if !strings.Contains(string(b), "config/private.yml") || !strings.Contains(string(b), "FINAL_BLOBSTORE_DIR") {
		t.Error("config/final.yml must say where the credentials go and how to use a local blobstore")
	}
	ignored := exec.Command("git", "check-ignore", "-q", "config/private.yml")
	ignored.Dir = repoRoot
	if err := ignored.Run(); err != nil {
		t.Errorf("config/private.yml is not gitignored: %v", err)
	}
}

func packages(t *testing.T) map[string]pkgSpec {
	t.Helper()
	out := map[string]pkgSpec{}
	for _, d := range dirs(t, "packages") {
		var s pkgSpec
		readYAML(t, filepath.Join("packages", d, "spec"), &s)
		if s.Name != d {
			t.Errorf("packages/%s/spec names %q", d, s.Name)
		}
		out[d] = s
	}
	return out
}

// Every blob is some package's file, every package file outside src/ is a
// blob, and blob entries are complete (an object_id: in the blobstore).
func TestBlobsBelongToPackages(t *testing.T) {
	blobs := map[string]blob{}
	readYAML(t, "config/blobs.yml", &blobs)
	if len(blobs) == 0 {
		t.Fatal("config/blobs.yml lists no blobs; golang-1-linux needs the Go toolchain")
	}
	used := map[string]bool{}
	for name, p := range packages(t) {
		for _, f := range p.Files {
			if _, ok := blobs[f]; ok {
				used[f] = true
				continue
			}
			m, err := doublestar.Glob(filepath.Join(repoRoot, "src", f))
			if err != nil {
				t.Fatal(err)
			}
			if len(m) == 0 {
				t.Errorf("package %s: file pattern %q matches nothing under src/ and is not a blob", name, f)
			}
		}
	}
	for path, b := range blobs {
		if !used[path] {
			t.Errorf("blob %s is in no package's files", path)
		}
		if b.Size <= 0 || b.ObjectID == "" || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(b.SHA) {
			t.Errorf("blob %s: incomplete entry %+v (want size, object_id, sha256)", path, b)
		}
	}
}

func TestPackagesBuildOffline(t *testing.T) {
	pkgs := packages(t)
	for name, p := range pkgs {
		for _, d := range p.Dependencies {
			if _, ok := pkgs[d]; !ok {
				t.Errorf("package %s depends on %s, which is not in packages/", name, d)
			}
		}
		script := readFile(t, filepath.Join("packages", name, "packaging"))
		if !strings.Contains(script, "set -euo pipefail") {
			t.Errorf("packages/%s/packaging lacks set -euo pipefail", name)
		}
		bashN(t, "packages/"+name+"/packaging")
	}
	cg := pkgs["cellguard"]
	if len(cg.Dependencies) != 1 || cg.Dependencies[0] != "golang-1-linux" {
		t.Errorf("cellguard dependencies %v, want [golang-1-linux]", cg.Dependencies)
	}
	if !contains(cg.Files, "vendor/**/*") {
		t.Errorf("packages/cellguard/spec files lack vendor/**/*: the compile VM would have no dependencies")
	}
	packaging := readFile(t, "packages/cellguard/packaging")
	for _, want := range []string{"golang-1-linux/bosh/compile.env", "-mod=vendor", "CGO_ENABLED=0", "BOSH_INSTALL_TARGET"} {
		if !strings.Contains(packaging, want) {
			t.Errorf("packages/cellguard/packaging lacks %q", want)
		}
	}
	golang := readFile(t, "packages/golang-1-linux/packaging")
	for _, want := range []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=vendor"} {
		if !strings.Contains(golang, want) {
			t.Errorf("golang-1-linux's compile.env lacks %q", want)
		}
	}
}

// packaging builds with GOTOOLCHAIN=local: a go directive in the root
// go.mod newer than the blob's Go would fail only on the compile VM.
func TestGolangBlobCanBuildTheModule(t *testing.T) {
	blobs := map[string]blob{}
	readYAML(t, "config/blobs.yml", &blobs)
	var blobVersion string
	for path := range blobs {
		if m := regexp.MustCompile(`^golang/go([0-9.]+)\.linux-amd64\.tar\.gz$`).FindStringSubmatch(path); m != nil {
			blobVersion = m[1]
		}
	}
	if blobVersion == "" {
		t.Fatal("config/blobs.yml has no golang/goX.Y.Z.linux-amd64.tar.gz")
	}
	m := regexp.MustCompile(`(?m)^go ([0-9.]+)$`).FindStringSubmatch(readFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	// packages/cellguard/packaging writes its go.mod's go line from the
	// toolchain's version: the root's must be the same.
	if compareVersions(m[1], blobVersion) != 0 {
		t.Errorf("go.mod says go %s but the golang-1-linux blob is Go %s: the package builds with go %s; make them equal (docs/bosh.md)", m[1], blobVersion, blobVersion)
	}
	for _, f := range []string{"packages/golang-1-linux/spec", "packages/golang-1-linux/packaging"} {
		if !strings.Contains(readFile(t, f), "go"+blobVersion+".linux-amd64.tar.gz") {
			t.Errorf("%s does not name the blob go%s.linux-amd64.tar.gz", f, blobVersion)
		}
	}
}

func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func TestJobsAgreeWithTheirFiles(t *testing.T) {
	pkgs := packages(t)
	for _, d := range dirs(t, "jobs") {
		var s struct {
			Name      string            `yaml:"name"`
			Templates map[string]string `yaml:"templates"`
			Packages  []string          `yaml:"packages"`
		}
		readYAML(t, filepath.Join("jobs", d, "spec"), &s)
		if s.Name != d {
			t.Errorf("jobs/%s/spec names %q", d, s.Name)
		}
		for _, p := range s.Packages {
			if _, ok := pkgs[p]; !ok {
				t.Errorf("job %s uses package %s, which is not in packages/", d, p)
			}
		}
		if _, err := os.Stat(filepath.Join(repoRoot, "jobs", d, "monit")); err != nil {
			t.Errorf("job %s: %v", d, err)
		}
		var onDisk []string
		root := filepath.Join(repoRoot, "jobs", d, "templates")
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(root, p)
				onDisk = append(onDisk, rel)
			}
			return nil
		})
		var listed []string
		for src := range s.Templates {
			listed = append(listed, src)
		}
		sort.Strings(onDisk)
		sort.Strings(listed)
		if strings.Join(onDisk, ",") != strings.Join(listed, ",") {
			t.Errorf("job %s: templates on disk %v, listed in spec %v", d, onDisk, listed)
		}
	}
}

// The pipeline parses, every task it names exists and parses, and every task
// script runs only make targets the Makefile defines.
func TestPipeline(t *testing.T) {
	var pipeline struct {
		Resources []struct{ Name, Type string } `yaml:"resources"`
		Jobs      []struct {
			Name string           `yaml:"name"`
			Plan []map[string]any `yaml:"plan"`
		} `yaml:"jobs"`
	}
	readYAML(t, "ci/pipeline.yml", &pipeline)
	if len(pipeline.Jobs) == 0 || len(pipeline.Resources) == 0 {
		t.Fatalf("pipeline has %d jobs and %d resources", len(pipeline.Jobs), len(pipeline.Resources))
	}
	targets := makeTargets(t)
	tasks := 0
	for _, j := range pipeline.Jobs {
		for _, step := range j.Plan {
			file, ok := step["file"].(string)
			if !ok {
				continue
			}
			tasks++
			rel, found := strings.CutPrefix(file, "cellguard/")
			if !found {
				t.Errorf("job %s: task file %s is not in the cellguard input", j.Name, file)
				continue
			}
			var task struct {
				Platform string                  `yaml:"platform"`
				Inputs   []struct{ Name string } `yaml:"inputs"`
				Run      struct{ Path string }   `yaml:"run"`
				Image    map[string]any          `yaml:"image_resource"`
			}
			readYAML(t, rel, &task)
			if task.Platform != "linux" || task.Image == nil || len(task.Inputs) == 0 {
				t.Errorf("%s: want platform linux, an image_resource and inputs", rel)
			}
			script, found := strings.CutPrefix(task.Run.Path, "cellguard/")
			if !found {
				t.Errorf("%s: run.path %s is not in the cellguard input", rel, task.Run.Path)
				continue
			}
			fi, err := os.Stat(filepath.Join(repoRoot, script))
			if err != nil || fi.Mode()&0o111 == 0 {
				t.Errorf("%s: run.path %s missing or not executable: %v", rel, script, err)
				continue
			}
			bashN(t, script)
			calls := regexp.MustCompile(`(?m)^\s*make\s+([^\n#]+)`).FindAllStringSubmatch(readFile(t, script), -1)
			if len(calls) == 0 {
				t.Errorf("%s runs no make target: tasks must call the Makefile", script)
			}
			for _, c := range calls {
				// make's arguments end at a pipe or list; VAR=value are not targets.
				args, _, _ := strings.Cut(strings.NewReplacer(";", "|", "&", "|", ">", "|").Replace(c[1]), "|")
				for _, target := range strings.Fields(args) {
					if strings.Contains(target, "=") {
						continue
					}
					if !targets[target] {
						t.Errorf("%s runs make %s, which the Makefile does not define", script, target)
					}
				}
			}
		}
	}
	if tasks == 0 {
		t.Error("the pipeline runs no task files")
	}
}

// TestMakefilePhonyTargetsExist: every name a .PHONY line declares is a
// target the Makefile defines (a stale name, like the integration target
// that never existed, tells a reader of a target they cannot run).
func TestMakefilePhonyTargetsExist(t *testing.T) {
	targets := makeTargets(t)
	phony := regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindAllStringSubmatch(readFile(t, "Makefile"), -1)
	if len(phony) == 0 {
		t.Fatal("the Makefile declares no .PHONY target")
	}
	for _, m := range phony {
		for _, name := range strings.Fields(m[1]) {
			if !targets[name] {
				t.Errorf(".PHONY names %s, which the Makefile does not define", name)
			}
		}
	}
}

func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z][a-zA-Z0-9_-]*):`).FindAllStringSubmatch(readFile(t, "Makefile"), -1) {
		out[m[1]] = true
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func bashN(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("bash", "-n", filepath.Join(repoRoot, path)).CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s", path, err, out)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// packages/cellguard/packaging derives go.mod on the compile VM from
// vendor/modules.txt (BOSH packages nothing outside src/): the root go.mod
// may hold only what modules.txt records (module, go, require), and
// src/vendor must be what go mod vendor writes from it now.
func TestVendorCarriesTheModule(t *testing.T) {
	for _, line := range strings.Split(readFile(t, "go.mod"), "\n") {
		word := strings.Fields(strings.TrimSpace(line))
		if len(word) == 0 || strings.HasPrefix(word[0], "//") {
			continue
		}
		switch word[0] {
		case "replace", "exclude", "retract", "toolchain", "godebug", "tool", "ignore":
			t.Errorf("go.mod has a %s directive, which vendor/modules.txt does not carry to the compile VM: teach packages/cellguard/packaging first", word[0])
		}
	}
	check := exec.Command("bash", "ci/scripts/vendor.sh", "--check")
	check.Dir = repoRoot
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("ci/scripts/vendor.sh --check: %v\n%s", err, out)
	}
}

// Every final release in releases/ is complete: listed in the index, its
// manifest names each job and package at a version .final_builds records
// with the same fingerprint and sha1 (bosh create-release --final writes
// both; a lost .final_builds entry makes the next cut re-upload or fail).
func TestFinalReleasesAreConsistent(t *testing.T) {
	type build struct {
		Name        string `yaml:"name"` // release manifests only
		Version     string `yaml:"version"`
		Fingerprint string `yaml:"fingerprint"`
		SHA1        string `yaml:"sha1"`
		BlobstoreID string `yaml:"blobstore_id"`
	}
	var index struct {
		Builds map[string]struct{ Version string } `yaml:"builds"`
	}
	readYAML(t, "releases/cellguard/index.yml", &index)
	if len(index.Builds) == 0 {
		t.Fatal("releases/cellguard/index.yml lists no release")
	}
	for _, b := range index.Builds {
		var rel struct {
			Name       string  `yaml:"name"`
			Version    string  `yaml:"version"`
			CommitHash string  `yaml:"commit_hash"`
			Dirty      bool    `yaml:"uncommitted_changes"`
			Jobs       []build `yaml:"jobs"`
			Packages   []build `yaml:"packages"`
		}
		file := "releases/cellguard/cellguard-" + b.Version + ".yml"
		readYAML(t, file, &rel)
		if rel.Name != "cellguard" || rel.Version != b.Version || rel.CommitHash == "" || rel.Dirty {
			t.Errorf("%s: name %q version %q commit %q uncommitted_changes %v", file, rel.Name, rel.Version, rel.CommitHash, rel.Dirty)
		}
		for kind, items := range map[string][]build{"jobs": rel.Jobs, "packages": rel.Packages} {
			if len(items) == 0 {
				t.Errorf("%s lists no %s", file, kind)
			}
			for _, it := range items {
				var final struct {
					Builds map[string]build `yaml:"builds"`
				}
				name := it.Name
				readYAML(t, filepath.Join(".final_builds", kind, name, "index.yml"), &final)
				fb, ok := final.Builds[it.Fingerprint]
				if !ok || fb.SHA1 != it.SHA1 || fb.BlobstoreID == "" {
					t.Errorf("%s %s/%s: .final_builds has %+v, want sha1 %s and a blobstore_id", kind, name, it.Version, fb, it.SHA1)
				}
			}
		}
	}
}

// Every shipped manifest that names release cellguard says where to get it:
// version, url and sha1 as variables (bosh deploy and update-runtime-config
// upload from url; docs/releasing.md lists each version's values). The
// runtime config takes url and sha1 from an ops file, so that applying it
// without one (after bosh upload-release) uploads nothing.
func TestManifestsNameTheReleaseTarball(t *testing.T) {
	want := map[string]string{"version": "((cellguard_version))", "url": "((cellguard_url))", "sha1": "((cellguard_sha1))"}
	for _, file := range []string{"manifests/operations/add-cellguard-to-diego-cells.yml", "manifests/prometheus/add-cellguard-alerts.yml"} {
		var ops []struct {
			Path  string `yaml:"path"`
			Value any    `yaml:"value"`
		}
		readYAML(t, file, &ops)
		found := false
		for _, op := range ops {
			if op.Path != "/releases/name=cellguard?" {
				continue
			}
			found = true
			value, _ := op.Value.(map[string]any)
			for k, v := range want {
				if value[k] != v {
					t.Errorf("%s: release cellguard's %s is %v, want %s", file, k, value[k], v)
				}
			}
		}
		if !found {
			t.Errorf("%s adds no release cellguard", file)
		}
	}
	var urlOps []struct{ Path, Value string }
	readYAML(t, "manifests/operations/cellguard-release-url.yml", &urlOps)
	got := map[string]string{}
	for _, op := range urlOps {
		got[op.Path] = op.Value
	}
	if got["/releases/name=cellguard/url?"] != want["url"] || got["/releases/name=cellguard/sha1?"] != want["sha1"] {
		t.Errorf("manifests/operations/cellguard-release-url.yml sets %v, want url and sha1 variables", got)
	}
	for _, doc := range []string{"manifests/runtime-config.yml", "docs/releasing.md"} {
		if !strings.Contains(readFile(t, doc), "cellguard-release-url.yml") {
			t.Errorf("%s does not name manifests/operations/cellguard-release-url.yml", doc)
		}
	}
}

// fly validate-pipeline's reference checks, as a test (fly is not in the Go
// module proxy: github.com/concourse/concourse answers 403 there): resource
// and job names unique, every get and put names a declared resource of a
// known type, every passed names a job that gets the same resource, and
// every put's params read only from an artifact an earlier step made. And
// the release flow itself: a tag vX.Y.Z triggers the task that runs make
// final-release, and its tarball goes to a release resource.
func TestPipelineReferences(t *testing.T) {
	type step = map[string]any
	var p struct {
		ResourceTypes []struct{ Name string } `yaml:"resource_types"`
		Resources     []struct {
			Name, Type string
			Source     map[string]any
		} `yaml:"resources"`
		Jobs []struct {
			Name string `yaml:"name"`
			Plan []step `yaml:"plan"`
		} `yaml:"jobs"`
	}
	readYAML(t, "ci/pipeline.yml", &p)
	types := map[string]bool{"git": true, "s3": true, "github-release": true, "registry-image": true, "time": true, "semver": true}
	for _, rt := range p.ResourceTypes {
		types[rt.Name] = true
	}
	resources := map[string]string{}
	for _, r := range p.Resources {
		if _, dup := resources[r.Name]; dup {
			t.Errorf("resource %s declared twice", r.Name)
		}
		if !types[r.Type] {
			t.Errorf("resource %s has unknown type %s", r.Name, r.Type)
		}
		resources[r.Name] = r.Type
	}
	gets := map[string]map[string]bool{} // job -> resources it gets
	for _, j := range p.Jobs {
		if gets[j.Name] != nil {
			t.Errorf("job %s declared twice", j.Name)
		}
		gets[j.Name] = map[string]bool{}
		for _, s := range j.Plan {
			if name, ok := s["get"].(string); ok {
				res, _ := s["resource"].(string)
				if res == "" {
					res = name
				}
				gets[j.Name][res] = true
			}
		}
	}
	for _, j := range p.Jobs {
		artifacts := map[string]bool{}
		for _, s := range j.Plan {
			switch {
			case s["get"] != nil:
				res, _ := s["resource"].(string)
				if res == "" {
					res, _ = s["get"].(string)
				}
				if _, ok := resources[res]; !ok {
					t.Errorf("job %s gets undeclared resource %s", j.Name, res)
				}
				passed, _ := s["passed"].([]any)
				for _, up := range passed {
					if !gets[fmt.Sprint(up)][res] {
						t.Errorf("job %s: passed %v, which does not get %s", j.Name, up, res)
					}
				}
				artifacts[fmt.Sprint(s["get"])] = true
			case s["task"] != nil:
				var task struct{ Outputs []struct{ Name string } }
				if file, ok := s["file"].(string); ok {
					readYAML(t, strings.TrimPrefix(file, "cellguard/"), &task)
				}
				for _, o := range task.Outputs {
					artifacts[o.Name] = true
				}
			case s["put"] != nil:
				res := fmt.Sprint(s["put"])
				if _, ok := resources[res]; !ok {
					t.Errorf("job %s puts undeclared resource %s", j.Name, res)
				}
				params, _ := s["params"].(map[string]any)
				for k, v := range params {
					vals := []any{v}
					if list, ok := v.([]any); ok {
						vals = list
					}
					for _, v := range vals {
						str, ok := v.(string)
						if !ok {
							continue
						}
						if dir, _, _ := strings.Cut(str, "/"); !artifacts[dir] {
							t.Errorf("job %s: put %s params.%s reads %s, which no earlier step makes", j.Name, res, k, str)
						}
					}
				}
			}
		}
	}
	// The release flow.
	var release []step
	for _, j := range p.Jobs {
		if j.Name == "final-release" {
			release = j.Plan
		}
	}
	if len(release) < 3 {
		t.Fatalf("no final-release job with a get, a task and a put: %v", release)
	}
	res, _ := release[0]["resource"].(string)
	var tagRegex string
	for _, r := range p.Resources {
		if r.Name == res {
			tagRegex, _ = r.Source["tag_regex"].(string)
		}
	}
	if release[0]["trigger"] != true || tagRegex == "" || !regexp.MustCompile(tagRegex).MatchString("v0.1.0") || regexp.MustCompile(tagRegex).MatchString("v0.1.0-rc1") {
		t.Errorf("final-release must trigger on a tag vX.Y.Z (resource %s, tag_regex %q)", res, tagRegex)
	}
	if !strings.Contains(readFile(t, "ci/tasks/final-release.sh"), "make final-release VERSION=") {
		t.Error("ci/tasks/final-release.sh does not run make final-release VERSION=...")
	}
	published := false
	for _, s := range release {
		if put, ok := s["put"].(string); ok && resources[put] == "github-release" {
			params, _ := s["params"].(map[string]any)
			published = strings.Contains(fmt.Sprint(params["globs"]), ".tgz")
		}
	}
	if !published {
		t.Error("final-release puts no tarball to a github-release resource")
	}
}
