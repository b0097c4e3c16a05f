package heal

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	now := time.Unix(0, 0)
	b := NewBudget(60, now)
	b.Take(60, now)
	if b.Available(now) {
		t.Fatal("available with the budget spent")
	}
	if !b.Available(now.Add(time.Second)) {
		t.Fatal("one token a second at 60 a minute")
	}
	b.Take(100, now.Add(time.Second))
	if b.Available(now.Add(time.Minute)) {
		t.Fatal("a debt of 99 is not repaid within a minute")
	}
	if !b.Available(now.Add(2*time.Minute)) || b.tokens > 60 {
		t.Fatalf("tokens %v after two minutes", b.tokens)
	}
}
