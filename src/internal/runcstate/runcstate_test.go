package runcstate

import (
	"os"
	"path/filepath"
	"testing"
)

// The fixture was written by Debian's runc 1.1.5 on a hybrid host (this
// project's dev machine) for a container with cgroupsPath /cellguard-probe/c1.
func TestDecodeRealRuncState(t *testing.T) {
	b, err := os.ReadFile("testdata/good_runc115_hybrid_state.json")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "c1" || st.InitProcessPid != 9026 || st.InitProcessStart != 32530 {
		t.Fatalf("got id=%q pid=%d start=%d", st.ID, st.InitProcessPid, st.InitProcessStart)
	}
	if got := st.CgroupPaths[""]; got != "/sys/fs/cgroup/unified/cellguard-probe/c1" {
		t.Fatalf(`cgroup_paths[""] = %q`, got)
	}
	if got := st.CgroupPaths["name=systemd"]; got != "/sys/fs/cgroup/systemd/cellguard-probe/c1" {
		t.Fatalf("cgroup_paths[name=systemd] = %q", got)
	}
	if st.Config.Cgroups == nil || st.Config.Cgroups.Path != "/cellguard-probe/c1" || st.Config.Cgroups.Systemd {
		t.Fatalf("config.cgroups = %+v", st.Config.Cgroups)
	}
	if !st.NewPidNS() || !st.HasPidNS() {
		t.Fatal("container has its own pid namespace")
	}
	if st.NamespacePaths["NEWPID"] != "/proc/9026/ns/pid" || st.Created.IsZero() {
		t.Fatalf("namespace_paths/created: %v %v", st.NamespacePaths, st.Created)
	}
}

func TestStartTimeForms(t *testing.T) {
	testCases := []struct {
		in      string
		want    StartTime
		wantErr bool
	}{
		{`{"init_process_start": 32530}`, 32530, false},
		{`{"init_process_start": "32530"}`, 32530, false}, // runc < 1.0.0-rc5
		{`{"init_process_start": ""}`, 0, false},
		{`{"init_process_start": null}`, 0, false},
		{`{"init_process_start": "x"}`, 0, true},
		{`{"init_process_start": -1}`, 0, true},
	}
	for _, tc := range testCases {
		st, err := Decode([]byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("Decode(%s) error %v", tc.in, err)
			continue
		}
		if err == nil && st.InitProcessStart != tc.want {
			t.Errorf("Decode(%s) start %d", tc.in, st.InitProcessStart)
		}
	}
}

func TestPidNamespaceForms(t *testing.T) {
	for _, tc := range []struct {
		in        string
		own, some bool
	}{
		{`{"config":{"namespaces":[{"type":"NEWPID","path":""}]}}`, true, true},
		{`{"config":{"namespaces":[{"type":"NEWPID","path":"/proc/7/ns/pid"}]}}`, false, true},
		{`{"config":{"namespaces":[{"type":"NEWNET","path":""}]}}`, false, false},
	} {
		st, err := Decode([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if st.NewPidNS() != tc.own || st.HasPidNS() != tc.some {
			t.Errorf("%s: own=%v some=%v", tc.in, st.NewPidNS(), st.HasPidNS())
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	state := func(id string) string { return `{"id":"` + id + `","init_process_pid":1,"init_process_start":5}` }
	write(t, root+"/run/runc/g1/state.json", state("g1"))
	write(t, root+"/run/runc/g2/state.json", state("g2"))
	write(t, root+"/run/runc/g2/exec.fifo", "")
	write(t, root+"/run/runc/broken/state.json", `{"id": `)
	if err := os.MkdirAll(root+"/run/runc/deleted-mid-scan", 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, root+"/run/containerd/runc/garden/h1/state.json", state("h1"))
	write(t, root+"/run/containerd/runc/k8s.io/k1/state.json", state("k1"))
	write(t, root+"/var/vcap/sys/run/bpm-runc/bpm-garden/state.json", state("bpm-garden"))

	d, err := Discover(root, append(StandardRoots(), "/var/vcap/sys/run/bpm-runc"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Container{}
	for _, c := range d.Containers {
		got[c.Runtime+":"+c.Name()] = c
	}
	for _, want := range []string{"runc:g1", "runc:g2", "containerd:garden/h1", "containerd:k8s.io/k1", "bpm:bpm-garden"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	if len(d.Containers) != 5 {
		t.Errorf("found %d containers", len(d.Containers))
	}
	if !got["runc:g2"].Created || got["runc:g1"].Created {
		t.Error("exec.fifo marks created containers only")
	}
	if len(d.Problems) != 1 || filepath.Base(filepath.Dir(d.Problems[0].Path)) != "broken" {
		t.Errorf("problems %v", d.Problems)
	}
	if len(d.Roots) != 3 {
		t.Errorf("roots %v", d.Roots)
	}

	d, err = Discover(root, []string{"/run/containerd/runc", "/no/such/root"}, []string{"garden"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Containers) != 1 || d.Containers[0].Name() != "garden/h1" {
		t.Fatalf("namespace filter: %+v", d.Containers)
	}
}
