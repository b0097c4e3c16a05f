package facts

import (
	"context"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
)

// NetnsFacts is what leaked-netns judges: one scan for network namespaces
// held only by open files.
type NetnsFacts struct {
	// Err: the scan could not run, or did not end within its deadline.
	Err    error
	Result netns.Result
	// Live: the live root (where a probe could run at all).
	Live bool
	// Probed: sockets could be asked for their namespace (the live probe
	// was allowed, or a probe was given); ProbeOff: the live root's probe
	// was not allowed (Spec.NetnsProbe off), so sockets were left unasked.
	Probed, ProbeOff bool
}

// netnsConfirm is the wait before a leak is read again: a namespace being
// made (unshare, then a bind mount or a process in it) is one for a moment.
const netnsConfirm = 200 * time.Millisecond

func readNetns(ctx context.Context, s Spec, snap *snapshot.Source) NetnsFacts {
	live := hostroot.IsLive(s.Root)
	sc := &netns.Scanner{Root: s.Root, Probe: s.NetNS, Files: s.NetnsFiles, Sleep: s.Sleep, Confirm: netnsConfirm}
	if sc.Sleep == nil && !live {
		// A tree under a prefix does not change while it is read.
		sc.Sleep = func(time.Duration) {}
	}
	f := NetnsFacts{Live: live}
	switch {
	case live && s.NetnsProbe:
		// Opt-in: these touch other processes (the BPF iterator reads
		// every task's files; the probe duplicates their sockets from a
		// thread that joins their cgroups).
		if sc.Probe == nil {
			sc.Probe = netns.Live{}
		}
		if sc.Files == nil {
			sc.Files = netns.TaskFiles{Kernel: s.Kernel}
		}
	case live && sc.Probe == nil:
		f.ProbeOff = true
	}
	f.Probed = sc.Probe != nil
	sc.PIDs = func() ([]int, error) {
		v, err := snap.Get()
		if err != nil {
			return nil, err
		}
		return v.PIDs(), nil
	}
	// Scan takes no context: it ends on its own, and a late result is
	// dropped rather than waited for.
	type scanned struct {
		res netns.Result
		err error
	}
	ch := make(chan scanned, 1)
	go func() {
		res, err := sc.Scan()
		ch <- scanned{res, err}
	}()
	select {
	case r := <-ch:
		f.Result, f.Err = r.res, r.err
	case <-ctx.Done():
		f.Err = ctx.Err()
	}
	return f
}

// The scan's vocabulary, for judges: they read these, never the scanner.
type (
	NetnsResult = netns.Result
	NetnsLeak   = netns.Leak
)

// ViaIterator is NetnsResult.Via when the BPF task_file iterator listed
// the open files.
const ViaIterator = netns.ViaIterator
