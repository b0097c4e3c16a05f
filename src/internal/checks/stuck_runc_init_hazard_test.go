package checks

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Seed 001 as it was measured on a noble VM (src/tests/qemu, TestNobleSeed001):
// runc 1.0.0-rc93's `runc init`, a child of the host's runc, sleeps in
// pipe_write on a pipe the kernel gave two pages because
// fs.pipe-user-pages-soft was exhausted. That is the hazard itself, so it
// blocks pre-start; what only looks like it (an old init with full pipes, a
// young init, small pipes held by a runc that is no init, a process that
// merely calls itself runc init) warns, as before.
func TestStuckRuncInitOnExhaustedPipesBlocksPreStart(t *testing.T) {
	ticksAgo := func(d time.Duration) uint64 {
		return uint64((fixtureNow.Sub(fakehost.BootTime) - d) / (10 * time.Millisecond))
	}
	small, full := 2*os.Getpagesize(), 16*os.Getpagesize()
	cases := []struct {
		name string
		// procs besides the host's `runc run` (pid 73); pipe fds are small
		// when their pid is in smallPipes.
		procs      []fakehost.Proc
		smallPipes map[int]bool
		// kinds of the problems, "kind:pid:status", and whether pre-start
		// and drain block.
		want             string
		preStart, drains bool
	}{
		{
			name: "rc93 init in pipe_write on a two-page pipe",
			procs: []fakehost.Proc{{PID: 80, PPID: 73, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(2 * time.Minute),
				FDs: map[int]string{3: "pipe:[500]", 4: "pipe:[501]"}}},
			smallPipes: map[int]bool{80: true},
			want:       "stuck-on-pipes:80:fail", preStart: true,
		},
		{
			name: "the same init ten seconds old: still exporting, judged at the next run",
			procs: []fakehost.Proc{{PID: 80, PPID: 73, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(10 * time.Second),
				FDs: map[int]string{3: "pipe:[500]"}}},
			smallPipes: map[int]bool{80: true},
			want:       "small-pipe:80:warn",
		},
		{
			name: "an init past the age limit with full pipes",
			procs: []fakehost.Proc{{PID: 80, PPID: 73, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(10 * time.Minute),
				FDs: map[int]string{3: "pipe:[500]"}}},
			want: "stuck-init:80:warn",
		},
		{
			name: "small pipes of the runc that is no init",
			procs: []fakehost.Proc{{PID: 80, PPID: 73, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(10 * time.Second),
				FDs: map[int]string{3: "pipe:[500]"}}},
			smallPipes: map[int]bool{73: true},
			want:       "small-pipe:73:warn",
		},
		{
			// A name is no alibi (issue 38, hole 2), nor an accusation
			// that stops a rollout: a tenant can call itself runc init and
			// exhaust its own uid's pipes.
			name: "a process calling itself runc init, no child of the host's runc",
			procs: []fakehost.Proc{{PID: 80, PPID: 1, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: ticksAgo(2 * time.Minute),
				FDs: map[int]string{3: "pipe:[500]"}}},
			smallPipes: map[int]bool{80: true},
			want:       "unvouched-init:80:warn small-pipe:80:warn",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := fakehost.New(t, cgroup.Unified)
			h.Add(fakehost.Proc{PID: 73, Comm: "runc", Args: []string{hostRunc, "run", "seed001"}, Start: ticksAgo(3 * time.Minute),
				Exe: h.Binary(hostRunc), FDs: map[int]string{3: "pipe:[111]"}})
			for _, p := range tc.procs {
				h.Add(p)
			}
			s := &StuckRuncInit{host: snapshot.Lazy(snapshot.Spec{Root: h.Root}), Now: func() time.Time { return fixtureNow },
				Runc: RuncFiles{Configured: map[string]string{"runc": hostRunc}},
				PipeCapacity: func(_ procfs.FS, pid, _ int) (int, error) {
					if tc.smallPipes[pid] {
						return small, nil
					}
					return full, nil
				}}
			blocks := map[validator.Phase]bool{}
			for _, phase := range []validator.Phase{validator.PreStart, validator.Drain} {
				rep := validator.Run(context.Background(), []validator.Check{s}, validator.Options{Phase: phase})
				blocks[phase] = rep.Blocked
				if phase != validator.PreStart {
					continue
				}
				var got []string
				for _, f := range rep.Results[0].Findings {
					if f.Status.IsProblem() {
						got = append(got, f.Data["kind"]+":"+f.Data["pid"]+":"+string(f.Status))
					}
					if f.Data["kind"] == "stuck-on-pipes" && (!strings.Contains(f.Detail, "pipe_write") || !strings.Contains(f.Detail, "fs.pipe-user-pages-soft")) {
						t.Errorf("the hazard's detail names neither where it sleeps nor the sysctl: %s", f.Detail)
					}
				}
				if strings.Join(got, " ") != tc.want {
					t.Errorf("pre-start findings %q, want %q: %+v", got, tc.want, rep.Results[0].Findings)
				}
			}
			if blocks[validator.PreStart] != tc.preStart || blocks[validator.Drain] != tc.drains {
				t.Errorf("blocks pre-start %v, drain %v; want %v, %v", blocks[validator.PreStart], blocks[validator.Drain], tc.preStart, tc.drains)
			}
		})
	}
}
