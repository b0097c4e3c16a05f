package procfs

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The memo against fresh reads, after every step of a randomized sequence
// of what happens to a host's processes: started, exited, a pid reused by
// a new process, exec (a new command name) and reparenting (a new parent),
// on a fixture /proc where, as on the kernel's, a new process under an old
// pid is a new directory. A process's start time and pid namespace from
// the memo always equal a fresh read; so does all of its stat whenever
// reread asks; and a step reads only the stats of new entries and of those
// reread asks for.
func TestMemoAgreesWithFreshReads(t *testing.T) {
	reread := func(st Stat) bool { return strings.HasPrefix(st.Comm, "runc") }
	comms := []string{"app", "sleep", "runc", "runc:[2:INIT]", "garden"}
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 25))
			root := t.TempDir()
			start := uint64(100)
			write := func(pid int, comm string, ppid int, fresh bool) {
				dir := filepath.Join(root, "proc", fmt.Sprint(pid))
				if fresh {
					// The old directory is kept aside, not deleted: a disk
					// file system would hand its inode number to the next
					// directory, where procfs never reuses one (get_next_ino).
					start++
					os.Rename(dir, filepath.Join(root, "gone", fmt.Sprint(start)))
					if err := os.MkdirAll(dir+"/ns", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(fmt.Sprintf("pid:[%d]", 4026531836+rng.IntN(3)), dir+"/ns/pid"); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(dir+"/start", []byte(fmt.Sprint(start)), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				b, _ := os.ReadFile(dir + "/start")
				stat := fmt.Sprintf("%d (%s) S %d 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %s 0 0\n", pid, comm, ppid, b)
				if err := os.WriteFile(dir+"/stat", []byte(stat), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var live []int
			if err := os.MkdirAll(filepath.Join(root, "gone"), 0o755); err != nil {
				t.Fatal(err)
			}
			fs := New(root)
			m := &Memo{}
			for step := 0; step < 200; step++ {
				op := rng.IntN(5)
				if len(live) == 0 {
					op = 0
				}
				comm := comms[rng.IntN(len(comms))]
				switch op {
				case 0: // started
					pid := 2 + rng.IntN(400)
					write(pid, comm, 1, true)
					if !containsInt(live, pid) {
						live = append(live, pid)
					}
				case 1: // exited
					i := rng.IntN(len(live))
					start++
					os.Rename(filepath.Join(root, "proc", fmt.Sprint(live[i])), filepath.Join(root, "gone", fmt.Sprint(start)))
					live = append(live[:i], live[i+1:]...)
				case 2: // the pid reused by a new process
					write(live[rng.IntN(len(live))], comm, 1, true)
				case 3: // exec
					write(live[rng.IntN(len(live))], comm, 1, false)
				case 4: // reparented
					write(live[rng.IntN(len(live))], comm, 2+rng.IntN(400), false)
				}
				ents, err := fs.Entries(nil)
				if err != nil {
					t.Fatal(err)
				}
				r := fs.NewReader()
				want := 0
				for _, e := range ents {
					m.mu.Lock()
					prev, kept := m.procs[e.PID]
					m.mu.Unlock()
					if !kept || prev.ino != e.Ino || reread(prev.stat) {
						want++
					}
					got, err := m.Stat(r, e, reread)
					if err != nil {
						t.Fatal(err)
					}
					fresh, _ := r.Stat(e.PID)
					same := kept && prev.ino == e.Ino
					if got.StartTime != fresh.StartTime || (!same || reread(prev.stat)) && got != fresh {
						t.Fatalf("step %d (op %d) pid %d (kept %v, same entry %v): memo %+v, fresh %+v", step, op, e.PID, kept, same, got, fresh)
					}
					ns, err := m.PidNS(r, e)
					freshNS, _ := r.PidNS(e.PID)
					if err != nil || ns != freshNS {
						t.Fatalf("step %d pid %d: pid namespace %d (%v), fresh %d", step, e.PID, ns, err, freshNS)
					}
				}
				r.Close()
				if m.Read != want {
					t.Fatalf("step %d (op %d): read %d stats, want %d (new entries and those reread asks for)", step, op, m.Read, want)
				}
				m.Next()
			}
		})
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// On the kernel's /proc the premise holds: a live process's entry keeps
// its inode from one listing to the next (procfs keeps the dentry), and an
// exited one leaves the listing.
func TestEntriesLiveInodeStable(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	find := func() (Entry, bool) {
		ents, err := New("/").Entries(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.PID == pid {
				return e, true
			}
		}
		return Entry{}, false
	}
	a, ok := find()
	if !ok || a.Ino == 0 {
		t.Fatalf("pid %d listed %v with inode %d", pid, ok, a.Ino)
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil || st.Ino != a.Ino {
		t.Fatalf("stat /proc/%d: inode %d (%v), listed %d", pid, st.Ino, err, a.Ino)
	}
	if b, _ := find(); b != a {
		t.Fatalf("second listing %+v, first %+v", b, a)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, ok := find(); ok {
		t.Fatalf("pid %d still listed after it was reaped", pid)
	}
}
