package garden

import (
	"slices"
	"testing"
)

// The box's init in the failing run: net_cls,net_prio was made after its
// boot (hierarchy 16, at its root), so the box mounts it nowhere.
const boxCgroup = `16:net_cls,net_prio:/
9:name=systemd:/cellguard-sdbox-ghier-16786/payload/init.scope
8:pids:/cellguard-sdbox-ghier-16786/init.scope
4:memory:/cellguard-sdbox-ghier-16786
2:cpuacct:/cellguard-sdbox-ghier-16786
1:cpu:/cellguard-sdbox-ghier-16786
0::/cellguard-sdbox-ghier-16786/payload
`

const boxMountinfo = `250 249 0:60 / /sys/fs/cgroup ro,nosuid,nodev,noexec - tmpfs tmpfs ro,size=4096k,mode=755
251 250 0:36 /cellguard-sdbox-ghier-16786 /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,pids
252 250 0:32 /cellguard-sdbox-ghier-16786 /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,memory
253 250 0:30 /cellguard-sdbox-ghier-16786 /sys/fs/cgroup/cpuacct rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpuacct
254 250 0:29 /cellguard-sdbox-ghier-16786 /sys/fs/cgroup/cpu rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu
255 250 0:37 /cellguard-sdbox-ghier-16786/payload /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,xattr,name=systemd
256 249 0:70 / /tmp rw - tmpfs tmpfs rw
`

func TestUnmountedV1NamesAHierarchyMadeAfterTheBoot(t *testing.T) {
	got, err := UnmountedV1([]byte(boxCgroup), []byte(boxMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"net_cls", "net_prio"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	withIt := boxMountinfo + "257 250 0:71 /cellguard-sdbox-ghier-16786 /sys/fs/cgroup/net_cls,net_prio rw,relatime - cgroup cgroup rw,net_cls,net_prio\n"
	if got, err := UnmountedV1([]byte(boxCgroup), []byte(withIt)); err != nil || len(got) != 0 {
		t.Fatalf("with the hierarchy mounted: %v %v", got, err)
	}
	// a cgroup2 mount or a tmpfs whose options name a controller is no v1 mount
	fake := boxMountinfo + "258 249 0:72 / /mnt rw - tmpfs tmpfs rw,net_cls,net_prio\n"
	if got, _ := UnmountedV1([]byte(boxCgroup), []byte(fake)); len(got) != 2 {
		t.Fatalf("a tmpfs counted as the hierarchy's mount: %v", got)
	}
	if _, err := UnmountedV1([]byte("garbage\n"), []byte(boxMountinfo)); err == nil {
		t.Fatal("a malformed /proc/PID/cgroup was judged")
	}
}
