package heal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// NewSharedBudget is a Budget whose record of heals lives in the file at
// path, shared by every process that heals this host: watch and drain
// each heal, and issue 38's cap is "at most heal_per_minute in any
// 60-second window" for the host, not per process. Times are read on
// CLOCK_BOOTTIME (nil clock), which every process shares and no wall
// clock step moves; the file lives on a tmpfs, so a reboot empties it
// with the clock. When path's directory does not exist (not a BOSH VM,
// or a test) the record is this process's own.
func NewSharedBudget(perMinute int, path string, clock func() time.Time) *Budget {
	if clock == nil {
		clock = bootClock
	}
	b := NewBudget(perMinute, clock)
	b.ledger = path
	return b
}

// Ledger is the shared record's file, "" for a budget of its own.
func (b *Budget) Ledger() string { return b.ledger }

func bootClock() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_BOOTTIME): %v", err)) // Linux has had it since 2.6.39
	}
	return time.Unix(ts.Unix())
}

// lockWait bounds how long a heal waits for another process's: a heal
// holds the record for the few moves it makes, so a longer wait means a
// process hangs with it, and the heal defers instead of wedging a drain.
const lockWait = 10 * time.Second

// hold takes the shared record, exclusively, and reads it into b; release
// writes b's record back and lets it go. Between them, Left and Spend are
// this process's alone. A budget without a ledger holds nothing.
func (b *Budget) hold() (release func() error, err error) {
	if b.ledger == "" {
		return func() error { return nil }, nil
	}
	f, err := os.OpenFile(b.ledger, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Dir(b.ledger)); errors.Is(serr, fs.ErrNotExist) {
			return func() error { return nil }, nil // no shared directory: this process's own record
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open heal ledger %s: %w", b.ledger, err)
	}
	if err := lockWithin(f, lockWait); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock heal ledger %s: %w", b.ledger, err)
	}
	data, err := io.ReadAll(f) // just opened: at offset 0
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read heal ledger %s: %w", b.ledger, err)
	}
	b.spent = parseLedger(data, b.spent[:0])
	return func() error {
		defer f.Close() // closing lets the lock go
		if err := writeLedger(f, b.spent); err != nil {
			return fmt.Errorf("write heal ledger %s: %w", b.ledger, err)
		}
		return nil
	}, nil
}

// lockWithin takes an exclusive flock on f, trying until d has passed.
func lockWithin(f *os.File, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || (err != unix.EWOULDBLOCK && err != unix.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("held by another process for %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parseLedger reads one heal per line, its time in nanoseconds; a line
// that is not a number (a torn write) is skipped: the record may only
// undercount by it, and Left trims what is older than a Window.
func parseLedger(data []byte, dst []time.Time) []time.Time {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if ns, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64); err == nil && ns > 0 {
			dst = append(dst, time.Unix(0, ns))
		}
	}
	return dst
}

func writeLedger(f *os.File, spent []time.Time) error {
	var buf []byte
	for _, at := range spent {
		buf = appendNano(buf, at)
		buf = append(buf, '\n')
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(buf, 0)
	return err
}

func appendNano(b []byte, t time.Time) []byte { return strconv.AppendInt(b, t.UnixNano(), 10) }
