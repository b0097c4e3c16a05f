package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/leakyns"
)

// envCellguardMain makes this test binary run as cellguard (cellguardMain):
// the real command, under strace, without a separate build.
const envCellguardMain = "CELLGUARD_TEST_MAIN"

// cellguardMain runs cellguard with the process's arguments and exits,
// when this process was started to (envCellguardMain); it returns
// otherwise.
func cellguardMain() {
	if os.Getenv(envCellguardMain) != "1" {
		return
	}
	os.Exit(Main(context.Background(), DefaultEnv(), os.Args[1:]))
}

// cellguardCommand runs cellguard args under strace, tracing into file
// every call by which a validator could touch the host or another process.
// CELLGUARD_BIN names another cellguard binary to trace (an older build,
// to show what this test catches).
func cellguardCommand(t *testing.T, file string, args ...string) *exec.Cmd {
	bin, env := os.Args[0], append(os.Environ(), envCellguardMain+"=1")
	if b := os.Getenv("CELLGUARD_BIN"); b != "" {
		bin = b
	}
	cmd := exec.Command("strace", append([]string{"-f", "-qq", "-s", "256", "-o", file,
		"-e", "trace=bpf,pidfd_getfd,setns,unshare,open,openat,openat2,creat,truncate,ftruncate,mkdir,mkdirat,unlink,unlinkat,rename,renameat,renameat2",
		"-e", "signal=none", bin}, args...)...)
	cmd.Env = env
	return cmd
}

// hostTouches are the traced calls that change the host or reach into
// another process: a file opened for writing (cgroup.procs, tasks, a
// sysctl), made, removed or renamed; a socket duplicated from another
// process; a namespace entered; any bpf call (a BPF program, map or BTF
// object put in the kernel: the stat iterator cg_procs, leaked-netns's
// cg_task_file and cg_task, and cilium/ebpf's feature probes).
var hostTouches = regexp.MustCompile(`pidfd_getfd\(|setns\(|unshare\(|bpf\(|` +
	`open(at2?)?\(.*O_(WRONLY|RDWR|CREAT|TRUNC)|creat\(|truncate\(|mkdir(at)?\(|unlink(at)?\(|rename(at2?)?\(`)

// bpfCall is a traced bpf call (successful or not: a program the verifier
// refused was still handed to the kernel).
var bpfCall = regexp.MustCompile(`^\d+ +bpf\(`)

// touches returns the traced calls in file that touch the host.
func touches(t *testing.T, file string) (bad []string, calls int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		calls++
		if line := sc.Text(); hostTouches.MatchString(line) && !strings.Contains(line, "= -1 ") {
			bad = append(bad, line)
		}
	}
	return bad, calls
}

// A validation with leaked-netns's probe (validator.netns_probe) and the
// stat iterator (validator.bpf_stat_iterator) off, as a config without
// either key has them, writes nothing to the host and reaches into no
// other process, on the live root with a namespace held only by a socket,
// which the probe would ask: no file opened for writing (no cgroup.procs,
// tasks or sysctl), no pidfd_getfd, no setns, no bpf call at all.
// leaked-netns says what it did not judge. With either switch on, the same
// run does load its BPF program: the trace sees what it looks for.
func TestValidateWritesNothingWithProbeOff(t *testing.T) {
	testkit.RequireRoot(t, "strace of validate on the live root")
	testkit.RequireFile(t, "/usr/bin/strace", "apt-get install strace (ci/scripts/install-deps.sh)")
	leakyns.Start(t, leakyns.Socket, 0)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cfg string
		// prog is the BPF program the run must load; "" means none may.
		prog string
	}{
		{"defaults", `{}`, ""},
		{"switches off", `{"validator":{"netns_probe":false,"bpf_stat_iterator":false}}`, ""},
		{"stat iterator on", `{"validator":{"bpf_stat_iterator":true}}`, "cg_procs"},
		{"probe on", `{"validator":{"netns_probe":true}}`, "cg_task_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prog != "" {
				testkit.RequireFile(t, "/sys/kernel/btf/vmlinux", "a kernel built with BTF (CONFIG_DEBUG_INFO_BTF), for the BPF iterators")
			}
			cfg := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			if err := os.WriteFile(cfg, []byte(tc.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			trace := cfg + ".strace"
			cmd := cellguardCommand(t, trace, "validate", "--phase", "pre-start", "--config", cfg, "--format", "json")
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
				t.Fatalf("validate: %v\n%s", err, out)
			}
			bad, calls := touches(t, trace)
			t.Logf("%d traced calls, %d touching the host", calls, len(bad))
			if tc.prog == "" {
				for _, l := range bad {
					t.Errorf("switches off, yet: %s", l)
				}
				notJudged(t, out)
				return
			}
			if !containsLine(bad, `prog_name="`+tc.prog+`"`) {
				t.Errorf("%s: no %s loaded; the trace misses what the switch does (%d calls)", tc.name, tc.prog, calls)
			}
			if tc.prog == "cg_procs" {
				// The stat iterator reads; it writes no file and enters
				// no other process.
				for _, l := range bad {
					if !bpfCall.MatchString(l) {
						t.Errorf("stat iterator on: %s", l)
					}
				}
			}
		})
	}
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// notJudged fails unless leaked-netns's result in the JSON report says the
// sockets were not judged because the probe is off.
func notJudged(t *testing.T, out []byte) {
	t.Helper()
	var rep validator.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, r := range rep.Results {
		if r.ID != "leaked-netns" {
			continue
		}
		for _, f := range r.Findings {
			if f.Data["probe"] == "off" && strings.Contains(f.Detail, "not judged: probe off (cellguard.validator.netns_probe)") {
				return
			}
		}
		t.Fatalf("leaked-netns does not say the probe was off: %+v", r)
	}
	t.Fatal("no leaked-netns result")
}
