package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// fleet is what every scenario shares: the director, bosh-cli, the CPI's
// state and the variables the manifests take. startFleet makes the shape's
// one; each lane (lanes_test.go) is a copy of it with a deployment of its own.
type fleet struct {
	t        *testing.T
	repo     string
	work     string
	cpiState string
	env      boshlab.Env
	bosh     *boshlab.Bosh
	vars     []string // bosh-cli -v/-l for the manifests
	shape    shape
	story    func(string)

	// dep is this lane's deployment (its manifest's name, its runtime
	// config's include.deployments); cells and others its instance counts.
	dep           string
	cells, others int

	// summary is this work tree's cellguard, built for the host: its
	// fleet-summary reads the errand's output as an operator would.
	summary string

	// cache holds compiled releases by release and stemcell; releases are
	// the two this run uploaded, toStore those the cache did not have (the
	// deploy scenario exports them once it deployed).
	cache    compiledCache
	releases []release
	toStore  []release

	// gardenRel is cellguard-test-garden (real Garden), built and uploaded
	// only when the garden scenario runs; kept apart from releases, which
	// the deploy scenario exports with the stand-in's deployment.
	gardenRel     release
	gardenToStore bool
	// gardenJob is the release of the garden job the addon includes
	// (runtime-config.yml's ((garden_release))).
	gardenJob string
	// seedJob: the cells run garden-seed instead of a job named garden, so
	// the addon includes that (garden-seed-addon-ops.yml).
	seedJob bool
	// healOff: every runtime config of this lane sets cellguard.drain.heal
	// false (laneSpec's healOff).
	healOff bool
	// runcs: fleet-runc's versions on the shape's director, shared by its
	// lanes (runc_test.go).
	runcs *runcUploads

	// ctx is the scenarios' context: an interrupt cancels it, so what runs
	// stops before the cleanup starts.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	cleanups  []func()
	cleanOnce sync.Once
	lanes     []string // the deployments lane made, for deleteLanes
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// onCleanup registers f to run at the end, also on SIGINT/SIGTERM: the
// fleet's VMs, boxes, namespaces and the director must not outlive the test.
func (f *fleet) onCleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// cleanup runs the registered cleanups, last first, once: a second caller
// (the test's end during an interrupt's cleanup) waits for the first.
func (f *fleet) cleanup() {
	f.cleanOnce.Do(func() {
		f.mu.Lock()
		fns := f.cleanups
		f.cleanups = nil
		f.mu.Unlock()
		for i := len(fns) - 1; i >= 0; i-- {
			fns[i]()
		}
	})
}

// sh runs a host command with the story told of failures; stdout is returned.
func sh(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, boshlab.LastLines(stderr.String(), 15))
	}
	return string(out), nil
}

// workTreeRelease is this work tree's cellguard release, built once for
// the shapes that run at once: the source release is the same for each,
// and three builds side by side took 9-12 s each on a saturated machine.
// The first shape to ask builds it in its work directory; the others
// wait, then link it into their own, so a shape's cleanup removes only its
// link. A shape that finds the first one's gone (it ended early) builds
// its own.
var workTreeRelease = releaseOnce{build: boshlab.BuildRelease}

type releaseOnce struct {
	build   func(ctx context.Context, repo, dir string) (string, error)
	mu      sync.Mutex
	tarball string
	by      string // the shape that built it
}

// get returns the tarball in work/src and the shape that built it.
func (r *releaseOnce) get(ctx context.Context, repo, work, shape string) (string, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	mine := filepath.Join(work, "src", filepath.Base(r.tarball))
	if r.tarball != "" && os.Link(r.tarball, mine) == nil {
		return mine, r.by, nil
	}
	t, err := r.build(ctx, repo, filepath.Join(work, "src"))
	if err != nil {
		return "", "", err
	}
	r.tarball, r.by = t, shape
	return t, shape, nil
}

// startFleet brings up the director with the nspawn CPI on its lab network,
// uploads the stemcell and both releases, and sets the cloud and runtime
// configs. Everything is undone by f.cleanup. Long because it is one
// ordered setup whose every step registers its own undo before the next.
func startFleet(t *testing.T, parent context.Context, sh0 shape, plan []plannedLane) *fleet {
	// Part of make test since it passed end to end (README.md, "Status"):
	// root, the director's dependencies and Ubuntu's archive (or cached
	// stemcells) are required, skipped loudly here and failed in CI.
	testkit.RequireRoot(t, "the director's lab network namespace, nspawn VMs")
	for _, c := range []string{"jq", "ip", "nsenter", "systemd-nspawn", "go", "ruby", "tar"} {
		if _, err := exec.LookPath(c); err != nil {
			testkit.Unavailable(t, c+" is missing (make deps installs it)")
		}
	}
	// Only what the plan's lanes deploy is built and uploaded.
	standIn, realGarden := uses(plan)
	f := &fleet{t: t, repo: repoRoot(), shape: sh0, gardenJob: testReleaseName, runcs: &runcUploads{rel: map[string]*runcUpload{}}}
	f.ctx, f.cancel = context.WithCancel(parent)
	ctx := f.ctx
	// Before anything is made: a shape whose turn comes after an interrupt
	// (a paused parallel subtest is let go as the others end) makes nothing.
	// An interrupt cancels every shape's context first (parent derives from
	// interrupt.Context), then takes each fleet down.
	interrupt.Cleanup(t, "fleet "+sh0.name, func() { f.cancel(); f.cleanup() })
	// Shapes run in parallel: every line says which one it is about.
	f.story = func(s string) { t.Log(sh0.name + " | " + s) }
	// Registered first, so it runs last: after every VM is gone.
	release, said, err := hostInotify.raise()
	if err != nil {
		t.Fatal(err)
	}
	f.onCleanup(release)
	if said != "" {
		f.story("   " + said)
	}
	// A QEMU shape's guests run while no other process runs any
	// (qemuvm.HostLockFile): taken once the director is ready, let go after
	// every VM is gone (registered before their cleanups, so it runs after).
	var qemuHold struct {
		sync.Mutex
		release func()
	}
	f.onCleanup(func() {
		qemuHold.Lock()
		defer qemuHold.Unlock()
		if qemuHold.release != nil {
			qemuHold.release()
		}
	})
	director := filepath.Join(f.repo, "src/tests/director/director.sh")
	if _, err := os.Stat(director); err != nil {
		testkit.Unavailable(t, "no director: "+err.Error())
	}
	work, err := os.MkdirTemp("/var/tmp", "cellguard-fleet.")
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL runs as its own user below STATE: every directory above
	// it needs o+x (director.sh checks).
	if err := os.Chmod(work, 0o711); err != nil {
		t.Fatal(err)
	}
	f.work = work
	f.onCleanup(func() {
		if os.Getenv("CELLGUARD_FLEET_KEEP_WORK") == "" {
			os.RemoveAll(work)
		}
	})
	for _, d := range []string{"home", "logs", "cpi-state", "src"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.cpiState = filepath.Join(work, "cpi-state")
	if f.shape.qemu {
		// The instances' VMs are the QEMU CPI's; the nspawn CPI's state
		// holds compilation VMs only.
		f.cpiState = filepath.Join(work, "qemu-state")
	}
	// Private copies of the harness and the CPI: bash reads a script as it
	// runs, so an edit to the checkout during a run must not change this run.
	sdboxCopy, cpiCopy, qemuCopy := filepath.Join(work, "sdbox.sh"), filepath.Join(work, "nspawn-cpi"), filepath.Join(work, "qemu-cpi")
	copies := map[string]string{
		"src/tests/harness/sdbox.sh":    sdboxCopy,
		"src/tests/bosh/cpi/nspawn-cpi": cpiCopy,
	}
	if f.shape.qemu {
		// The QEMU CPI sources common.bash from beside itself.
		copies["src/tests/bosh/cpi/qemu-cpi"] = qemuCopy
		copies["src/tests/bosh/cpi/common.bash"] = filepath.Join(work, "common.bash")
	}
	for src, dst := range copies {
		b, err := os.ReadFile(filepath.Join(f.repo, src))
		if err != nil {
			t.Fatal(err)
		}
		testkit.WriteExec(t, dst, string(b))
	}
	cpiConfig := filepath.Join(work, "cpi.json")
	// The director runs its external CPI without arguments; the config is
	// written once the lab exists (below), before the first CPI call.
	wrapper := filepath.Join(work, "cpi")
	testkit.WriteExec(t, wrapper, "#!/bin/bash\nexec bash "+cpiCopy+" "+cpiConfig+"\n")
	// A qemu shape's second CPI, which the director's cpi config names.
	qemuConfig, qemuWrapper := filepath.Join(work, "qemu-cpi.json"), filepath.Join(work, "cpi-qemu")
	if f.shape.qemu {
		testkit.WriteExec(t, qemuWrapper, "#!/bin/bash\nexec bash "+qemuCopy+" "+qemuConfig+"\n")
	}

	step := func(what string, args ...string) string {
		t.Helper()
		t0 := time.Now()
		out, err := sh(ctx, f.repo, nil, args...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		f.story(fmt.Sprintf("   %s: %s", what, time.Since(t0).Round(time.Second)))
		return strings.TrimSpace(out)
	}
	boshBin := step("bosh-cli", "bash", "ci/scripts/bosh-cli.sh")
	// CELLGUARD_FLEET_STEMCELL: a stemcell tarball built before (its
	// operating_system must be ubuntu-SHAPE) instead of build.sh's.
	stemcell, err := os.Getenv("CELLGUARD_FLEET_STEMCELL"), error(nil)
	if stemcell == "" {
		stemcell, err = sh(ctx, f.repo, nil, "bash", "src/tests/bosh/stemcell/build.sh", f.shape.name)
	}
	if err != nil {
		// build.sh exits 3 when the shape's archive cannot be reached.
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			testkit.Unavailable(t, "stemcell shape "+f.shape.name+" skipped: "+err.Error())
		}
		t.Fatalf("stemcell %s: %v", f.shape.name, err)
	}
	// A link in the work directory: the shared cache may replace a shape's
	// stemcell (another build.sh's key) before upload-stemcell reads it.
	if keep := filepath.Join(work, "stemcell.tgz"); os.Link(lastLine(stemcell), keep) == nil {
		stemcell = keep
	} else if _, err := sh(ctx, f.repo, nil, "cp", lastLine(stemcell), keep); err != nil {
		t.Fatalf("keep the stemcell: %v", err)
	} else {
		stemcell = keep
	}
	// A qemu shape's cells boot the same stemcell as a disk image with
	// its own kernel (same os and version: the compiled packages serve both).
	var qemuStemcell string
	if f.shape.qemu {
		t0 := time.Now()
		out, err := sh(ctx, f.repo, nil, "bash", "src/tests/qemu/stemcell.sh")
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			testkit.Unavailable(t, "stemcell shape "+f.shape.name+" (QEMU image) skipped: "+err.Error())
		}
		if err != nil {
			t.Fatalf("QEMU stemcell %s: %v", f.shape.name, err)
		}
		qemuStemcell = filepath.Join(work, "qemu-stemcell.tgz")
		if os.Link(lastLine(out), qemuStemcell) != nil {
			if _, err := sh(ctx, f.repo, nil, "cp", lastLine(out), qemuStemcell); err != nil {
				t.Fatalf("keep the QEMU stemcell: %v", err)
			}
		}
		f.story(fmt.Sprintf("   the QEMU stemcell (src/tests/qemu/stemcell.sh): %s", time.Since(t0).Round(time.Second)))
	}
	// The release of this work tree, built in the work directory: not a
	// dev_releases/ tarball some earlier build left in the repository.
	tarball := os.Getenv("CELLGUARD_TARBALL")
	if tarball == "" {
		t0 := time.Now()
		var by string
		if tarball, by, err = workTreeRelease.get(ctx, f.repo, work, f.shape.name); err != nil {
			t.Fatal(err)
		}
		f.story(fmt.Sprintf("   cellguard release (ci/scripts/create-release.sh on a copy of the work tree, built for %s): %s", by, time.Since(t0).Round(time.Second)))
	}
	f.summary = filepath.Join(work, "cellguard")
	step("cellguard for the host (fleet-summary)", "env", "CGO_ENABLED=0", "go", "build", "-o", f.summary, "./src/cmd/cellguard")
	tarballs := []string{tarball}
	if standIn {
		// The stand-in's release, which only the stand-in's lanes use.
		testRelease := filepath.Join(work, "cellguard-test.tgz")
		testSrc := filepath.Join(work, "src", "test-release")
		step("copy test-release", "cp", "-a", filepath.Join(f.repo, "src/tests/bosh/test-release"), testSrc)
		rc93 := step("runc 1.0.0-rc93 for old-runc (src/tests/qemu/runc.sh: cached, or built from the Go module proxy)", "bash", "src/tests/qemu/runc.sh", "rc93")
		step("copy rc93 into the test release", "install", "-D", "-m", "0755", filepath.Join(lastLine(rc93), "runc"), filepath.Join(testSrc, "src", "runc-rc93", "runc"))
		rc94 := step("runc 1.0.0-rc94 for new-runc, seed 001's remedy (src/tests/qemu/runc.sh)", "bash", "src/tests/qemu/runc.sh", "rc94")
		step("copy rc94 into the test release", "install", "-D", "-m", "0755", filepath.Join(lastLine(rc94), "runc"), filepath.Join(testSrc, "src", "runc-rc94", "runc"))
		if _, err := sh(ctx, testSrc, []string{"HOME=" + filepath.Join(work, "home")}, boshBin, "create-release", "--force",
			"--tarball="+testRelease, "--non-interactive"); err != nil {
			t.Fatalf("bosh create-release of the test release: %v", err)
		}
		tarballs = append(tarballs, testRelease)
	}
	if f.cache, err = newCompiledCache(stemcell); err != nil {
		t.Fatal(err)
	}
	if realGarden {
		gt, err := f.buildGardenRelease(ctx, boshBin)
		if err != nil {
			t.Fatal(err)
		}
		if f.gardenRel, err = readRelease(gt); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range tarballs {
		r, err := readRelease(tb)
		if err != nil {
			t.Fatal(err)
		}
		f.releases = append(f.releases, r)
	}
	cgVersion := f.releases[0].Version

	dstate := filepath.Join(work, "director")
	// Whatever VM the director did not delete (an interrupted deploy, a
	// compilation VM), the CPI deletes once the director is down, so no
	// worker makes another meanwhile.
	f.onCleanup(func() { f.deleteLeftoverVMs(cpiCopy, cpiConfig, filepath.Join(work, "cpi-state")) })
	if f.shape.qemu {
		f.onCleanup(func() { f.deleteLeftoverVMs(qemuCopy, qemuConfig, filepath.Join(work, "qemu-state")) })
	}
	f.onCleanup(func() {
		if out, err := sh(context.Background(), f.repo, nil, "bash", director, "down", dstate); err != nil {
			t.Errorf("director.sh down: %v\n%s", err, out)
		}
	})
	// A worker per lane, and one for what they ask meanwhile (bosh ssh,
	// run-errand and instances --details are tasks too).
	workers := len(plan) + 1
	// QEMU VMs under TCG: run 1 of noble's booted 4 at once, at load 20,
	// in more than the director's default 10 minutes.
	agentWait := 600
	if f.shape.qemu {
		agentWait = 1800
	}
	step(fmt.Sprintf("director.sh up (the director with %d workers, agents awaited %d s, PostgreSQL, NATS, the lab network)", workers, agentWait),
		"env", fmt.Sprintf("CELLGUARD_DIRECTOR_WORKERS=%d", workers), fmt.Sprintf("CELLGUARD_DIRECTOR_AGENT_WAIT=%d", agentWait),
		"bash", director, "up", dstate, "--cpi", wrapper)
	f.env, err = boshlab.ReadEnv(filepath.Join(dstate, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	nspawnArgs := ""
	if f.shape.hostRuntime {
		// The host's runtime, laid out for the VMs, which bind it in.
		stage := filepath.Join(work, "garden-runtime")
		if err := garden.StageHostRuntime(stage, runtimeDir); err != nil {
			t.Fatalf("the host's runtime for %s's VMs: %v", f.shape.name, err)
		}
		nspawnArgs = f.shape.nspawnArgs(stage)
		f.story(fmt.Sprintf("   the host's runc and containerd for the stand-in, bound into every VM at %s", runtimeDir))
	}
	cfg, err := cpiConfigFor(f.env, sdboxCopy, filepath.Join(work, "cpi-state"), "fleet", nspawnArgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cpiConfig, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	f.bosh = &boshlab.Bosh{Bin: boshBin, Env: f.env, Home: filepath.Join(work, "home"), Logs: filepath.Join(work, "logs")}
	if f.shape.qemu {
		if err := f.qemuCPIs(ctx, cpiConfig, wrapper, qemuConfig, qemuWrapper); err != nil {
			t.Fatal(err)
		}
	}
	reservedIPs, err := reserved(f.env)
	if err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(f.repo, "src/tests/fleet/manifests")
	f.vars = append([]string{"-v", "cellguard_version=" + cgVersion, "-v", "cidr=" + f.env.CIDR, "-v", "gateway=" + f.env.Gateway,
		"-v", "reserved=" + reservedIPs, "-l", filepath.Join(f.repo, "src/tests/fleet/manifests/defaults.yml")}, f.shape.vars()...)
	// Each lane's deployment, deleted before the director goes down.
	f.onCleanup(f.deleteLanes)
	uploads := [][]string{{"upload-stemcell", stemcell}}
	if qemuStemcell != "" {
		uploads = append(uploads, []string{"upload-stemcell", qemuStemcell})
	}
	for _, r := range f.releases {
		// A compiled release of this content for this stemcell, when an
		// earlier run exported one: the director then compiles nothing.
		if p, ok := f.cache.Lookup(r); ok {
			f.story(fmt.Sprintf("   %s/%s: compiled for %s/%s in the cache (%s)", r.Name, r.Version, f.cache.StemcellOS, f.cache.Stemcell, filepath.Base(p)))
			uploads = append(uploads, []string{"upload-release", p})
			continue
		}
		f.toStore = append(f.toStore, r)
		uploads = append(uploads, []string{"upload-release", r.Tarball})
	}
	if realGarden {
		r := f.gardenRel
		if p, ok := f.cache.Lookup(r); ok {
			f.story(fmt.Sprintf("   %s/%s: compiled for %s/%s in the cache (%s)", r.Name, r.Version, f.cache.StemcellOS, f.cache.Stemcell, filepath.Base(p)))
			uploads = append(uploads, []string{"upload-release", p})
		} else {
			f.gardenToStore = true
			uploads = append(uploads, []string{"upload-release", r.Tarball})
		}
	}
	cloudConfig := append([]string{"update-cloud-config", filepath.Join(m, "cloud-config.yml")}, f.vars...)
	for _, o := range f.shape.cloudConfigOps() {
		cloudConfig = append(cloudConfig, "-o", filepath.Join(f.repo, o))
	}
	uploads = append(uploads, cloudConfig)
	// At once: each is a task of its own (the director's workers take them
	// side by side), and a compiled release names its stemcell by os and
	// version without needing it uploaded first (bosh v283.0.0's
	// PackagePersister). One after the other they took 40-60 s per shape.
	errs := make([]error, len(uploads))
	var wg sync.WaitGroup
	for i, c := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.bosh.MustRun(ctx, c...)
			if errs[i] = err; err == nil {
				f.story(fmt.Sprintf("   bosh %s %s: %s", c[0], filepath.Base(c[1]), r.Took.Round(100*time.Millisecond)))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if f.shape.qemu {
		r, err := qemuvm.HoldHost(ctx, "TestFleet/"+sh0.name, func(s string) { f.story("   " + s) })
		if err != nil {
			t.Fatal(err)
		}
		qemuHold.Lock()
		qemuHold.release = r
		qemuHold.Unlock()
	}
	return f
}

// addon is what a scenario sets in the cellguard addon's runtime config.
type addon struct {
	Level string // cellguard.log.level: which version of the addon a cell runs
	Fix   bool   // validator.fix
	// Seed001 points validator.runtime_binaries.runc at rc93 (test-release's
	// old-runc job) and blocks on runtime-versions where the hang's
	// condition holds.
	Seed001 bool
	// PipeLimitKept drops fs.pipe-user-pages-soft from the profile on a
	// real kernel (real-kernel-addon-ops.yml's sysctl.remove): an operator
	// who left it at the kernel's default, seed 001's condition.
	PipeLimitKept bool
	Protect       bool // supervisor.protect: the unit holding monit delegated in place
	Heal          bool // watch.heal: watch moves escaped processes back
	// Start names garden in cellguard.daemons, so pre-start installs
	// cellguard-garden.service for a monit file that calls cellguard start
	// (start-ops.yml).
	Start bool
	// Runc is validator.runtime_binaries.runc where Garden brings its own
	// (as the shipped manifests point it at garden-runc-release's); "" is
	// the shape's.
	Runc string
}

// gardenDaemon is cellguard.daemons' entry for the Garden stand-in, as
// docs/bosh.md tells job authors to write one.
const gardenDaemon = `[{name: garden, start: /var/vcap/jobs/garden/bin/garden_ctl start, stop: /var/vcap/jobs/garden/bin/garden_ctl stop,
  pidfile: /var/vcap/sys/run/garden/garden.pid, type: forking, start_timeout: 60s, stop_timeout: 60s}]`

// runtimeConfig sets the cellguard addon's runtime config for this lane's
// deployment: a named one (cellguard-<dep>) whose include.deployments is
// the lane's own, so lanes set theirs side by side; the next deploy rolls
// it out.
func (f *fleet) runtimeConfig(ctx context.Context, a addon) (boshlab.Result, error) {
	// delegation-audit reports without blocking: nothing protects the unit
	// holding monit here (the escapes need that), and with it blocking every
	// cell that holds containers stops at pre-start (run 3: the canary, "2
	// containers below runit.service are exposed to systemd moving them out"), so no cell
	// before an unsafe one could update. runtime-versions is not ignored:
	// jammy's and noble's runc and containerd have CVEs, which warn, and no
	// hazard (defaults.yml); seed 001 blocks on rc93's.
	runc, ignore := f.shape.runc(), "[delegation-audit]"
	if f.shape.name == "xenial" && !a.Seed001 {
		// Except on xenial: its own runc (/usr/bin/runc 0.0.8) carries the
		// devices deny-all hazard, whose condition (v1 devices) holds there,
		// so pre-start rightly blocks every xenial cell (CI-D: each xenial
		// lane's first deploy). Its lanes test other things; seed 001's
		// deploy still judges runtime versions.
		ignore = "[runtime-versions, delegation-audit]"
	}
	// The QEMU cells judge runtime versions too: their probes get a minute
	// (real-kernel-addon-ops.yml's validator.probe_timeout), as TCG took
	// more than the default 5 s there.
	if a.Seed001 {
		runc = "/var/vcap/packages/runc-rc93/bin/runc"
	}
	if a.Runc != "" {
		runc = a.Runc
	}
	daemons := "[]"
	if a.Start {
		daemons = gardenDaemon
	}
	removed := "[]"
	if a.PipeLimitKept {
		removed = "[fs.pipe-user-pages-soft]"
	}
	vars := filepath.Join(f.work, fmt.Sprintf("runtime-vars-%s-%s-%t-%t-%t-%t-%t-%t-%t-%s-%s.yml", f.dep, a.Level, a.Fix, a.Seed001, a.PipeLimitKept, a.Protect, a.Heal, a.Start, f.healOff, f.gardenJob, strings.ReplaceAll(runc, "/", "_")))
	text := fmt.Sprintf("cellguard_log_level: %s\nvalidator_fix: %t\nvalidator_runc: %s\nvalidator_ignore: %s\nprotect_supervisor: %t\nwatch_heal: %t\ndrain_heal: %t\ncellguard_daemons: %s\ngarden_release: %s\nreal_kernel_sysctl_remove: %s\n",
		a.Level, a.Fix, runc, ignore, a.Protect, a.Heal, !f.healOff, daemons, f.gardenJob, removed)
	if err := os.WriteFile(vars, []byte(text), 0o600); err != nil {
		return boshlab.Result{}, err
	}
	args := append([]string{"update-runtime-config", "--name", "cellguard-" + f.dep, filepath.Join(f.repo, "src/tests/fleet/manifests/runtime-config.yml")}, f.vars...)
	for _, o := range f.shape.runtimeConfigOps() {
		args = append(args, "-o", filepath.Join(f.repo, o))
	}
	if f.seedJob {
		args = append(args, "-o", filepath.Join(f.repo, gardenSeedAddonOps))
	}
	return f.bosh.MustRun(ctx, append(args, "-l", vars)...)
}

// deploy runs bosh deploy of the lane's manifest, with the shape's ops
// files and ops (paths relative to the repository).
func (f *fleet) deploy(ctx context.Context, ops ...string) (boshlab.Result, error) {
	return f.deployVars(ctx, nil, ops...)
}

// deployVars is deploy with bosh-cli variables (-v, -l) of its own.
func (f *fleet) deployVars(ctx context.Context, vars []string, ops ...string) (boshlab.Result, error) {
	args := append(append([]string{"-d", f.dep, "deploy", filepath.Join(f.repo, "src/tests/fleet/manifests/deployment.yml")}, f.vars...), vars...)
	for _, o := range append(f.shape.deployOps(), ops...) {
		args = append(args, "-o", filepath.Join(f.repo, o))
	}
	return f.bosh.Run(ctx, args...)
}

// deleteLeftoverVMs deletes every VM still in state (the CPI's state_dir),
// through the CPI.
func (f *fleet) deleteLeftoverVMs(cpi, config, state string) {
	vms, _ := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
	for _, vm := range vms {
		req := fmt.Sprintf(`{"method":"delete_vm","arguments":[%q],"context":{}}`, filepath.Base(vm))
		cmd := exec.Command("bash", cpi, config)
		cmd.Stdin = strings.NewReader(req)
		out, err := cmd.Output()
		if err != nil || strings.Contains(string(out), `"error":{`) {
			f.t.Errorf("cleanup: delete_vm %s: %v %s", filepath.Base(vm), err, out)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// instances is `bosh instances` (with --ps: one row per process too).
func (f *fleet) instances(ctx context.Context, extra ...string) ([]map[string]string, error) {
	tables, err := f.bosh.Tables(ctx, append([]string{"-d", f.dep, "instances"}, extra...)...)
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("bosh instances printed no table")
	}
	return tables[0].Rows, nil
}
