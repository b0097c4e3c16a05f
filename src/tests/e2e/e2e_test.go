package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from this run")

// bin is cellguard built from this work tree, once, by TestMain: the test
// runs what an operator runs, flags and exit codes included.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "cellguard-e2e.")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "cellguard")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", bin, "./src/cmd/cellguard")
	cmd.Dir, cmd.Env = filepath.Join(filepath.Dir(file), "..", "..", ".."), append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build cellguard: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cell is the fixture host: a hybrid cell with two runc containers, seed
// 000 on the first (pid 101's cpu and blkio moved into garden.service) and
// a ghost of the second (its init, pid 200, gone; 201 left).
func cell(t *testing.T) *fakehost.Host {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 3, 500)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c2", Cgroup: "/garden/c2"}, 200, 2, 600)
	h.Move(101, "cpu,cpuacct", "/system.slice/garden.service")
	h.Move(101, "blkio", "/system.slice/garden.service")
	h.Kill(200)
	return h
}

// cellguard runs the binary with a fixed environment: nothing of the
// caller's (PATH, CI, a config path) reaches the output.
func cellguard(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	return cmd
}

func writeConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cellguard.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValidateGolden: `cellguard validate --phase pre-start --format json`
// on the fixture cell, its report on stdout and its textfile, against
// testdata/validate.json and testdata/validate.prom.
func TestValidateGolden(t *testing.T) {
	h := cell(t)
	dir := t.TempDir()
	prom := filepath.Join(dir, "validate.prom")
	cmd := cellguard("validate", "--phase", "pre-start", "--format", "json", "--root", h.Root, "--config", writeConfig(t),
		"--prometheus-textfile", prom, "--log-file", filepath.Join(dir, "validate.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("validate: %v (want exit 1: cgroup-integrity blocks)\n%s", err, stderr.String())
	}
	if !json.Valid(out) {
		t.Fatalf("stdout is not JSON:\n%s", out)
	}
	testkit.Golden(t, "validate.json", normalizeJSON(out, h.Root), *update)
	text, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "validate.prom", normalizeMetrics(text, h.Root), *update)
}

// unifiedCell is a cgroup v2 host laid out as Garden lays out noble's: a
// container at /garden/c1 (both cgroups domains) whose state records
// runc's device rules, which on v2 an eBPF program enforces and no
// devices.list shows. systemd is not init under a fixture root.
func unifiedCell(t *testing.T) *fakehost.Host {
	h := fakehost.New(t, cgroup.Unified)
	rules := json.RawMessage(`[{"type":97,"major":-1,"minor":-1,"permissions":"rwm","allow":false},` +
		`{"type":99,"major":1,"minor":3,"permissions":"rwm","allow":true}]`)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1",
		Resources: map[string]any{"devices": rules}}, 100, 2, 500)
	for _, cg := range []string{"garden", "garden/c1"} {
		h.Write("sys/fs/cgroup/"+cg+"/cgroup.type", "domain\n")
	}
	return h
}

// TestValidateUnifiedGolden: the human report of `cellguard validate` on a
// cgroup v2 host, against testdata/validate-unified.txt: the check that
// judges v1 devices lists is a skip that says it does not apply on v2, with
// no finding and no "could not read".
func TestValidateUnifiedGolden(t *testing.T) {
	h := unifiedCell(t)
	cmd := cellguard("validate", "--phase", "pre-start", "--root", h.Root, "--config", writeConfig(t),
		"--log-file", filepath.Join(t.TempDir(), "validate.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("validate: %v (want exit 0: nothing to find)\n%s\n%s", err, out, stderr.String())
	}
	if want := "[skip] devices-cgroup: not applicable on cgroup v2 (unified)"; !strings.Contains(string(out), want) {
		t.Errorf("the report does not say %q:\n%s", want, out)
	}
	testkit.Golden(t, "validate-unified.txt", []byte(strings.ReplaceAll(string(out), h.Root, "<root>")), *update)
}

// TestWatchGolden: `cellguard watch` on the fixture cell, its /metrics
// (served on a port the kernel picks, read once the first scan is in) and
// its textfile, against testdata/watch-metrics.txt and watch.prom. Under a
// fixture root systemd is not init, so watch scans periodically only (1h:
// the start's scan is the one read).
func TestWatchGolden(t *testing.T) {
	h := cell(t)
	dir := t.TempDir()
	textfile, logFile := filepath.Join(dir, "watch.prom"), filepath.Join(dir, "watch.log")
	cmd := cellguard("watch", "--root", h.Root, "--config", writeConfig(t), "--listen", "127.0.0.1:0",
		"--textfile", textfile, "--log-file", logFile, "--period", "1h")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill() // the watch this test started, by its pid
			<-done
		}
	})
	addr := waitFor(t, "watch's metrics-listening line in "+logFile, func() (string, bool) { return listening(logFile) })
	metrics := waitFor(t, "/metrics after the first scan", func() (string, bool) {
		body, err := get("http://" + addr + "/metrics")
		return body, err == nil && strings.Contains(body, `cellguard_scans_total{trigger="start"} 1`+"\n")
	})
	text := waitFor(t, "the textfile after the first scan", func() (string, bool) {
		b, err := os.ReadFile(textfile)
		return string(b), err == nil && strings.Contains(string(b), `cellguard_scans_total{trigger="start"} 1`+"\n")
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Fatalf("watch after SIGTERM: %v (want exit 0)\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not stop within 30s of SIGTERM")
	}
	testkit.Golden(t, "watch-metrics.txt", normalizeMetrics([]byte(metrics), h.Root), *update)
	testkit.Golden(t, "watch.prom", normalizeMetrics([]byte(text), h.Root), *update)
}

// waitFor polls f for up to a minute (a loaded machine's go test runs
// many binaries at once).
func waitFor(t *testing.T, what string, f func() (string, bool)) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s, ok := f()
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute; last: %s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listening is the address in watch's metrics-listening log line.
func listening(logFile string) (string, bool) {
	f, err := os.Open(logFile)
	if err != nil {
		return err.Error(), false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Message string
			Data    struct{ Address string }
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "cellguard.watch.metrics-listening" {
			return l.Data.Address, true
		}
	}
	return "", false
}

func get(url string) (string, error) {
	r, err := http.Get(url)
	if err != nil {
		return err.Error(), err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return string(b), err
}

// What varies from run to run, each replaced by a placeholder that names
// it; nothing else is touched, so a golden diff is a change of behaviour.
var (
	// The report's time and each check's duration.
	jsonGeneratedAt = regexp.MustCompile(`("generated_at": )"[^"]*"`)
	jsonDuration    = regexp.MustCompile(`("duration_seconds": )[0-9.e+-]+`)
	// Metric lines whose value is a time, a duration or this process's own
	// (client_golang's process collector): name{labels} value.
	metricVaries = []struct {
		re          *regexp.Regexp
		placeholder string
	}{
		{regexp.MustCompile(`^(cellguard_\w*timestamp_seconds(\{[^}]*\})?) \S+$`), "<timestamp>"},
		{regexp.MustCompile(`^(cellguard_check_duration_seconds\{[^}]*\}) \S+$`), "<duration>"},
		{regexp.MustCompile(`^(cellguard_scan_duration_seconds_(bucket\{[^}]*\}|sum)) \S+$`), "<duration>"},
		{regexp.MustCompile(`^(cellguard_scan_cpu_seconds_total) \S+$`), "<duration>"},
		{regexp.MustCompile(`^(process_\w+) \S+$`), "<this process>"},
	}
)

// normalizeJSON replaces the fixture's root with <root>, the report's time
// and the checks' durations.
func normalizeJSON(b []byte, root string) []byte {
	s := strings.ReplaceAll(string(b), root, "<root>")
	s = jsonGeneratedAt.ReplaceAllString(s, `$1"<time>"`)
	s = jsonDuration.ReplaceAllString(s, `$1"<duration>"`)
	return []byte(s)
}

// normalizeMetrics replaces the fixture's root and the values of the lines
// metricVaries names, line by line, in the order written.
func normalizeMetrics(b []byte, root string) []byte {
	lines := strings.SplitAfter(strings.ReplaceAll(string(b), root, "<root>"), "\n")
	for i, l := range lines {
		for _, v := range metricVaries {
			if m := v.re.FindStringSubmatch(strings.TrimSuffix(l, "\n")); m != nil {
				lines[i] = m[1] + " " + v.placeholder + "\n"
				break
			}
		}
	}
	return []byte(strings.Join(lines, ""))
}
