package snapshot

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Incremental against full reads over a randomized sequence of what
// happens on a cell: containers created and removed, processes forked and
// exited, escapes in some or every hierarchy (and their children), heals,
// inits exiting, host processes started and exec'ing into runc, runc exec's
// inits exec'ing into the container's process. After every
// step the incremental Host must equal a full one, field by field, with
// the same owners for processes no cgroup lists; on a step where nothing
// changed it reads the stat of unsettled processes only.
func TestIncrementalAgreesWithFullRead(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 25))
			h := fakehost.New(t, cgroup.Hybrid)
			type ctr struct {
				c     fakehost.Container
				pids  []int
				state string
			}
			var ctrs []*ctr
			var hostPIDs []int
			next, tick := 1000, uint64(500)
			newPID := func() int { next++; return next }
			in := &Incremental{Spec: Spec{Root: h.Root}}
			clock := time.Unix(0, 0)
			in.Now = func() time.Time { return clock }
			for step := 0; step < 40; step++ {
				clock = clock.Add(time.Second) // never a full read: those are Read's
				op := rng.IntN(15)             // 11-14: more creates and forks than the rest
				switch {
				case len(ctrs) == 0 || op == 11 || op == 12:
					op = 0
				case op > 12:
					op = 1
				}
				var c *ctr
				if len(ctrs) > 0 {
					c = ctrs[rng.IntN(len(ctrs))]
				}
				switch op {
				case 0: // a container created
					first := next + 1
					next += 10
					tick++
					id := fmt.Sprintf("c%d", first)
					nc := &ctr{c: fakehost.Container{RuntimeRoot: "/run/runc", ID: id, Cgroup: "/garden/" + id}}
					h.RunContainer(nc.c, first, 1+rng.IntN(4), tick)
					for p := first; p < first+10; p++ {
						if h.Get(p) != nil {
							nc.pids = append(nc.pids, p)
						}
					}
					nc.state = filepath.Join(h.Root, "run/runc", id)
					ctrs = append(ctrs, nc)
				case 1: // a fork inside a container
					init := h.Get(c.pids[0])
					if init == nil {
						continue
					}
					pid := newPID()
					comm := "app"
					if rng.IntN(2) == 0 {
						comm = "runc:[2:INIT]" // runc exec's init, until it execs the process
					}
					h.Add(fakehost.Proc{PID: pid, PPID: init.PID, Comm: comm, Start: tick, NS: init.NS, Cgroup: init.Cgroup})
					c.pids = append(c.pids, pid)
				case 2: // a container process exits
					if len(c.pids) > 1 {
						i := 1 + rng.IntN(len(c.pids)-1)
						h.Kill(c.pids[i])
						c.pids = append(c.pids[:i], c.pids[i+1:]...)
					}
				case 3, 4: // an escape, in some hierarchies or all
					p := h.Get(c.pids[rng.IntN(len(c.pids))])
					if p == nil {
						continue
					}
					for _, hier := range h.Hierarchies() {
						if op == 4 || rng.IntN(2) == 0 {
							h.Move(p.PID, hier, "/system.slice/garden.service")
						}
					}
				case 5: // healed
					p := h.Get(c.pids[rng.IntN(len(c.pids))])
					if p == nil {
						continue
					}
					p.In = nil
					h.Update(p)
				case 6: // an escaped process forks: its child is where it is
					p := h.Get(c.pids[rng.IntN(len(c.pids))])
					if p == nil || len(p.In) == 0 {
						continue
					}
					pid := newPID()
					in := map[string]string{}
					for k, v := range p.In {
						in[k] = v
					}
					h.Add(fakehost.Proc{PID: pid, PPID: p.PID, Comm: "app", Start: tick, NS: p.NS, Cgroup: p.Cgroup, In: in})
					c.pids = append(c.pids, pid)
				case 7: // the init exits
					if h.Get(c.pids[0]) != nil {
						h.Kill(c.pids[0])
					}
				case 8: // a container removed
					for _, p := range c.pids {
						if h.Get(p) != nil {
							h.Kill(p)
						}
					}
					if err := os.RemoveAll(c.state); err != nil {
						t.Fatal(err)
					}
					for i := range ctrs {
						if ctrs[i] == c {
							ctrs = append(ctrs[:i], ctrs[i+1:]...)
							break
						}
					}
				case 9: // a host process starts
					pid := newPID()
					tick++
					h.Add(fakehost.Proc{PID: pid, PPID: 1, Comm: "sleep", Start: tick, Cgroup: "/system.slice/x.service"})
					hostPIDs = append(hostPIDs, pid)
				case 10: // exec: a runc exec's init into the container's process, else a host process into runc
					var runcInit *fakehost.Proc
					for _, x := range ctrs {
						for _, q := range x.pids {
							if p := h.Get(q); p != nil && p.Comm == "runc:[2:INIT]" {
								runcInit = p
							}
						}
					}
					switch {
					case runcInit != nil:
						runcInit.Comm = "app"
						execInPlace(t, h.Root, runcInit)
					case len(hostPIDs) > 0:
						if p := h.Get(hostPIDs[rng.IntN(len(hostPIDs))]); p != nil {
							p.Comm = "runc"
							execInPlace(t, h.Root, p)
						}
					}
				}
				full, err := Read(Spec{Root: h.Root})
				if err != nil {
					t.Fatal(err)
				}
				inc, err := in.Read()
				if err != nil {
					t.Fatal(err)
				}
				if in.Full != (step == 0) {
					t.Fatalf("step %d: full read %v", step, in.Full)
				}
				if !reflect.DeepEqual(full, inc) {
					t.Fatalf("step %d (op %d): the incremental read differs from a full one:\nfull procs %+v\nincr procs %+v", step, op, full.procs, inc.procs)
				}
				if fo, io := full.UnlistedOwners(), inc.UnlistedOwners(); !reflect.DeepEqual(fo, io) {
					t.Fatalf("step %d (op %d): owners full %v, incremental %v", step, op, fo, io)
				}
			}
			// Nothing changes: only the unsettled are read.
			clock = clock.Add(time.Second)
			inc, err := in.Read()
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, p := range inc.procs {
				if inc.reread(p.PID, initsOf(inc))(p.Stat) {
					want++
				}
			}
			if got := in.StatsRead(); got != want || want >= len(inc.procs) {
				t.Fatalf("a quiet read read %d stats, want %d of %d processes", got, want, len(inc.procs))
			}
			t.Logf("quiet read: %d of %d stats read", want, len(inc.procs))
			// The period's full read.
			clock = clock.Add(DefaultFullEvery)
			if _, err := in.Read(); err != nil || !in.Full || in.StatsRead() != len(inc.procs) {
				t.Fatalf("full read %v, read %d stats of %d (%v)", in.Full, in.StatsRead(), len(inc.procs), err)
			}
		})
	}
}

func initsOf(v *Host) map[int]bool {
	m := map[int]bool{}
	for i := range v.disc.Containers {
		m[v.disc.Containers[i].State.InitProcessPid] = true
	}
	return m
}

// execInPlace rewrites p's stat with its new command name in the same
// /proc/<pid> directory, as exec changes it on the kernel's /proc (where
// fakehost's Update makes a new directory, a new process to the memo).
func execInPlace(t *testing.T, root string, p *fakehost.Proc) {
	t.Helper()
	line := fmt.Sprintf("%d (%s) %c %d %d %d 0 -1 4194560 1523 0 2 0 12 7 0 0 20 0 1 0 %d 12451840 2211 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		p.PID, p.Comm, p.State, p.PPID, p.PID, p.PID, p.Start)
	if err := os.WriteFile(filepath.Join(root, "proc", fmt.Sprint(p.PID), "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}
