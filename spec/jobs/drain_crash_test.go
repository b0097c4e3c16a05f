package jobs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cloudfoundry/cellguard/spec/render"
)

// crashBin is the real binary built with the crash hooks
// (-tags cellguard_crashtest: safefile.Crash), built once when a test asks,
// beside cellguardBin (TestMain removes that directory).
var crashBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(cellguardBin), "cellguard-crashtest")
	build := exec.Command("go", "build", "-tags", "cellguard_crashtest", "-o", bin, "./src/cmd/cellguard")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", &buildError{err, string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "build cellguard with crash hooks: " + e.err.Error() + "\n" + e.out
}

// bin/drain is drain's one crash boundary (docs/lifecycle.md): the real
// cellguard, crashing in each way no Go code of its own can catch, before
// its verdict, ends in the could-not-run outcome all the same: 0 to the
// agent, the textfile rewritten to say could_not_run (the crashed drain
// wrote none), and drain.log saying why. cellguard drain runs on a fixture
// root (an empty /proc: the checks judge nothing) so only the crash
// decides.
func TestDrainWrapperOnACrashingCellguard(t *testing.T) {
	crash, err := crashBin()
	if err != nil {
		t.Fatal(err)
	}
	// Every check ignored: the fixture's unreadable host blocks nothing.
	r := mustRender(t, `{cellguard: {drain: {budget: 1s}, validator: {ignore: [all], prometheus_textfile: /var/vcap/data/node_exporter/cellguard.prom}}}`)
	for _, how := range []string{"panic", "fatal", "kill"} {
		t.Run(how, func(t *testing.T) {
			fixture := t.TempDir()
			if err := os.MkdirAll(filepath.Join(fixture, "proc"), 0o755); err != nil {
				t.Fatal(err)
			}
			// cellguard as bin/drain runs it, but on the fixture root.
			wrapper := filepath.Join(t.TempDir(), "cellguard")
			text := "#!/bin/sh\nif [ \"$1\" = drain ] && [ \"$2\" = --config ]; then shift; exec " + crash + " drain --root " + fixture + " \"$@\"; fi\nexec " + crash + " \"$@\"\n"
			if err := render.WriteFile(wrapper, []byte(text), 0o755); err != nil {
				t.Fatal(err)
			}
			v := install(t, r, wrapper)
			prom := filepath.Join(v.root, "vcap/data/node_exporter/cellguard.prom")
			if err := os.MkdirAll(filepath.Dir(prom), 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"job_changed", "hash_changed", "cellguard"}
			if out, code := v.runWith(t, "bin/drain", args); code != 0 || out != "0\n" {
				t.Fatalf("drain without a crash: exit %d stdout %q\nlog:\n%s", code, out, v.drainLog(t))
			}
			if b, err := os.ReadFile(prom); err != nil || !strings.Contains(string(b), `cellguard_drain_could_not_run{event="update"} 0`) {
				t.Fatalf("the first drain's textfile (%v):\n%s", err, b)
			}
			out, code := v.runWith(t, "bin/drain", args, "CELLGUARD_TEST_CRASH_AFTER=drain:"+how)
			log := v.drainLog(t)
			if code != 0 || out != "0\n" {
				t.Fatalf("crash (%s): exit %d stdout %q, want 0 and \"0\"\nlog:\n%s", how, code, out, log)
			}
			b, err := os.ReadFile(prom)
			if err != nil || !strings.Contains(string(b), `cellguard_drain_could_not_run{event="update"} 1`) ||
				!strings.Contains(string(b), `cellguard_drain_outcome{event="update",outcome="could_not_run"} 1`) {
				t.Errorf("crash (%s): the textfile does not say could_not_run (%v):\n%s\nlog:\n%s", how, err, b, log)
			}
			if !strings.Contains(log, "NOT BLOCKING: the guard gave no verdict") || !strings.Contains(log, "could-not-run-recorded") {
				t.Errorf("crash (%s): drain.log does not say it:\n%s", how, log)
			}
		})
	}
}
