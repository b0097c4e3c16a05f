package runcstate

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The cache's Discover against a full one, after every step of a
// randomized sequence of what runtimes do to their roots: containers
// created (by runc and by containerd's shim, some left created with
// exec.fifo), started (exec.fifo removed), their state rewritten as runc
// does (a new file renamed over the old) or in place with another size,
// broken, and deleted when they exit. Every step must give the same
// Discovery, and a step decodes only the files it changed.
func TestCacheAgreesWithFullDiscover(t *testing.T) {
	tmpl, err := os.ReadFile("testdata/good_runc115_hybrid_state.json")
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{"/run/runc", "/run/containerd/runc"}
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 25))
			root := t.TempDir()
			var live []string // container directories under root
			n := 0
			state := func(id string) []byte {
				s := strings.Replace(string(tmpl), `"id":"c1"`, `"id":"`+id+`"`, 1)
				s = strings.Replace(s, `"init_process_pid":9026`, fmt.Sprintf(`"init_process_pid":%d`, 1000+rng.IntN(60000)), 1)
				return []byte(s)
			}
			replace := func(dir string, b []byte) { // runc's way: a new file renamed over the old
				tmp := filepath.Join(dir, ".tmp-state")
				if err := os.WriteFile(tmp, b, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
					t.Fatal(err)
				}
			}
			c := &Cache{}
			for step := 0; step < 150; step++ {
				op := rng.IntN(6)
				if len(live) == 0 {
					op = 0
				}
				var changed int
				switch op {
				case 0: // create
					n++
					id := fmt.Sprintf("c%d-%s", n, strings.Repeat("x", rng.IntN(8)))
					dir := filepath.Join(root, "run/runc", id)
					if rng.IntN(2) == 0 {
						dir = filepath.Join(root, "run/containerd/runc/garden", id)
					}
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if rng.IntN(3) == 0 {
						write(t, filepath.Join(dir, "exec.fifo"), "")
					}
					replace(dir, state(id))
					live = append(live, dir)
					changed = 1
				case 1: // start: exec.fifo goes
					os.Remove(filepath.Join(live[rng.IntN(len(live))], "exec.fifo"))
				case 2: // rewritten as runc does
					dir := live[rng.IntN(len(live))]
					replace(dir, state(filepath.Base(dir)))
					changed = 1
				case 3: // rewritten in place, another size
					dir := live[rng.IntN(len(live))]
					b, _ := os.ReadFile(filepath.Join(dir, "state.json"))
					write(t, filepath.Join(dir, "state.json"), string(b)+strings.Repeat(" ", 1+rng.IntN(4)))
					changed = 1
				case 4: // broken
					write(t, filepath.Join(live[rng.IntN(len(live))], "state.json"), `{"id": `)
				case 5: // exits: deleted
					i := rng.IntN(len(live))
					if err := os.RemoveAll(live[i]); err != nil {
						t.Fatal(err)
					}
					live = append(live[:i], live[i+1:]...)
				}
				full, err := Discover(root, roots, nil)
				if err != nil {
					t.Fatal(err)
				}
				inc, err := c.Discover(root, roots, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(full, inc) {
					t.Fatalf("step %d (op %d): the cache's Discovery differs from a full one:\nfull %+v\ncache %+v", step, op, full, inc)
				}
				if c.Decoded > changed+len(full.Problems) {
					t.Fatalf("step %d (op %d): decoded %d files, changed %d (problems %d)", step, op, c.Decoded, changed, len(full.Problems))
				}
			}
		})
	}
}

// A fork starts from its cache's record: it decodes only the files new or
// changed since, forks Discover at the same time without touching each
// other or the cache (run with -race), and the cache's own record is the
// one it had (snapshot.Host.Rediscover's use: two checks read the states
// again at once, after the scan that read them).
func TestCacheForksDiscoverAtOnce(t *testing.T) {
	tmpl, err := os.ReadFile("testdata/good_runc115_hybrid_state.json")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	put := func(id string) {
		dir := filepath.Join(root, "run/runc", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "state.json"), strings.Replace(string(tmpl), `"id":"c1"`, `"id":"`+id+`"`, 1))
	}
	for i := range 20 {
		put(fmt.Sprint("c", i))
	}
	roots := []string{"/run/runc"}
	c := &Cache{}
	if _, err := c.Discover(root, roots, nil); err != nil || c.Decoded != 20 {
		t.Fatalf("first Discover: decoded %d (%v), want 20", c.Decoded, err)
	}
	put("late") // a container created after the scan read the states
	forks := make([]*Cache, 4)
	found := make([]*Discovery, len(forks))
	errs := make([]error, len(forks))
	done := make(chan int)
	for i := range forks {
		forks[i] = c.Fork()
		go func() {
			found[i], errs[i] = forks[i].Discover(root, roots, nil)
			done <- i
		}()
	}
	for range forks {
		<-done
	}
	for i, f := range forks {
		if errs[i] != nil || f.Decoded != 1 || len(found[i].Containers) != 21 {
			t.Errorf("fork %d: decoded %d, found %d containers (%v); want the late one decoded alone, 21 found", i, f.Decoded, len(found[i].Containers), errs[i])
		}
	}
	if len(c.files) != 20 {
		t.Errorf("the cache's record holds %d files after its forks' Discovers, want its own 20", len(c.files))
	}
	if _, err := c.Discover(root, roots, nil); err != nil || c.Decoded != 1 {
		t.Errorf("the cache's next Discover decoded %d (%v), want the late one alone", c.Decoded, err)
	}
}
