package sysctl

import (
	"strings"
	"testing"
)

const ours = "# cellguard\nfs.inotify.max_user_watches = 524288\n"

// TestCheckExplainsDrift builds one sysctl.d layout per case and checks the
// verdict and the sentence an operator reads. The wanted value is 524288;
// the fake kernel holds `live`.
func TestCheckExplainsDrift(t *testing.T) {
	type file struct{ path, content, link string }
	testCases := []struct {
		name   string
		files  []file
		live   string
		status string
		want   []string // substrings of the explanation, in order
		boot   string   // expected BootFrom, when set
	}{
		{
			name:   "in force",
			files:  []file{{path: DefaultFile, content: ours}},
			live:   "524288",
			status: InForce,
			boot:   "/etc/sysctl.d/60-cellguard.conf:2",
		},
		{
			name: "later file sets it back",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/60-other.conf", content: "# tuned\n\nfs.inotify.max_user_watches=16384\n"},
			},
			live:   "16384",
			status: Drift,
			want: []string{
				"/etc/sysctl.d/60-other.conf:3 sets it back to 16384 after ours (60-cellguard.conf), so it wins at boot",
				"the live value 16384 is what /etc/sysctl.d/60-other.conf:3 sets",
			},
		},
		{
			name: "earlier file loses to ours",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/50-vendor.conf", content: "fs.inotify.max_user_watches = 8192\n"},
			},
			live:   "524288",
			status: InForce,
		},
		{
			// Order is by file name across directories: a /usr/lib file
			// named later wins over /etc's ours.
			name: "lexical order across directories",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/usr/lib/sysctl.d/90-distro.conf", content: "fs.inotify.max_user_watches = 65536\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"/usr/lib/sysctl.d/90-distro.conf:1 sets it back to 65536 after ours (60-cellguard.conf), so it wins at boot"},
		},
		{
			// Read order is by name, not directory: a /usr/lib file named
			// before ours is read first and loses.
			name: "vendor file named earlier loses to ours",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/usr/lib/sysctl.d/10-vendor.conf", content: "fs.inotify.max_user_watches = 8192\n"},
			},
			live:   "524288",
			status: InForce,
			boot:   "/etc/sysctl.d/60-cellguard.conf:2",
		},
		{
			name: "same name in /etc masks /usr/lib",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/usr/lib/sysctl.d/90-distro.conf", content: "fs.inotify.max_user_watches = 65536\n"},
				{path: "/etc/sysctl.d/90-distro.conf", content: "# local copy without the watch limit\n"},
			},
			live:   "524288",
			status: InForce,
		},
		{
			name: "/run masks /usr/local/lib",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/usr/local/lib/sysctl.d/80-x.conf", content: "fs.inotify.max_user_watches = 1\n"},
				{path: "/run/sysctl.d/80-x.conf", content: "fs.inotify.max_user_watches = 2\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"/run/sysctl.d/80-x.conf:1 sets it back to 2 after ours"},
		},
		{
			name: "/dev/null symlink masks a vendor file",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/usr/lib/sysctl.d/90-distro.conf", content: "fs.inotify.max_user_watches = 65536\n"},
				{path: "/etc/sysctl.d/90-distro.conf", link: "/dev/null"},
			},
			live:   "524288",
			status: InForce,
		},
		{
			name: "/etc/sysctl.conf is read last",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.conf", content: "fs.inotify.max_user_watches = 16384\n"},
				{path: "/etc/sysctl.d/zz-late.conf", content: "fs.inotify.max_user_watches = 524288\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"/etc/sysctl.conf:1 sets it to 16384 and is read last, after ours (60-cellguard.conf), so it wins at boot"},
		},
		{
			// Debian: /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf. It is
			// read once, at 99-, so zz-late.conf comes after it.
			name: "debian 99-sysctl.conf symlink",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.conf", content: "#\n#kernel.printk = 3 4 1 3\nfs.inotify.max_user_watches = 16384\n"},
				{path: "/etc/sysctl.d/99-sysctl.conf", link: "../sysctl.conf"},
			},
			live:   "16384",
			status: Drift,
			want: []string{
				"/etc/sysctl.d/99-sysctl.conf:3 (/etc/sysctl.conf) sets it back to 16384 after ours (60-cellguard.conf), so it wins at boot",
				"the live value 16384 is what /etc/sysctl.d/99-sysctl.conf:3 (/etc/sysctl.conf) sets",
			},
		},
		{
			name: "debian symlink read once, not again last",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.conf", content: "fs.inotify.max_user_watches = 16384\n"},
				{path: "/etc/sysctl.d/99-sysctl.conf", link: "/etc/sysctl.conf"},
				{path: "/etc/sysctl.d/zz-late.conf", content: "fs.inotify.max_user_watches = 524288\n"},
			},
			live:   "524288",
			status: InForce,
			boot:   "/etc/sysctl.d/zz-late.conf:1",
		},
		{
			name: "slash notation is the same key",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/70-slash.conf", content: "fs/inotify/max_user_watches = 4096\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"/etc/sysctl.d/70-slash.conf:1 sets it back to 4096"},
		},
		{
			name: "leading dash still assigns",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/70-dash.conf", content: "-fs.inotify.max_user_watches = 4096\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"/etc/sysctl.d/70-dash.conf:1 sets it back to 4096"},
		},
		{
			name: "dash without value cancels ours",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/70-dash.conf", content: "-fs.inotify.max_user_watches\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{`/etc/sysctl.d/70-dash.conf:1 ("-fs.inotify.max_user_watches" without a value) cancels every earlier assignment`},
		},
		{
			name: "explicit key shuts out a later glob",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/70-glob.conf", content: "fs.inotify.* = 1\n"},
			},
			live:   "524288",
			status: InForce,
		},
		{
			name: "glob wins when ours is missing",
			files: []file{
				{path: "/usr/lib/sysctl.d/70-glob.conf", content: "fs/inotify/max_user_* = 1\n"},
			},
			live:   "524288",
			status: BootDrift,
			want: []string{
				"/usr/lib/sysctl.d/70-glob.conf:1 sets it to 1 (glob fs.inotify.max_user_*) at boot and ours does not set it",
				"/etc/sysctl.d/60-cellguard.conf does not exist; run cellguard sysctl apply",
			},
		},
		{
			name:   "ours missing, nothing sets it",
			live:   "8192",
			status: Drift,
			want:   []string{"nothing sets it at boot: /etc/sysctl.d/60-cellguard.conf does not exist", "the live value is 8192"},
		},
		{
			name: "ours masked by the administrator",
			files: []file{
				{path: "/etc/sysctl.d/60-cellguard.conf", link: "/dev/null"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"nothing sets it at boot: /etc/sysctl.d/60-cellguard.conf is a symlink to /dev/null"},
		},
		{
			name: "ours stale",
			files: []file{
				{path: DefaultFile, content: "fs.inotify.max_user_watches = 8192\n"},
			},
			live:   "8192",
			status: Drift,
			want:   []string{"/etc/sysctl.d/60-cellguard.conf:1 sets 8192, not 524288: the file is stale"},
		},
		{
			name: "ours lacks the key",
			files: []file{
				{path: DefaultFile, content: "kernel.pid_max = 4194304\n"},
			},
			live:   "524288",
			status: BootDrift,
			want:   []string{"60-cellguard.conf does not set fs.inotify.max_user_watches; run cellguard sysctl apply"},
		},
		{
			name:   "changed at runtime",
			files:  []file{{path: DefaultFile, content: ours}},
			live:   "100",
			status: LiveDrift,
			want:   []string{"the live value is 100 although /etc/sysctl.d/60-cellguard.conf:2 sets 524288 at boot: systemd-sysctl has not run since, or something changed the key at runtime"},
		},
		{
			name: "later assignment in the same file wins",
			files: []file{
				{path: DefaultFile, content: ours},
				{path: "/etc/sysctl.d/70-twice.conf", content: "fs.inotify.max_user_watches = 1\nfs.inotify.max_user_watches = 524288\n"},
			},
			live:   "524288",
			status: InForce,
			boot:   "/etc/sysctl.d/70-twice.conf:2",
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			tr.key("fs.inotify.max_user_watches", tc.live, 0o644)
			for _, f := range tc.files {
				if f.link != "" {
					tr.Symlink(f.path, f.link)
				} else {
					tr.Write(f.path, f.content)
				}
			}
			rep, err := Check(tr.Root, profileOf("fs.inotify.max_user_watches=524288"))
			if err != nil {
				t.Fatal(err)
			}
			kc := rep.Keys[0]
			if kc.Status != tc.status || rep.InForce != (tc.status == InForce) {
				t.Fatalf("status %s (in force %v), want %s; %+v", kc.Status, rep.InForce, tc.status, kc)
			}
			rest := kc.Explanation
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("explanation %q\nlacks %q", kc.Explanation, w)
				}
				rest = rest[i+len(w):]
			}
			if tc.status == InForce && kc.Explanation != "" {
				t.Errorf("in force but explained: %q", kc.Explanation)
			}
			if tc.boot != "" && kc.BootFrom != tc.boot {
				t.Errorf("boot from %q, want %q", kc.BootFrom, tc.boot)
			}
		})
	}
}

func TestCheckMissingKeyAndFiles(t *testing.T) {
	tr := newTree(t)
	tr.key("kernel.pid_max", "4194304", 0o644)
	tr.Write(DefaultFile, "kernel.pid_max = 4194304\n")
	tr.Write("/usr/lib/sysctl.d/60-cellguard.conf", "kernel.pid_max = 1\n")
	rep, err := Check(tr.Root, profileOf("kernel.pid_max=4194304", "user.max_user_namespaces=63359"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.InForce || rep.Keys[0].Status != InForce || rep.Keys[1].Status != Missing {
		t.Fatalf("keys %+v", rep.Keys)
	}
	if d := rep.Drifted(); len(d) != 1 || d[0].Key != "user.max_user_namespaces" {
		t.Fatalf("drifted %+v", d)
	}
	var masked bool
	for _, f := range rep.Files {
		if f.Path == "/usr/lib/sysctl.d/60-cellguard.conf" && f.MaskedBy == DefaultFile {
			masked = true
		}
	}
	if !masked {
		t.Fatalf("files %+v should show the /usr/lib copy masked", rep.Files)
	}
}

// Check never writes: not the live values, not the sysctl.d files.
func TestCheckWritesNothing(t *testing.T) {
	tr := newTree(t)
	tr.key("fs.inotify.max_user_watches", "8192", 0o644)
	fk := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}}
	rep, err := Host{Root: tr.Root, Live: fk}.Check(profileOf("fs.inotify.max_user_watches=524288"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.InForce || len(fk.writes) != 0 {
		t.Fatalf("in force %v, writes %v", rep.InForce, fk.writes)
	}
	if _, ok := tr.Read(DefaultFile); ok {
		t.Fatal("check created the persisted file")
	}
}
