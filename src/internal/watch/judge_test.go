package watch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// readingCheck judges what its fake says once the scan's read of the host
// succeeded, as every snapshot check does: a failed read is its error.
type readingCheck struct {
	*fakeCheck
	src *snapshot.Source
}

func (c readingCheck) Run(ctx context.Context) ([]validator.Finding, error) {
	if _, err := c.src.Get(); err != nil {
		return nil, err
	}
	return c.fakeCheck.Run(ctx)
}

// exposed is watch's own families as the textfile carries them.
func exposed(t *testing.T, w *Watcher) string {
	t.Helper()
	b, err := metrics.Encode(w.m.Own, true)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 38, hole 4: a scan that could not judge (the host unreadable with
// every fd taken, or the check's own error) never clears an open finding
// nor lowers a gauge. watch logs that the check could not run, holds the
// findings' gauges and shows cellguard_check_could_not_judge 1 until the
// check judges again; the escape that stayed is not a new finding then.
func TestCouldNotJudgeKeepsFindingsAndGauges(t *testing.T) {
	emfile := &snapshot.Host{}
	for _, tc := range []struct {
		name string
		fail func(fx *fixture, readErr *error)
	}{
		{"host read failed", func(_ *fixture, readErr *error) {
			*readErr = errors.New("read /proc: open /proc/4711/stat: too many open files")
		}},
		{"check error", func(fx *fixture, _ *error) {
			fx.integrity.set(errors.New("list containers: open /run/runc: too many open files"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var readErr error
			fx := newFixture(t, func(c *Config) {
				c.Read = func() (*snapshot.Host, error) {
					mu.Lock()
					defer mu.Unlock()
					return emfile, readErr
				}
			})
			fx.w.cfg.Registry = func(src *snapshot.Source) []validator.Check {
				return []validator.Check{readingCheck{fx.integrity, src}, fx.versions}
			}
			ctx := context.Background()
			fx.integrity.set(nil, escapeFinding(101, "cpu", "/"))
			fx.w.scan(ctx, TriggerStart, true)

			mu.Lock()
			tc.fail(fx, &readErr)
			mu.Unlock()
			fx.w.scan(ctx, TriggerPeriod, true)
			fx.w.scan(ctx, "job", false)
			msgs := fx.messages()
			if n := count(msgs, "finding-cleared"); n != 0 {
				t.Errorf("a scan that could not judge cleared the open finding (%d finding-cleared lines): %v", n, msgs)
			}
			if n := count(msgs, "check-could-not-run"); n != 1 {
				t.Errorf("%d check-could-not-run lines, want 1: %v", n, msgs)
			}
			if got := testutil.ToFloat64(fx.w.m.Escaped); got != 1 {
				t.Errorf("cellguard_escaped_processes = %v while the process stays escaped and the scan could not judge, want 1", got)
			}
			text := exposed(t, fx.w)
			for _, want := range []string{
				`cellguard_check_findings{check="cgroup-integrity",phase="watch"} 1`,
				`cellguard_check_blocking{check="cgroup-integrity",phase="watch"} 1`,
				`cellguard_check_status{check="cgroup-integrity",phase="watch"} 3`,
				`cellguard_check_could_not_judge{check="cgroup-integrity"} 1`,
			} {
				if !strings.Contains(text, want+"\n") {
					t.Errorf("want %s in the metrics:\n%s", want, grepLines(text, "cgroup-integrity"))
				}
			}

			// It judges again and the process is still out: the same open
			// finding, not a new one.
			mu.Lock()
			readErr = nil
			mu.Unlock()
			fx.integrity.set(nil, escapeFinding(101, "cpu", "/"))
			fx.w.scan(ctx, "job", false)
			msgs = fx.messages()
			if count(msgs, "finding") != 1 || count(msgs, "check-runs-again") != 1 || count(msgs, "finding-cleared") != 0 {
				t.Errorf("after judging again: %v", msgs)
			}
			if !strings.Contains(exposed(t, fx.w), `cellguard_check_could_not_judge{check="cgroup-integrity"} 0`+"\n") {
				t.Error("cellguard_check_could_not_judge stayed 1 after the check judged again")
			}
			// and only a judged scan clears it.
			fx.integrity.set(nil)
			fx.w.scan(ctx, "job", false)
			if n := count(fx.messages(), "finding-cleared"); n != 1 {
				t.Errorf("%d finding-cleared after a judged clean scan, want 1", n)
			}
			if got := testutil.ToFloat64(fx.w.m.Escaped); got != 0 {
				t.Errorf("cellguard_escaped_processes = %v after a judged clean scan", got)
			}
		})
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// hungCheck never returns until released and never heeds its context, as
// leaked-netns did blocked in open(2) on a tenant's FIFO.
type hungCheck struct {
	id      string
	release chan struct{}
	mu      sync.Mutex
	runs    int
}

func (h *hungCheck) Meta() validator.Meta {
	return validator.Meta{ID: h.id, Title: h.id, Story: "s", Fix: "f"}
}

func (h *hungCheck) Run(context.Context) ([]validator.Finding, error) {
	h.mu.Lock()
	h.runs++
	h.mu.Unlock()
	<-h.release
	return nil, nil
}

func (h *hungCheck) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs
}

// Issue 38, hole 8 in watch: a check that never returns does not stop
// watch's scans. The scan ends at its deadline (ScanTimeout) with that
// check "could not judge" and the other checks judged; the next scan does
// not start the stuck check a second time; once it returns it runs again.
func TestHungCheckDoesNotStopScans(t *testing.T) {
	hung := &hungCheck{id: "leaked-netns", release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(hung.release) }) }
	t.Cleanup(release)
	fx := newFixture(t, func(c *Config) { c.ScanTimeout = 300 * time.Millisecond })
	fx.w.cfg.Registry = func(*snapshot.Source) []validator.Check {
		return []validator.Check{fx.integrity, hung}
	}
	fx.integrity.set(nil, escapeFinding(101, "cpu", "/"))
	scan := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		done := make(chan struct{})
		go func() { fx.w.scan(context.Background(), TriggerPeriod, true); close(done) }()
		select {
		case <-done:
			return time.Since(start)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not end within 5s with a check that never returns: watch's scans stop for good", what)
		}
		return 0
	}
	if d := scan("the first scan"); d > 2*time.Second {
		t.Errorf("the first scan took %v, want about its deadline (300ms)", d)
	}
	if got := testutil.ToFloat64(fx.w.m.Checks.Status.WithLabelValues("leaked-netns", "watch")); got != 3 {
		t.Errorf("the stuck check's status = %v, want 3 (could not judge)", got)
	}
	if got := testutil.ToFloat64(fx.w.m.Escaped); got != 1 {
		t.Errorf("the other check's escape was not judged: cellguard_escaped_processes = %v", got)
	}
	scan("the second scan")
	if n := hung.count(); n != 1 {
		t.Errorf("the stuck check was started %d times, want once: a scan still running is not doubled", n)
	}
	if n := fx.integrity.count(); n != 2 {
		t.Errorf("the other check ran %d times in two scans", n)
	}
	if !strings.Contains(exposed(t, fx.w), `cellguard_check_could_not_judge{check="leaked-netns"} 1`+"\n") {
		t.Error("no cellguard_check_could_not_judge 1 for the stuck check")
	}
	release()
	waitFor(t, func() bool {
		scan("a scan after the release")
		return hung.count() == 2
	})
	if !strings.Contains(exposed(t, fx.w), `cellguard_check_could_not_judge{check="leaked-netns"} 0`+"\n") {
		t.Error("the check judged again but cellguard_check_could_not_judge stayed 1")
	}
}

// A read of the host that never returns is not started again by the next
// scan (the reader keeps state between reads, and a second one would pile
// up behind the first): the checks that need it could not judge meanwhile.
func TestHungReadIsNotDoubled(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	reads := 0
	fx := newFixture(t, func(c *Config) {
		c.ScanTimeout = 200 * time.Millisecond
		c.Read = func() (*snapshot.Host, error) {
			mu.Lock()
			reads++
			mu.Unlock()
			<-release
			return &snapshot.Host{}, nil
		}
	})
	fx.w.cfg.Registry = func(src *snapshot.Source) []validator.Check {
		return []validator.Check{readingCheck{fx.integrity, src}, readingCheck{fx.versions, src}}
	}
	ctx := context.Background()
	fx.w.scan(ctx, "job", false) // cgroup-integrity only: its read hangs
	fx.w.scan(ctx, TriggerPeriod, true)
	mu.Lock()
	n := reads
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d reads of the host started while the first never returned, want 1", n)
	}
	text := exposed(t, fx.w)
	for _, id := range []string{escapeCheck, "runtime-versions"} {
		if want := `cellguard_check_could_not_judge{check="` + id + `"} 1`; !strings.Contains(text, want+"\n") {
			t.Errorf("want %s:\n%s", want, grepLines(text, "could_not_judge"))
		}
	}
	for _, l := range fx.logger.Logs() {
		if l.Data["check"] == "runtime-versions" && !strings.Contains(l.Data["error"].(string), "read of the host: still running") {
			t.Errorf("runtime-versions could not judge for another reason: %v", l.Data["error"])
		}
	}
}
