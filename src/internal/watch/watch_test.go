package watch

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
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

// /metrics over mutual TLS: a scraper with a certificate from the CA gets
// the metrics; one without a certificate is refused.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, nil, nil, "metric_scraper_ca", true)
	srv, srvKey := newCert(t, ca, caKey, "cellguard_metrics", false)
	cli, cliKey := newCert(t, ca, caKey, "prom_scraper", false)
	files := TLSFiles{Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem"), CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, files.Cert, "CERTIFICATE", srv.Raw)
	writePEM(t, files.Key, "PRIVATE KEY", mustPKCS8(t, srvKey))
	writePEM(t, files.CA, "CERTIFICATE", ca.Raw)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fx := newFixture(t, func(c *Config) { c.Listen = addr; c.TLS = &files })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fx.w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.ListenerUp) == 1 })
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	get := func(certs []tls.Certificate) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "cellguard_metrics", Certificates: certs}}}
		resp, err := c.Get("https://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "cellguard_scans_total") {
			return errors.New("no metrics in the answer")
		}
		return nil
	}
	if err := get([]tls.Certificate{{Certificate: [][]byte{cli.Raw}, PrivateKey: cliKey}}); err != nil {
		t.Fatalf("scraper with a CA-signed certificate: %v", err)
	}
	if err := get(nil); err == nil {
		t.Fatal("a client without a certificate got the metrics")
	}
}

func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{cn}, IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func mustPKCS8(t *testing.T, k *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
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
