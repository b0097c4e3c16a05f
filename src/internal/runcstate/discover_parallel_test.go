package runcstate

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestDiscoverManyContainers: loading on several goroutines finds every
// container once, sorted by path, and reports each bad state once, in
// directory order.
func TestDiscoverManyContainers(t *testing.T) {
	root := t.TempDir()
	var want, wantProblems []string
	for i := 0; i < 300; i++ {
		rr, ns := "/run/runc", ""
		if i%3 == 0 {
			rr, ns = "/run/containerd/runc", []string{"garden", "k8s.io"}[i%2]
		}
		dir := filepath.Join(root, rr, ns, fmt.Sprintf("c%03d", i))
		content := fmt.Sprintf(`{"id":"c%03d","init_process_pid":%d,"init_process_start":5}`, i, 1000+i)
		if i%50 == 7 {
			content = `{"id": ` // torn write
			wantProblems = append(wantProblems, filepath.Join(dir, "state.json"))
		} else {
			want = append(want, filepath.Join(dir, "state.json"))
		}
		write(t, filepath.Join(dir, "state.json"), content)
	}
	slices.Sort(want)
	slices.Sort(wantProblems) // directory order is name order here
	for run := 0; run < 3; run++ {
		d, err := Discover(root, []string{"/run/containerd/runc", "/run/runc"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got, gotProblems []string
		for _, c := range d.Containers {
			got = append(got, c.StatePath)
			if c.State.InitProcessPid < 1000 || c.State.ID != c.ID {
				t.Fatalf("%s decoded as %+v", c.StatePath, c.State)
			}
		}
		for _, p := range d.Problems {
			gotProblems = append(gotProblems, p.Path)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: %d containers, want %d", run, len(got), len(want))
		}
		if !slices.Equal(gotProblems, wantProblems) {
			t.Fatalf("run %d: problems %v, want %v", run, gotProblems, wantProblems)
		}
	}
}
