package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// fakeCheck returns what the test sets; it counts its runs.
type fakeCheck struct {
	id string
	mu sync.Mutex
	fs []validator.Finding
	// err makes the check unable to run.
	err  error
	runs int
}

// escapeCheck is the id of the fake check whose findings are escapes.
const escapeCheck = "cgroup-integrity"

func (f *fakeCheck) Meta() validator.Meta {
	m := validator.Meta{ID: f.id, Title: f.id, Story: "s", Fix: "f"}
	if f.id == escapeCheck {
		m.Severity = map[validator.Phase]validator.Severity{validator.Drain: validator.Blocking}
	}
	return m
}

func (f *fakeCheck) Run(context.Context) ([]validator.Finding, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	return f.fs, f.err
}

func (f *fakeCheck) set(err error, fs ...validator.Finding) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fs, f.err = fs, err
}

func (f *fakeCheck) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}

func escapeOf(pid int, hierarchy, actual string) checks.Escape {
	return checks.Escape{Container: "c1", PID: pid, Comm: "app", Actual: actual,
		Want: snapshot.Expectation{Hierarchy: &cgroup.Hierarchy{Name: hierarchy}, Key: hierarchy, Rel: "/garden/c1"}}
}

func escapeFinding(pid int, hierarchy, actual string) validator.Finding {
	return escapeOf(pid, hierarchy, actual).Finding()
}

// fakeHealer moves what it is told to, or fails; it records its calls.
type fakeHealer struct {
	calls int
	fail  bool
}

func (h *fakeHealer) Heal(_ *snapshot.Host, es []checks.Escape) []heal.Outcome {
	h.calls++
	out := make([]heal.Outcome, len(es))
	for i, e := range es {
		out[i] = heal.Outcome{Escape: e, Written: true, Moved: !h.fail}
		if h.fail {
			out[i].After = e.Actual
		}
	}
	return out
}

type fixture struct {
	integrity, versions *fakeCheck
	healer              *fakeHealer
	logger              *lagertest.TestLogger
	w                   *Watcher
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	fx := &fixture{integrity: &fakeCheck{id: escapeCheck}, versions: &fakeCheck{id: "runtime-versions"},
		healer: &fakeHealer{}, logger: lagertest.NewTestLogger("watch")}
	cfg := Config{
		Registry: func(*snapshot.Source) []validator.Check {
			return []validator.Check{fx.integrity, fx.versions}
		},
		Read:    func() (*snapshot.Host, error) { return &snapshot.Host{}, nil },
		Healer:  fx.healer,
		OnEvent: []string{escapeCheck},
		Options: validator.Options{Phase: validator.Drain},
		Logger:  fx.logger,
	}
	if mod != nil {
		mod(&cfg)
	}
	fx.w = New(cfg)
	return fx
}

// messages are the log messages so far, without the logger's prefix.
func (fx *fixture) messages() []string {
	var out []string
	for _, l := range fx.logger.Logs() {
		out = append(out, strings.TrimPrefix(l.Message, "watch."))
	}
	return out
}

func count(msgs []string, m string) int {
	n := 0
	for _, x := range msgs {
		if x == m {
			n++
		}
	}
	return n
}

// A finding is logged once when it appears and once when it clears, however
// many scans see it meanwhile, and a measurement changing (where the
// process is now) does not make it a new finding.
func TestFindingLoggedOnceWhenItAppearsAndWhenItClears(t *testing.T) {
	fx := newFixture(t, nil)
	ctx := context.Background()
	fx.w.scan(ctx, TriggerStart, true)
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/"))
	fx.w.scan(ctx, "job", false)
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/system.slice"))
	fx.w.scan(ctx, "job", false)
	fx.w.scan(ctx, TriggerPeriod, true)
	if got := testutil.ToFloat64(fx.w.m.Escaped); got != 1 {
		t.Errorf("cellguard_escaped_processes = %v", got)
	}
	if got := testutil.ToFloat64(fx.w.m.Checks.Status.WithLabelValues(escapeCheck, "watch")); got != 2 {
		t.Errorf("cellguard_check_status = %v, want 2 (fail)", got)
	}
	fx.integrity.set(nil)
	fx.w.scan(ctx, "job", false)
	fx.w.scan(ctx, "job", false)
	msgs := fx.messages()
	if count(msgs, "finding") != 1 || count(msgs, "finding-cleared") != 1 {
		t.Fatalf("log: %v", msgs)
	}
	if got := testutil.ToFloat64(fx.w.m.Escaped); got != 0 {
		t.Errorf("after the clear cellguard_escaped_processes = %v", got)
	}
	if got := testutil.ToFloat64(fx.w.m.Scans.WithLabelValues("job")); got != 4 {
		t.Errorf("cellguard_scans_total{trigger=job} = %v", got)
	}
}

// Event scans run only the event checks; a periodic check's finding stays
// open (not cleared) while only event scans run.
func TestEventScansRunOnlyEventChecks(t *testing.T) {
	fx := newFixture(t, nil)
	ctx := context.Background()
	fx.versions.set(nil, validator.Finding{Subject: "/usr/sbin/runc", Status: validator.Warn, Detail: "CVE"})
	fx.w.scan(ctx, TriggerStart, true)
	for i := 0; i < 3; i++ {
		fx.w.scan(ctx, "job", false)
	}
	if fx.versions.count() != 1 || fx.integrity.count() != 4 {
		t.Fatalf("runs: versions %d, integrity %d", fx.versions.count(), fx.integrity.count())
	}
	if msgs := fx.messages(); count(msgs, "finding") != 1 || count(msgs, "finding-cleared") != 0 {
		t.Fatalf("log: %v", msgs)
	}
}

// A check that cannot run (an unreadable /proc) is logged once when it
// starts failing and once when it runs again, and shows as status 3.
func TestCheckErrorLoggedOnce(t *testing.T) {
	fx := newFixture(t, nil)
	ctx := context.Background()
	fx.integrity.set(errors.New("list /proc: permission denied"))
	fx.w.scan(ctx, TriggerStart, true)
	fx.w.scan(ctx, "job", false)
	if got := testutil.ToFloat64(fx.w.m.Checks.Status.WithLabelValues(escapeCheck, "watch")); got != 3 {
		t.Errorf("cellguard_check_status = %v, want 3", got)
	}
	fx.integrity.set(nil)
	fx.w.scan(ctx, "job", false)
	msgs := fx.messages()
	if count(msgs, "check-could-not-run") != 1 || count(msgs, "check-runs-again") != 1 {
		t.Fatalf("log: %v", msgs)
	}
}

// Heals are logged and counted per process (one process moved back in two
// hierarchies is one heal), and the budget stops healing until it refills.
func TestHealCountedAndRateLimited(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.Heal, c.HealPerMinute = true, 2 })
	ctx := context.Background()
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/"), escapeFinding(101, "blkio", "/"), escapeFinding(102, "cpu", "/"))
	fx.w.scan(ctx, "job", false)
	if fx.healer.calls != 1 {
		t.Fatal("the first scan did not heal")
	}
	if got := testutil.ToFloat64(fx.w.m.Healed); got != 2 {
		t.Errorf("cellguard_healed_processes_total = %v, want 2", got)
	}
	if got := testutil.ToFloat64(fx.w.m.Escaped); got != 0 {
		t.Errorf("cellguard_escaped_processes = %v after every heal held", got)
	}
	if n := count(fx.messages(), "healed"); n != 3 {
		t.Errorf("%d healed lines, want one per move", n)
	}
	if n := count(fx.messages(), "finding"); n != 0 {
		t.Errorf("%d finding lines for escapes healed in the scan that saw them", n)
	}
	// The budget (2 a minute) is spent: the next escape is reported, not healed.
	fx.integrity.set(nil, escapeFinding(103, "cpu", "/"))
	fx.w.scan(ctx, "job", false)
	if fx.healer.calls != 1 {
		t.Fatal("healed past the budget")
	}
	if got := testutil.ToFloat64(fx.w.m.HealRateLimited); got != 1 {
		t.Errorf("cellguard_heal_rate_limited_total = %v", got)
	}
	fx.w.budget = heal.NewBudget(2, nil)
	fx.w.scan(ctx, "job", false)
	if fx.healer.calls != 2 {
		t.Fatal("did not heal after the budget refilled")
	}
	// The same process healed again in a later scan is a heal again, and
	// the log says which scan each move back was in.
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/"))
	fx.w.budget = heal.NewBudget(2, nil)
	fx.w.scan(ctx, "settle", false)
	if got := testutil.ToFloat64(fx.w.m.Healed); got != 4 {
		t.Errorf("cellguard_healed_processes_total = %v after later scans healed 103 and 101 again, want 4", got)
	}
	var scans []any
	for _, l := range fx.logger.Logs() {
		if strings.HasSuffix(l.Message, ".healed") {
			scans = append(scans, l.Data["scan"])
		}
	}
	if fmt.Sprint(scans) != "[1 1 1 3 4]" {
		t.Errorf("healed lines' scans %v, want [1 1 1 3 4]", scans)
	}
}

// A heal that did not hold is still an escape: counted as escaped and as a
// failed heal, logged as a finding, and it takes from the budget.
func TestHealThatDidNotHoldIsStillEscaped(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.Heal = true })
	fx.healer.fail = true
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/"), escapeFinding(101, "blkio", "/"))
	fx.w.scan(context.Background(), "job", false)
	if got := testutil.ToFloat64(fx.w.m.Escaped); got != 1 {
		t.Errorf("cellguard_escaped_processes = %v, want 1", got)
	}
	if got := testutil.ToFloat64(fx.w.m.HealFailed); got != 2 {
		t.Errorf("cellguard_heal_failures_total = %v, want 2 (one per hierarchy)", got)
	}
	if got := testutil.ToFloat64(fx.w.m.Healed); got != 0 {
		t.Errorf("cellguard_healed_processes_total = %v", got)
	}
	if msgs := fx.messages(); count(msgs, "finding") != 2 || count(msgs, "healed") != 0 {
		t.Fatalf("log: %v", msgs)
	}
}

// fakeSource hands out one events channel per Connect.
type fakeSource struct {
	conns chan chan systemd.Event
	fail  chan error
}

func (s *fakeSource) Connect(ctx context.Context) (<-chan systemd.Event, string, error) {
	select {
	case err := <-s.fail:
		return nil, "", err
	default:
	}
	select {
	case c := <-s.conns:
		return c, "fake", nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// Events coalesce into one event scan and one settle scan; a lost
// connection is logged, retried with backoff, and a reconnect scans.
func TestRunCoalescesEventsAndReconnects(t *testing.T) {
	old := RetryMin
	RetryMin = 10 * time.Millisecond
	defer func() { RetryMin = old }()
	src := &fakeSource{conns: make(chan chan systemd.Event, 2), fail: make(chan error, 1)}
	fx := newFixture(t, func(c *Config) { c.Systemd = src; c.Period = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	first := make(chan systemd.Event, 10)
	src.fail <- errors.New("dial: no such socket")
	src.conns <- first
	go func() { fx.w.Run(ctx); close(done) }()
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.SystemdConnected) == 1 })
	for i := 0; i < 5; i++ {
		first <- systemd.Event{Kind: systemd.JobFinished}
	}
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.Scans.WithLabelValues("job")) >= 1 })
	time.Sleep(100 * time.Millisecond)
	if got := testutil.ToFloat64(fx.w.m.Scans.WithLabelValues("job")); got != 1 {
		t.Errorf("5 events gave %v scans, want 1", got)
	}
	// and one settle scan after them
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.Scans.WithLabelValues(TriggerSettle)) == 1 })
	time.Sleep(2 * settleDelay)
	if got := testutil.ToFloat64(fx.w.m.Scans.WithLabelValues(TriggerSettle)); got != 1 {
		t.Errorf("%v settle scans after one burst, want 1", got)
	}
	second := make(chan systemd.Event, 10)
	src.conns <- second
	close(first) // the connection is lost
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.Scans.WithLabelValues(TriggerReconnect)) == 1 })
	cancel()
	<-done
	msgs := fx.messages()
	for _, m := range []string{"systemd-connect-failed", "systemd-connected", "systemd-connection-lost", "systemd-reconnected"} {
		if count(msgs, m) != 1 {
			t.Errorf("%q logged %d times: %v", m, count(msgs, m), msgs)
		}
	}
	if got := testutil.ToFloat64(fx.w.m.SystemdReconnects); got != 1 {
		t.Errorf("cellguard_systemd_reconnects_total = %v", got)
	}
}

// A port in use is logged and shown as listener down, and watch keeps
// scanning; once the port is free, /metrics is served.
func TestPortInUseIsRetried(t *testing.T) {
	old := RetryMin
	RetryMin = 20 * time.Millisecond
	defer func() { RetryMin = old }()
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := blocker.Addr().String()
	fx := newFixture(t, func(c *Config) { c.Listen = addr; c.Period = 50 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fx.w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return count(fx.messages(), "metrics-listen-failed") >= 1 })
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.Scans.WithLabelValues(TriggerPeriod)) >= 2 })
	if got := testutil.ToFloat64(fx.w.m.ListenerUp); got != 0 {
		t.Errorf("listener_up = %v while the port is taken", got)
	}
	blocker.Close()
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.ListenerUp) == 1 })
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "cellguard_scans_total{trigger=\"period\"}") || !strings.Contains(string(b), "process_resident_memory_bytes") {
		t.Fatalf("/metrics:\n%s", b)
	}
}

// The textfile carries cellguard's families only and is rewritten when a
// finding appears; a missing directory is counted and logged once.
func TestTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "cellguard.prom")
	fx := newFixture(t, func(c *Config) { c.Textfile = path })
	ctx := context.Background()
	fx.w.scan(ctx, TriggerStart, true)
	fx.w.scan(ctx, "job", false)
	if got := testutil.ToFloat64(fx.w.m.TextfileWriteFails); got != 2 {
		t.Errorf("textfile failures = %v", got)
	}
	if n := count(fx.messages(), "textfile-write-failed"); n != 1 {
		t.Errorf("failure logged %d times", n)
	}
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/"))
	fx.w.scan(ctx, "job", false)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "cellguard_escaped_processes 1\n") || strings.Contains(string(b), "process_") {
		t.Fatalf("textfile:\n%s", b)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
