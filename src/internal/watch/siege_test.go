package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// helperEnv makes the test binary a watch under siege (siegeHelper)
// instead of running tests.
const helperEnv = "CELLGUARD_WATCH_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "siege" {
		os.Exit(siegeHelper())
	}
	os.Exit(m.Run())
}

// helperNoFile is the helper watch's fd limit: small, so that a bounded
// number of loopback connections exhausts it as 1,152 exhausted a cell's.
const helperNoFile = 128

// scanFDs is how many files the helper's check holds open at once, as a
// scan of a cell holds a few.
const scanFDs = 16

// helperSetup adjusts the helper before it starts (knobs_test.go).
var helperSetup = func() {}

// fdCheck opens scanFDs files at once, then reports pid 101 escaped: the
// escape lasts the whole test, so only a scan that could not open its
// files can make it look gone.
type fdCheck struct{ *fakeCheck }

func (c fdCheck) Run(ctx context.Context) ([]validator.Finding, error) {
	var fs []*os.File
	defer func() {
		for _, f := range fs {
			f.Close()
		}
	}()
	for range scanFDs {
		f, err := os.Open("/dev/null")
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return []validator.Finding{escapeFinding(101, "cpu", "/")}, nil
}

// siegeHelper is a watch with a fd limit of helperNoFile serving /metrics
// on a loopback port of its own, logging to stdout until it is killed.
func siegeHelper() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 3
	}
	lim.Cur = helperNoFile
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 3
	}
	helperSetup()
	logger := lager.NewLogger("watch")
	logger.RegisterSink(lager.NewWriterSink(os.Stdout, lager.DEBUG))
	check := fdCheck{&fakeCheck{id: escapeCheck}}
	New(Config{
		Registry: func(*snapshot.Source) []validator.Check { return []validator.Check{check} },
		Read:     func() (*snapshot.Host, error) { return &snapshot.Host{}, nil },
		Options:  validator.Options{Phase: validator.Drain},
		Period:   100 * time.Millisecond,
		Listen:   "127.0.0.1:0",
		Logger:   logger,
	}).Run(context.Background())
	return 0
}

// helperLog is what the helper logged so far.
type helperLog struct {
	mu    sync.Mutex
	lines []lager.LogFormat
}

func (l *helperLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var f lager.LogFormat
		if json.Unmarshal(sc.Bytes(), &f) == nil {
			f.Message = strings.TrimPrefix(f.Message, "watch.")
			l.mu.Lock()
			l.lines = append(l.lines, f)
			l.mu.Unlock()
		}
	}
}

func (l *helperLog) count(msg string) int { return len(l.find(msg)) }

func (l *helperLog) find(msg string) []lager.LogFormat {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []lager.LogFormat
	for _, f := range l.lines {
		if f.Message == msg {
			out = append(out, f)
		}
	}
	return out
}

func (l *helperLog) address() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.lines {
		if f.Message == "metrics-listening" {
			a, _ := f.Data["address"].(string)
			return a
		}
	}
	return ""
}

// fdsOf counts pid's open files and, of them, sockets.
func fdsOf(t *testing.T, pid int) (all, sockets int) {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			sockets++
		}
	}
	return len(ents), sockets
}

// Issue 38, hole 4, on real sockets: a local user opens more idle
// keep-alive connections to watch's /metrics than watch has fds (each sends
// one request and never reads nor closes). watch accepts at most a quarter
// of its fd limit, drops idle connections, keeps scanning, never clears the
// escape it keeps seeing, and /metrics answers a scraper during the siege.
func TestIdleConnectionsCannotStarveWatch(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=siege")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	log := &helperLog{}
	go log.read(out)
	waitFor(t, func() bool { return log.address() != "" && log.count("finding") == 1 })
	addr := log.address()

	// The siege: bounded, on loopback, to the helper's own port.
	const siege = helperNoFile * 3 / 2
	for range siege {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: cellguard\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	scans := log.count("scan")
	time.Sleep(2 * time.Second) // 20 periods
	all, sockets := fdsOf(t, cmd.Process.Pid)
	t.Logf("under a siege of %d connections the helper holds %d fds, %d sockets (fd limit %d)", siege, all, sockets, helperNoFile)
	if want := helperNoFile/4 + 1; sockets > want {
		t.Errorf("the helper holds %d sockets, want at most %d (a quarter of its fd limit, and the listener)", sockets, want)
	}
	if all > helperNoFile-scanFDs {
		t.Errorf("the helper holds %d of its %d fds: no room left for a scan's %d", all, helperNoFile, scanFDs)
	}
	if n := log.count("scan") - scans; n < 3 {
		t.Errorf("%d scans in 2s of siege at a 100ms period", n)
	}
	for _, m := range []string{"check-could-not-run", "finding-cleared"} {
		for _, f := range log.find(m) {
			t.Errorf("%s during the siege (the escape never ended): %v", m, f.Data)
		}
	}
	c := &http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("/metrics during the siege: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "cellguard_escaped_processes 1\n") {
		t.Errorf("/metrics during the siege:\n%s", grepLines(string(b), "escaped"))
	}
}
