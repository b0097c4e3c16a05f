package daemonctl

import (
	"testing"
	"time"
)

func TestBackoffStartsShortAndCaps(t *testing.T) {
	var b backoff
	var got []time.Duration
	for i := 0; i < 28; i++ {
		got = append(got, b.next())
	}
	ms := time.Millisecond
	var want []time.Duration
	for i := 0; i < 20; i++ {
		want = append(want, ms)
	}
	want = append(want, 2*ms, 4*ms, 8*ms, 16*ms, 32*ms, 50*ms, 50*ms, 50*ms)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
}
