// Package benchcycle is the wire format between the start/stop benchmark
// (src/tests/perf) and `cellbench cycle`, which runs inside the systemd box.
package benchcycle

// Spec is what `cellbench cycle` runs, as JSON on its command line. It
// runs inside the systemd container (src/tests/perf copies it there), so the
// times carry no nsenter or host overhead.
type Spec struct {
	Runs int `json:"runs"`
	// PIDFile is the daemon's pidfile: a start is complete when it names a
	// live process, a stop when that process is gone.
	PIDFile  string    `json:"pidfile"`
	Variants []Variant `json:"variants"`
}

// Variant is one way of starting and stopping the daemon, or (without Stop
// and PIDFile waits) a command timed alone.
type Variant struct {
	Name  string   `json:"name"`
	Start []string `json:"start"`
	Stop  []string `json:"stop,omitempty"`
	// Detach runs Start in its own session without waiting: a BOSH ctl
	// script that execs the daemon never returns (monit spawns it so).
	Detach bool `json:"detach,omitempty"`
	// Wait polls the pidfile after Start and the process after Stop.
	Wait bool `json:"wait,omitempty"`
	// Prepare runs before each Start, untimed (e.g. to drop a cache).
	Prepare []string `json:"prepare,omitempty"`
}

// Result holds nanoseconds per run, by variant name.
type Result map[string]struct {
	Start []int64 `json:"start"`
	Stop  []int64 `json:"stop,omitempty"`
}
