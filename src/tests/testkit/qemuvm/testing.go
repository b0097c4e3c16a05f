package qemuvm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/interrupt"
)

// ImageScript is src/tests/qemu/image.sh's path in this checkout.
func ImageScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "tests", "qemu", "image.sh")
}

// RequireImage is testkit.Unavailable unless QEMU is installed and the
// noble image of this checkout is built (ci/scripts/install-deps.sh builds
// it: a test never spends its timeout on a debootstrap). It returns the image.
func RequireImage(t testing.TB) Image {
	t.Helper()
	testkit.RequireRoot(t, "the VM image is root's (built by install-deps) and Ubuntu's vmlinuz is 0600")
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkit.Unavailable(t, "qemu-system-x86_64 not installed; run ci/scripts/install-deps.sh (make deps)")
	}
	out, err := exec.Command("bash", ImageScript(), "source").Output()
	if err != nil {
		t.Fatalf("image.sh source: %v", err)
	}
	src := keyValues(out)
	if src["IMAGE_CACHED"] != "true" {
		testkit.Unavailable(t, fmt.Sprintf("the noble VM image %s is not built; run ci/scripts/install-deps.sh "+
			"(make deps) as root, or src/tests/qemu/image.sh (needs %s)", src["IMAGE_DIR"], src["MIRROR"]))
	}
	img, err := LoadImage(src["IMAGE_DIR"])
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Start is RequireImage, then Boot with the test's log as Options.Log; the
// VM is closed at the end of the test (also when it fails).
func Start(t testing.TB, opts Options) *VM {
	t.Helper()
	img := RequireImage(t)
	if opts.Log == nil {
		opts.Log = logWriter{t}
	}
	HoldHostFor(t) // its release runs after Close: registered first
	v, err := Boot(context.Background(), img, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if oops := v.ConsoleOops(120); oops != "" {
				t.Logf("qemuvm: the guest kernel's first oops or panic report on the console:\n%s", oops)
			}
			t.Logf("qemuvm: console at the end:\n%s", v.ConsoleTail(30))
		}
		if err := v.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("qemuvm: %s VM booted (%s) in %v (qemu pid %d): %s", strings.ToUpper(v.Accel), v.State, v.BootTime.Round(time.Millisecond), v.PID, v.Hello)
	return v
}

// HoldHostFor is HoldHost for a test that runs QEMU guests, itself or
// through the QEMU CPI: SIGINT or SIGTERM ends its wait, and the test's end
// releases it after every cleanup registered later (its VMs').
func HoldHostFor(t testing.TB) {
	t.Helper()
	release, err := HoldHost(interrupt.Context(), t.Name(), func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// Run runs args in the guest, bounded by timeout, fails the test unless
// they exit 0, and returns their stdout.
func (v *VM) Run(t testing.TB, timeout time.Duration, args ...string) string {
	t.Helper()
	res, err := v.Output(timeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 0 {
		t.Fatalf("in the VM: %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Exit, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

// Output runs args in the guest bounded by timeout and returns the result,
// for commands that may exit non-zero.
func (v *VM) Output(timeout time.Duration, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return v.Exec(ctx, args...)
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// LoadAverage is /proc/loadavg's first three fields, for test logs.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
