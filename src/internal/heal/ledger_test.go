package heal

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Two processes that heal one host (watch and drain) share one cap: what
// one spent, the other cannot, within the Window; both see it freed after.
// Each budget opens the record itself, as a second process would (flock
// excludes open file descriptions, not processes).
func TestSharedBudgetIsTheHostsCap(t *testing.T) {
	c := newFakeClock()
	path := filepath.Join(t.TempDir(), "heal-ledger")
	watch := NewSharedBudget(3, path, c.Now)
	drain := NewSharedBudget(3, path, c.Now)

	spend := func(b *Budget, want, n int) {
		t.Helper()
		release, err := b.hold()
		if err != nil {
			t.Fatal(err)
		}
		if left := b.Left(); left != want {
			t.Errorf("left %d, want %d", left, want)
		}
		b.Spend(n)
		if err := release(); err != nil {
			t.Fatal(err)
		}
	}
	spend(watch, 3, 2)
	c.advance(10 * time.Second)
	spend(drain, 1, 1)
	spend(watch, 0, 0)
	c.advance(Window)
	spend(drain, 3, 0)
}

// While one process heals, another waits for the record rather than
// reading it stale; it gets it once the first lets go.
func TestSharedBudgetWaitsForTheHolder(t *testing.T) {
	c := newFakeClock()
	path := filepath.Join(t.TempDir(), "heal-ledger")
	a := NewSharedBudget(2, path, c.Now)
	b := NewSharedBudget(2, path, c.Now)
	release, err := a.hold()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		rb, err := b.hold()
		if err != nil {
			t.Error(err)
			got <- -1
			return
		}
		got <- b.Left()
		rb()
	}()
	a.Left()
	a.Spend(2)
	select {
	case n := <-got:
		t.Fatalf("the second heal read the record (left %d) while the first held it", n)
	case <-time.After(200 * time.Millisecond): // it must still wait; not a timing of the code
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != 0 {
		t.Fatalf("after the first heal spent 2 of 2, the second has %d left, want 0", n)
	}
}

// The record is never read through a link (a local user's link in the run
// directory would make root write where it points), and a torn line only
// drops itself.
func TestSharedBudgetRecordFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	link := filepath.Join(dir, "heal-ledger")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSharedBudget(1, link, nil).hold(); err == nil {
		t.Fatal("hold followed a symlink")
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the link's target was created (stat: %v)", err)
	}

	c := newFakeClock()
	path := filepath.Join(dir, "ledger")
	if err := os.WriteFile(path, []byte(strconvNano(c.Now())+"\n12x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := NewSharedBudget(3, path, c.Now)
	release, err := b.hold()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if n := b.Left(); n != 2 {
		t.Fatalf("left %d with one heal recorded and one torn line, want 2", n)
	}
}

// Without the shared directory (not a BOSH VM) the budget is the
// process's own, and still a cap.
func TestSharedBudgetWithoutItsDirectory(t *testing.T) {
	c := newFakeClock()
	b := NewSharedBudget(1, filepath.Join(t.TempDir(), "absent", "heal-ledger"), c.Now)
	release, err := b.hold()
	if err != nil {
		t.Fatal(err)
	}
	b.Spend(1)
	release()
	if n := b.Left(); n != 0 {
		t.Fatalf("left %d, want 0", n)
	}
}

func strconvNano(t time.Time) string { return string(appendNano(nil, t)) }
