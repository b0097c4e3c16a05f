package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// The files watched are the subtree_control of each container's cgroup
// and of every ancestor up to the root, each once; none on a hybrid host,
// where the controllers are v1's.
func TestSubtreeFiles(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 1, 500)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c2", Cgroup: "/garden/c2"}, 110, 1, 500)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c8", Cgroup: "/system.slice/c8"}, 120, 1, 500)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c7", Cgroup: "/c7"}, 130, 1, 500)
	snap, err := snapshot.Read(snapshot.Spec{Root: h.Root, RuntimeRoots: []string{"/run/runc"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range subtreeFiles(snap) {
		got = append(got, strings.TrimPrefix(f, filepath.Join(h.Root, "sys/fs/cgroup")))
	}
	want := "/c7/cgroup.subtree_control /cgroup.subtree_control /garden/c1/cgroup.subtree_control /garden/c2/cgroup.subtree_control " +
		"/garden/cgroup.subtree_control /system.slice/c8/cgroup.subtree_control /system.slice/cgroup.subtree_control"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("files:\n%s\nwant:\n%s", s, want)
	}

	hy := fakehost.New(t, cgroup.Hybrid)
	hy.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 1, 500)
	snap, err = snapshot.Read(snapshot.Spec{Root: hy.Root, RuntimeRoots: []string{"/run/runc"}})
	if err != nil {
		t.Fatal(err)
	}
	if fs := subtreeFiles(snap); len(fs) != 0 {
		t.Errorf("hybrid: files %q, want none", fs)
	}
}

func TestDiffWatched(t *testing.T) {
	add, remove := diffWatched(map[string]int{"/a": 1, "/b": 2, "/c": 3}, []string{"/d", "/b", "/a"})
	if strings.Join(add, ",") != "/d" || strings.Join(remove, ",") != "/c" {
		t.Errorf("add %q remove %q", add, remove)
	}
}

// readCheck reads the scan's host, as the real event checks do.
type readCheck struct {
	fakeCheck
	src *snapshot.Source
}

func (c *readCheck) Run(ctx context.Context) ([]validator.Finding, error) {
	if _, err := c.src.Get(); err != nil {
		return nil, err
	}
	return c.fakeCheck.Run(ctx)
}

// A write to the subtree_control of a container's parent, which systemd
// never announces, makes an event scan; so does one to the root's, while
// a write to a cgroup no container is below makes none. The files are
// real ones (a fixture tree), the inotify watch the kernel's.
func TestSubtreeControlWriteMakesAnEventScan(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 1, 500)
	cg := filepath.Join(h.Root, "sys/fs/cgroup")
	for _, d := range []string{"", "garden", "garden/c1", "other"} {
		h.Write(filepath.Join("sys/fs/cgroup", d, "cgroup.subtree_control"), "cpu io memory pids\n")
	}
	integrity := &readCheck{fakeCheck: fakeCheck{id: escapeCheck}}
	w := New(Config{
		Registry: func(src *snapshot.Source) []validator.Check {
			integrity.src = src
			return []validator.Check{integrity}
		},
		Read: func() (*snapshot.Host, error) {
			return snapshot.Read(snapshot.Spec{Root: h.Root, RuntimeRoots: []string{"/run/runc"}})
		},
		OnEvent: []string{escapeCheck},
		Period:  time.Hour,
		Logger:  lagertest.NewTestLogger("watch"),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	scans := func() float64 { return testutil.ToFloat64(w.m.Scans.WithLabelValues("subtree-control")) }
	waitFor(t, func() bool { return testutil.ToFloat64(w.m.Scans.WithLabelValues(TriggerStart)) == 1 })

	write := func(dir string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cg, dir, "cgroup.subtree_control"), []byte("-memory\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("other")
	time.Sleep(300 * time.Millisecond)
	if got := scans(); got != 0 {
		t.Fatalf("a write above no container made %v scans", got)
	}
	write("garden")
	waitFor(t, func() bool { return scans() == 1 })
	time.Sleep(300 * time.Millisecond) // past the settle scan
	write("")
	waitFor(t, func() bool { return scans() == 2 })
}
