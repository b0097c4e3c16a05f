// Package boxwatch runs `cellguard watch` inside an sdbox for tests and
// benchmarks, and reads what it reports: its lager log (rfc3339 times, to
// the nanosecond) and its /metrics on the box's loopback.
//
// Only test code imports this package.
package boxwatch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// Listen is where watch serves /metrics in the box.
const Listen = "127.0.0.1:9323"

// Config is the config file watch reads (and a test's validate may):
// the validator's defaults, "{}", unless StartWithConfig wrote another.
const Config = "/etc/cellguard-watch.json"

// Watch is one `cellguard watch` in a box.
type Watch struct {
	box     *sdbox.Box
	Log     string
	pidfile string
	cancel  context.CancelFunc
	done    chan struct{}
	offset  int // log lines consumed by WaitLog
}

// Start runs cellguard (the path in the box) watch with args, listening on
// Listen and logging to log at debug level, and stops it when the test
// ends.
func Start(t testing.TB, box *sdbox.Box, cellguard, log string, args ...string) *Watch {
	t.Helper()
	return StartWithConfig(t, box, cellguard, log, "{}", args...)
}

// StartWithConfig is Start with config (JSON, as the job renders it) in
// Config: what an operator sets for the box's runtime, e.g. the runc it
// keeps outside PATH.
func StartWithConfig(t testing.TB, box *sdbox.Box, cellguard, log, config string, args ...string) *Watch {
	t.Helper()
	if err := box.WriteFile(Config, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watch{box: box, Log: log, pidfile: log + ".pid", cancel: cancel, done: make(chan struct{})}
	// The shell records the box-side pid watch will have, then becomes it.
	argv := append([]string{"sh", "-c", `echo $$ > "$0"; exec "$@"`, w.pidfile, cellguard, "watch", "--config", Config,
		"--listen", Listen, "--log-file", log, "--log-time-format", "rfc3339", "--log-level", "debug"}, args...)
	cmd := box.Command(ctx, argv...)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(w.done) }() //nolint:errcheck // stopped on purpose
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			w.dump(t)
		}
	})
	return w
}

// dump logs every line of watch's log (the debug level has each event and
// scan), so a failure shows what watch saw and when.
func (w *Watch) dump(t testing.TB) {
	t.Logf("watch's log %s:", w.Log)
	for _, l := range w.Lines() {
		d, _ := json.Marshal(l.Data)
		t.Logf("  %s %s %s", l.Timestamp.Format("15:04:05.000000"), l.Message, d)
	}
}

// Stop ends watch with SIGTERM, as monit's stop program does.
func (w *Watch) Stop() {
	w.box.Exec(context.Background(), "sh", "-c", `kill -TERM "$(cat "$0")" 2>/dev/null`, w.pidfile) //nolint:errcheck // gone already is fine
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
	}
	w.cancel()
}

// PID is watch's pid in the box.
func (w *Watch) PID(t testing.TB) int {
	t.Helper()
	b, err := w.box.ReadFile(w.pidfile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Line is one line of watch's log; Message without "cellguard.watch.".
type Line struct {
	Timestamp time.Time      `json:"timestamp"`
	Message   string         `json:"message"`
	Data      map[string]any `json:"data"`
}

// Lines reads the whole log.
func (w *Watch) Lines() []Line {
	b, _ := w.box.ReadFile(w.Log)
	var out []Line
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l Line
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			l.Message = strings.TrimPrefix(l.Message, "cellguard.watch.")
			out = append(out, l)
		}
	}
	return out
}

// WaitLog waits for the next line (after those consumed) with message msg
// for which match holds (nil: any), consumes up to it and returns it; ok
// is false when none came within the time.
func (w *Watch) WaitLog(msg string, match func(Line) bool, within time.Duration) (Line, bool) {
	deadline := time.Now().Add(within)
	for {
		ls := w.Lines()
		for i := w.offset; i < len(ls); i++ {
			if ls[i].Message == msg && (match == nil || match(ls[i])) {
				w.offset = i + 1
				return ls[i], true
			}
		}
		if time.Now().After(deadline) {
			return Line{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// MustLog is WaitLog that fails the test, naming what came instead.
func (w *Watch) MustLog(t testing.TB, msg string, match func(Line) bool, within time.Duration) Line {
	t.Helper()
	l, ok := w.WaitLog(msg, match, within)
	if !ok {
		var got []string
		for _, l := range w.Lines()[w.offset:] {
			got = append(got, l.Message)
		}
		t.Fatalf("no %q in watch's log within %s; since the last match: %v", msg, within, got)
	}
	return l
}

// Subject matches a cgroup-integrity line about container c.
func Subject(c string) func(Line) bool {
	return func(l Line) bool { return l.Data["check"] == "cgroup-integrity" && l.Data["subject"] == c }
}

// Metric reads one sample (the first whose labels include labels) from
// watch's /metrics, through the box's network namespace.
func Metric(box *sdbox.Box, name string, labels map[string]string) (float64, error) {
	resp, err := box.HTTPClient().Get("http://" + Listen + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("parse /metrics: %w", err)
	}
	mf, ok := mfs[name]
	if !ok {
		return 0, fmt.Errorf("/metrics has no %s", name)
	}
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		switch {
		case !match:
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), nil
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("/metrics has no %s%v", name, labels)
}
