package facts

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// counted is a SystemdVersioner that counts its asks and answers v, or
// waits for its context to end when block is set.
type counted struct {
	asks  atomic.Int32
	v     int
	block bool
}

func (c *counted) SystemdVersion(ctx context.Context) (int, error) {
	c.asks.Add(1)
	if c.block {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return c.v, nil
}

func booted(t *testing.T) *fakehost.Host {
	h := fakehost.New(t, cgroup.Unified)
	h.Mkdir("/run/systemd/system")
	return h
}

// A kind is read once, when waited for; a kind nobody waits for is never
// read, and reads as ErrNotRead: a judge that forgot a need cannot pass.
func TestReadsOnlyWhatIsWaitedFor(t *testing.T) {
	h := booted(t)
	running, installed := &counted{v: 257}, &counted{v: 257}
	var dials atomic.Int32
	host := New(Spec{Root: h.Root, Running: running, Installed: installed,
		Units: func(context.Context) (SystemdUnits, error) { dials.Add(1); return nil, errors.New("no manager here") }})
	if err := host.Units().Err; !errors.Is(err, ErrNotRead) {
		t.Fatalf("units before any wait: err %v, want ErrNotRead", err)
	}
	for range 2 {
		if err := host.Wait(context.Background(), Systemd); err != nil {
			t.Fatal(err)
		}
	}
	if f := host.Systemd(); f.Err != nil || f.Running != 257 || f.Installed != 257 || !f.Booted || f.Mode != cgroup.Unified {
		t.Fatalf("systemd facts: %+v", f)
	}
	if running.asks.Load() != 1 || installed.asks.Load() != 1 {
		t.Fatalf("asked the running manager %d times and systemctl %d, want once each", running.asks.Load(), installed.asks.Load())
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("dialed the manager %d times for facts nobody waited for", n)
	}
	if err := host.Units().Err; !errors.Is(err, ErrNotRead) {
		t.Fatalf("units never waited for: err %v, want ErrNotRead", err)
	}
	// Read starts the needs at once; the dial's error is the fact's.
	host = Read(context.Background(), Spec{Root: h.Root, Units: func(context.Context) (SystemdUnits, error) {
		dials.Add(1)
		return nil, errors.New("no manager here")
	}}, []Kind{Units})
	if err := host.Wait(context.Background(), Units); err != nil {
		t.Fatal(err)
	}
	if err := host.Units().Err; err == nil || dials.Load() != 1 {
		t.Fatalf("units: err %v after %d dials, want the dial's error after one", err, dials.Load())
	}
}

// Each provider has its own deadline: a manager that never answers makes
// the version a fact that could not be read, within the deadline, while
// the run's context is still alive.
func TestProviderDeadline(t *testing.T) {
	old := Deadlines[Systemd]
	Deadlines[Systemd] = 50 * time.Millisecond
	t.Cleanup(func() { Deadlines[Systemd] = old })
	h := booted(t)
	host := New(Spec{Root: h.Root, Running: &counted{block: true}, Installed: &counted{v: 252}})
	start := time.Now()
	if err := host.Wait(context.Background(), Systemd); err != nil {
		t.Fatal(err)
	}
	f := host.Systemd()
	if !errors.Is(f.RunningErr, context.DeadlineExceeded) || f.Installed != 252 {
		t.Fatalf("systemd facts: %+v, want the running version's deadline and the installed one", f)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the deadline took %v", d)
	}
}

// The run's context ending first leaves Wait, not the fact, with its error.
func TestWaitEndsWithTheRun(t *testing.T) {
	h := booted(t)
	host := New(Spec{Root: h.Root, Running: &counted{block: true}, Installed: &counted{v: 252}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := host.Wait(ctx, Systemd); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v, want the run's deadline", err)
	}
}

// A provider that panics leaves its kind with the panic as its error,
// not the process down.
func TestProviderPanicIsAFact(t *testing.T) {
	host := New(Spec{Root: t.TempDir(), Mode: func(string) (cgroup.Mode, error) { panic("boom") }})
	if err := host.Wait(context.Background(), Systemd); err != nil {
		t.Fatal(err)
	}
	if err := host.Systemd().Err; err == nil {
		t.Fatal("a panicking provider read as facts")
	}
}
