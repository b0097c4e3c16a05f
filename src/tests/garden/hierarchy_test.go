package garden

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// TestSeedEraCreatesAfterAnotherTestMadeAHierarchy is the race behind a
// fresh clone's "Garden create c1: ... cgroups: cannot find cgroup mount
// destination: unknown" in TestSeed000AsItHappened. A v1 hierarchy made
// after the box booted (a stemcell box of src/tests/bosh, or the netns
// tests, beside this package in go test -p 2) is listed in every process's
// /proc/PID/cgroup, the box's too, yet mounted nowhere in the box. The 2020
// Garden's containerd (runtime v1) loads a new task's cgroups from its init's
// /proc/PID/cgroup and wants a mount for each line (containerd v1.6.20
// runtime/v1/linux/task.go newTask: cgroups.Load(cgroups.V1,
// cgroups.PidPath(pid)); containerd/cgroups v1.0.4 paths.go existingPath,
// utils.go getCgroupDestination), so the create fails. Here this test makes
// the hierarchy itself, as those tests do, between Garden's start and the
// create.
func TestSeedEraCreatesAfterAnotherTestMadeAHierarchy(t *testing.T) {
	sdbox.RequireSuite(t, "xenial")
	box := bootBox(t, "ghier", xenialOptions()...)
	g := garden.Start(t, box, garden.SeedEra, garden.InMonitUnit)
	set := netClsHierarchy(t)
	t.Logf("another test's net_cls cgroup in hierarchy %s; the box's init lists: %s", set,
		strings.TrimSpace(string(mustRead(t, "/proc/"+strconv.Itoa(box.InitPID)+"/cgroup"))))
	g.Create(t, "c1")
}

// netClsHierarchy does what a stemcell box (sdbox.sh v1x-join) and the netns
// tests do: in a mount namespace of its own it mounts net_cls's v1
// hierarchy, which makes it when there is none, and leaves a cgroup in it,
// which keeps it after the unmount. It returns the hierarchy's controllers
// and removes the cgroup when the test ends.
func netClsHierarchy(t *testing.T) string {
	t.Helper()
	set := "net_cls,net_prio" // as systemd joins them, and as those tests make it
	for _, l := range strings.Split(string(mustRead(t, "/proc/cgroups")), "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == "net_cls" && f[1] != "0" {
			set = controllersOf(t, f[1])
		}
	}
	name := "cellguard-ghier-" + strconv.Itoa(os.Getpid())
	inHierarchy := func(script string) error {
		dir, err := os.MkdirTemp("", "cellguard-ghier-")
		if err != nil {
			return err
		}
		defer os.Remove(dir)
		out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
			`set -e; mount -t cgroup -o "$0" cgroup "$1"; cd "$1"; `+script, set, dir, name).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", script, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := inHierarchy(`mkdir "$2"`); err != nil {
		t.Fatalf("make a net_cls cgroup: %v", err)
	}
	t.Cleanup(func() {
		var err error
		for try := 0; try < 50; try++ {
			if err = inHierarchy(`[ ! -d "$2" ] || rmdir "$2"`); err == nil {
				// the hierarchy goes at an unmount that finds no child cgroup
				inHierarchy("true") //nolint:errcheck // best effort, as sdbox.sh stop
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("remove net_cls cgroup %s: %v", name, err)
	})
	return set
}

// controllersOf returns the controllers of hierarchy id, joined as mount -o
// wants them.
func controllersOf(t *testing.T, id string) string {
	t.Helper()
	var cs []string
	sc := bufio.NewScanner(strings.NewReader(string(mustRead(t, "/proc/cgroups"))))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[1] == id {
			cs = append(cs, f[0])
		}
	}
	return strings.Join(cs, ",")
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
