package sdbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
)

// SkipEnv, when "1", makes Main boot nothing and Require skip: pure tests
// only (testkit.SkipEnv).
const SkipEnv = testkit.SkipEnv

// RequireRoot is testkit.RequireRoot for a test that boots or uses a box.
func RequireRoot(t testing.TB) {
	t.Helper()
	testkit.RequireRoot(t, "this integration test uses systemd-nspawn, cgroups and mounts")
}

// RequireSuite is testkit.Unavailable for a test that boots suite's box
// when that rootfs is not cached and its archive does not answer: skipped
// loudly on a developer's machine, FAILED in CI, naming the archive. The
// xenial box is the only test of the README's headline symptom
// (TestSeed000SymptomXenial), so CI must not pass without it (issue 23).
// Which rootfs and which archive is sdbox.sh's to say (`sdbox.sh source`).
func RequireSuite(t testing.TB, suite string) {
	t.Helper()
	RequireRoot(t)
	script, err := ScriptPath()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "source")
	cmd.Env = append(os.Environ(), "SDBOX_SUITE="+suite)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sdbox.sh source (suite %s): %v", suite, err)
	}
	src := keyValues(out)
	if src["ROOTFS_CACHED"] == "true" {
		return
	}
	url := src["MIRROR"] + "/dists/" + suite + "/Release"
	client := http.Client{Timeout: 15 * time.Second}
	resp, err := client.Head(url)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		err = fmt.Errorf("HTTP %s", resp.Status)
	}
	testkit.Unavailable(t, fmt.Sprintf("%s's rootfs %s is not built and %s does not answer (%v); "+
		"a machine that reaches it builds the rootfs once (ci/scripts/install-deps.sh)", suite, src["ROOTFS"], url, err))
}

// Run runs args inside the box (see Command), bounded by a minute, fails
// the test when they fail, and returns their combined output.
func (b *Box) Run(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := b.Exec(ctx, args...)
	if err != nil {
		t.Fatalf("in box %s: %v", b.Name, err)
	}
	return string(out)
}

// Output runs args inside the box (see Command), bounded by a minute, and
// returns their combined output and error, for commands expected to fail.
func (b *Box) Output(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := b.Exec(ctx, args...)
	return string(out), err
}

// Require skips a test that needs the package's box when there is none:
// CELLGUARD_SKIP_INTEGRATION=1 (always a skip), or not root (a failure in CI,
// see RequireRoot). With root, a box that failed to boot fails the test.
func Require(t testing.TB, b *Box) {
	t.Helper()
	RequireRoot(t) // skips on CELLGUARD_SKIP_INTEGRATION=1, even in CI: an explicit choice
	if b == nil {
		t.Fatal("no systemd box: sdbox.Main did not boot one (see its output above)")
	}
}

// Main boots one box for a test package, runs the tests and stops the box,
// also on SIGINT/SIGTERM (and, through the box's watcher, when the test
// binary dies in any other way). Use it as
//
//	func TestMain(m *testing.M) { os.Exit(sdbox.Main(m, "units", &box)) }
//
// Nothing is booted when CELLGUARD_SKIP_INTEGRATION=1 or when not root; *box
// stays nil and Require skips the tests that need it.
func Main(m *testing.M, name string, box **Box, opts ...Option) int {
	defer cleanupBuild()
	if os.Getenv(SkipEnv) == "1" || os.Geteuid() != 0 {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b, err := Start(ctx, name, append([]Option{WithLog(os.Stderr)}, opts...)...)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdbox: error: boot systemd box %q: %v\nsdbox: hint: run ci/scripts/install-deps.sh (make deps) as root\n", name, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "sdbox: box %s booted in %v (init pid %d)\n", b.Name, b.BootTime.Round(time.Millisecond), b.InitPID)
	*box = b

	forget, ok := interrupt.Add("box "+b.Name, func() {
		b.Stop()
		cleanupBuild()
	})
	if !ok { // interrupted while booting: the process is exiting
		b.Stop()
		return 2
	}
	defer func() {
		forget()
		if err := b.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "sdbox: error: %v\n", err)
		}
	}()
	return m.Run()
}

var build struct {
	sync.Mutex
	dir  string
	bins map[string]built // by build tags
}

type built struct {
	bin string
	err error
}

// BuildCellguard builds ./src/cmd/cellguard (CGO_ENABLED=0, static, so it
// runs inside the box) once per test process and returns the binary's path.
// Main removes it at the end; without Main, a later test process does.
func BuildCellguard(t testing.TB) string {
	t.Helper()
	return buildOnce(t, "")
}

// BuildCellguardWithCrashHooks is BuildCellguard with testkit.CrashTag:
// its safefile.CrashEnv makes it SIGKILL itself at a chosen step of a
// write. Release builds never have it.
func BuildCellguardWithCrashHooks(t testing.TB) string {
	t.Helper()
	return buildOnce(t, testkit.CrashTag)
}

func buildOnce(t testing.TB, tags string) string {
	t.Helper()
	build.Lock()
	defer build.Unlock()
	b, ok := build.bins[tags]
	if !ok {
		b.bin, b.err = buildCellguard(tags)
		if build.bins == nil {
			build.bins = map[string]built{}
		}
		build.bins[tags] = b
	}
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// binPrefix names the build dirs; the pid lets later runs remove the dirs of
// test processes that ended without Main's cleanup.
const binPrefix = "cellguard-test-bin-"

func buildCellguard(tags string) (string, error) {
	if build.dir == "" {
		removeStaleBuilds()
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", binPrefix, os.Getpid()))
		if err != nil {
			return "", fmt.Errorf("build cellguard: %w", err)
		}
		build.dir = dir
	}
	gobin := GoBinary()
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("build cellguard: %w", err)
	}
	bin := filepath.Join(build.dir, "cellguard")
	args := []string{"build", "-trimpath", "-o", bin}
	if tags != "" {
		bin = filepath.Join(build.dir, "cellguard-"+tags)
		args = []string{"build", "-trimpath", "-tags", tags, "-o", bin}
	}
	cmd := exec.Command(gobin, append(args, "./src/cmd/cellguard")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cellguard: %w\n%s", err, out)
	}
	return bin, nil
}

func removeStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binPrefix+"*-*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), binPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

func cleanupBuild() {
	build.Lock()
	defer build.Unlock()
	if build.dir != "" {
		os.RemoveAll(build.dir)
		build.dir, build.bins = "", nil
	}
}

// InstallCellguard builds cellguard (once per process) and copies it to
// /usr/local/bin/cellguard in the box; it returns that path.
func (b *Box) InstallCellguard(t testing.TB) string {
	t.Helper()
	const dst = "/usr/local/bin/cellguard"
	if err := b.CopyIn(BuildCellguard(t), dst, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// GoBinary is the go command building test binaries: the one on PATH, else
// the toolchain's usual place (runtime.GOROOT is deprecated for this).
func GoBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}
