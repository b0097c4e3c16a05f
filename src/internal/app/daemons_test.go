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

func TestWait(t *testing.T) {
	d := Daemon{StartTimeout: 2 * time.Minute}
	for _, tc := range []struct {
		d     Daemon
		start bool
		want  time.Duration
	}{
		{d, true, 2 * time.Minute},
		{d, false, 30 * time.Second},
		{Daemon{StopTimeout: time.Minute}, false, time.Minute},
		{Daemon{StartTimeout: -time.Second}, true, 30 * time.Second},
	} {
		if got := Wait(tc.d, tc.start); got != tc.want {
			t.Errorf("Wait(%+v, start=%t) = %v, want %v", tc.d, tc.start, got, tc.want)
		}
	}
}

func TestParsePhase(t *testing.T) {
	for in, want := range map[string]Phase{"pre-start": PreStart, "drain": DrainPhase, "": "", "Drain": ""} {
		got, err := ParsePhase(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("ParsePhase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
