package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// errStillRunning is a check (or the host read) not started in a scan
// because its run from an earlier scan outlived that scan's deadline and
// has not ended: a check that never heeds its context costs one goroutine,
// not one a scan, and is never run twice at once.
var errStillRunning = errors.New("still running from an earlier scan")

// inflight is the work of scans that has not ended, by name, with when it
// began.
type inflight struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// begin marks name running; false (and when the running one began) when
// it already is.
func (f *inflight) begin(name string, now time.Time) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.since[name]; ok {
		return t, false
	}
	if f.since == nil {
		f.since = map[string]time.Time{}
	}
	f.since[name] = now
	return now, true
}

func (f *inflight) end(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.since, name)
}

// once runs fn under name unless name still runs.
func (f *inflight) once(name string, fn func() error) error {
	if since, ok := f.begin(name, time.Now()); !ok {
		return fmt.Errorf("%s: %w (began %s ago)", name, errStillRunning, time.Since(since).Round(time.Millisecond))
	}
	defer f.end(name)
	return fn()
}

// guarded is a check that does not start while its previous run goes on.
type guarded struct {
	validator.Check
	f *inflight
}

func (g guarded) Run(ctx context.Context) (fs []validator.Finding, err error) {
	err = g.f.once("check "+g.Meta().ID, func() error {
		fs, err = g.Check.Run(ctx)
		return err
	})
	return fs, err
}

// guard wraps each check of a scan's registry.
func (w *Watcher) guard(registry []validator.Check) []validator.Check {
	out := make([]validator.Check, len(registry))
	for i, c := range registry {
		out[i] = guarded{c, &w.running}
	}
	return out
}

// guardedRead reads the host unless an earlier scan's read still runs:
// the reader (snapshot.Incremental) keeps state between reads and is not
// made for two at once.
func (w *Watcher) guardedRead() (h *snapshot.Host, err error) {
	err = w.running.once("read of the host", func() error {
		h, err = w.read()
		if err == nil && w.subtree != nil {
			w.trackSubtrees(h) // inside: one read at a time tracks
		}
		return err
	})
	return h, err
}
