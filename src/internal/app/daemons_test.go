package app

import (
	"testing"
	"time"
)

func TestUnitDeadline(t *testing.T) {
	testCases := []struct {
		name          string
		timeout, wait time.Duration
		want          time.Duration
	}{
		{"flag wins", 5 * time.Second, 10 * time.Minute, 5 * time.Second},
		{"default", 0, 0, 90 * time.Second},
		{"short wait keeps the default", 0, 30 * time.Second, 90 * time.Second},
		{"long wait plus room", 0, 2 * time.Minute, 150 * time.Second},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnitDeadline(tc.timeout, tc.wait); got != tc.want {
				t.Errorf("UnitDeadline(%v, %v) = %v, want %v", tc.timeout, tc.wait, got, tc.want)
			}
		})
	}
}
