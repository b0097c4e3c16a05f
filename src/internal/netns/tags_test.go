package netns

import "testing"

// The probing thread's cgroup directory: the mount of the hierarchy in
// this mount namespace, and the cgroup path relative to that mount's root;
// a path the mount does not show, or one that climbs out ("/../.." is how
// /proc shows a holder outside cellguard's cgroup namespace), is refused.
func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		name, mnt, root, cg, want string
		ok                        bool
	}{
		{"host mount", "/sys/fs/cgroup/net_cls,net_prio", "/", "/nats-api-access", "/sys/fs/cgroup/net_cls,net_prio/nats-api-access", true},
		{"root cgroup", "/sys/fs/cgroup/net_cls,net_prio", "/", "/", "/sys/fs/cgroup/net_cls,net_prio", true},
		{"mount of a subtree", "/sys/fs/cgroup/net_cls", "/box", "/box/nats-api-access", "/sys/fs/cgroup/net_cls/nats-api-access", true},
		{"the subtree's root", "/sys/fs/cgroup/net_cls", "/box", "/box", "/sys/fs/cgroup/net_cls", true},
		{"outside the subtree", "/sys/fs/cgroup/net_cls", "/box", "/other", "", false},
		{"a sibling sharing the prefix", "/sys/fs/cgroup/net_cls", "/box", "/boxer", "", false},
		{"climbing out", "/sys/fs/cgroup/net_cls", "/", "/../../etc", "", false},
		{"relative", "/sys/fs/cgroup/net_cls", "/", "nats", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := under(tc.mnt, tc.root, tc.cg)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("under(%q, %q, %q) = %q, %v; want %q, %v", tc.mnt, tc.root, tc.cg, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A v1 mount is found by a controller in its super options, whatever its
// mount point is called; v2 and named hierarchies are not it, and escaped
// mount points are unescaped.
func TestV1Mount(t *testing.T) {
	mi := []byte(`35 24 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
36 25 0:31 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,xattr,name=systemd
44 25 0:39 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid shared:20 - cgroup cgroup rw,net_cls,net_prio
`)
	mnt, root, ok := v1Mount(mi, "net_prio")
	if !ok || mnt != "/sys/fs/cgroup/net_cls,net_prio" || root != "/" {
		t.Fatalf("net_prio: %q %q %v", mnt, root, ok)
	}
	if _, _, ok := v1Mount(mi, "systemd"); ok {
		t.Fatal("found a named hierarchy by a controller name")
	}
	if _, _, ok := v1Mount(mi, "net"); ok {
		t.Fatal("found a controller by a prefix")
	}
	mnt, root, ok = v1Mount([]byte(`91 30 0:39 /box /tmp/my\040cgroups rw - cgroup cgroup rw,net_prio,net_cls`), "net_cls")
	if !ok || mnt != "/tmp/my cgroups" || root != "/box" {
		t.Fatalf("escaped: %q %q %v", mnt, root, ok)
	}
}
