package runcstate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// State files written by the real runc of each series since 1.1, each
// for a busybox container on a hybrid host (testdata/README.md says how
// they were made): every field the checks read decodes, through the fast
// decoder and through encoding/json alike, and the device rules are kept.
func TestDecodeRuncSeries(t *testing.T) {
	for _, tc := range []struct {
		file, cgroup string
		rootless     bool // runc 1.4 omits false (omitempty)
	}{
		{"good_runc115_hybrid_state.json", "/cellguard-probe/c1", true},
		{"good_runc128_hybrid_state.json", "/cellguard-fixture/c1", true},
		{"good_runc137_hybrid_state.json", "/cellguard-fixture-v137/c1", true},
		{"good_runc144_hybrid_state.json", "/cellguard-fixture-v144/c1", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			sameDecode(t, b)
			st, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if st.ID != "c1" || st.InitProcessPid <= 0 || st.InitProcessStart == 0 || st.Created.IsZero() {
				t.Fatalf("id %q pid %d start %d created %v", st.ID, st.InitProcessPid, st.InitProcessStart, st.Created)
			}
			if len(st.CgroupPaths) != 10 || st.CgroupPaths["memory"] != "/sys/fs/cgroup/memory"+tc.cgroup ||
				st.CgroupPaths[""] != "/sys/fs/cgroup/unified"+tc.cgroup || st.CgroupPaths["name=systemd"] != "/sys/fs/cgroup/systemd"+tc.cgroup {
				t.Fatalf("cgroup_paths %v", st.CgroupPaths)
			}
			if st.Config.Cgroups == nil || st.Config.Cgroups.Path != tc.cgroup || !st.NewPidNS() {
				t.Fatalf("config %+v", st.Config)
			}
			rules, err := DecodeDevices(st.Config.Cgroups.Devices)
			if err != nil || len(rules) != 12 || rules[0] != (DeviceRule{Type: 'a', Major: -1, Minor: -1, Permissions: "rwm", Allow: false}) {
				t.Fatalf("device rules %+v (%v)", rules, err)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			if _, ok := raw["rootless"]; ok != tc.rootless {
				t.Errorf("rootless present %v, want %v", ok, tc.rootless)
			}
		})
	}
}

// runc 1.4 writes cgroup_paths with omitempty: a container without
// cgroups (rootless, no cgroup manager) has no member at all, which is no
// cgroups, not an error.
func TestDecodeRunc14WithoutCgroupPaths(t *testing.T) {
	b, err := os.ReadFile("testdata/good_runc144_hybrid_state.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "cgroup_paths")
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	sameDecode(t, b)
	st, err := Decode(b)
	if err != nil || st.CgroupPaths != nil || st.InitProcessPid <= 0 {
		t.Fatalf("decoded %+v, %v", st, err)
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
	write(t, root+"/run/docker/runtime-runc/moby/d1/state.json", state("d1"))
	crun, err := os.ReadFile("testdata/good_crun181_hybrid_status")
	if err != nil {
		t.Fatal(err)
	}
	write(t, root+"/run/crun/p1/status", string(crun))
	write(t, root+"/run/crun/p1/exec.fifo", "")
	write(t, root+"/run/containerd/runc/k8s.io/kc/status", string(crun))

	d, err := Discover(root, append(StandardRoots(), "/var/vcap/sys/run/bpm-runc"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Container{}
	for _, c := range d.Containers {
		got[c.Runtime+":"+c.Name()] = c
	}
	for _, want := range []string{"runc:g1", "runc:g2", "containerd:garden/h1", "containerd:k8s.io/k1", "bpm:bpm-garden",
		"docker:d1", "crun:p1", "crun:k8s.io/kc"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	if len(d.Containers) != 8 {
		t.Errorf("found %d containers", len(d.Containers))
	}
	if p1 := got["crun:p1"]; p1.CgroupPath != "/cellguard-fixture-crun/p1" || !p1.Created || p1.State.InitProcessPid != 65 {
		t.Errorf("crun container %+v", p1)
	}
	if !got["runc:g2"].Created || got["runc:g1"].Created {
		t.Error("exec.fifo marks created containers only")
	}
	if len(d.Problems) != 1 || filepath.Base(filepath.Dir(d.Problems[0].Path)) != "broken" {
		t.Errorf("problems %v", d.Problems)
	}
	if len(d.Roots) != 5 {
		t.Errorf("roots %v", d.Roots)
	}
	wantRuntimes := []Runtime{{"containerd", "/run/containerd/runc", 3}, {"runc", "/run/runc", 2},
		{"docker", DockerRoot, 1}, {"crun", CrunRoot, 1}, {"bpm", "/var/vcap/sys/run/bpm-runc", 1}}
	if !reflect.DeepEqual(d.Runtimes, wantRuntimes) {
		t.Errorf("runtimes %+v, want %+v", d.Runtimes, wantRuntimes)
	}

	d, err = Discover(root, []string{"/run/containerd/runc", "/no/such/root"}, []string{"garden"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Containers) != 1 || d.Containers[0].Name() != "garden/h1" {
		t.Fatalf("namespace filter: %+v", d.Containers)
	}
	if !reflect.DeepEqual(d.Searched, []string{"/run/containerd/runc", "/no/such/root"}) {
		t.Errorf("searched %v", d.Searched)
	}
}

// crun's status file as crun 1.8.1 wrote it (format: containers/crun
// src/libcrun/status.c), with and without the OCI config.json crun copies
// beside it (its namespaces as `crun spec` writes them).
func TestDecodeCrun(t *testing.T) {
	b, err := os.ReadFile("testdata/good_crun181_hybrid_status")
	if err != nil {
		t.Fatal(err)
	}
	cfg := []byte(`{"ociVersion":"1.0.0","linux":{"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}`)
	st, err := DecodeCrun("p1", b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "p1" || st.InitProcessPid != 65 || st.InitProcessStart != 856095 || st.Config.Cgroups.Path != "/cellguard-fixture-crun/p1" {
		t.Fatalf("decoded %+v", st)
	}
	if !st.NewPidNS() || st.Created.IsZero() {
		t.Fatalf("pid namespace %v, created %v", st.NewPidNS(), st.Created)
	}
	if st, err = DecodeCrun("p1", b, nil); err != nil || st.HasPidNS() {
		t.Fatalf("without config.json: %+v %v", st, err)
	}
	for _, bad := range []string{`{"cgroup-path": "/x"}`, `{"pid": "1"}`, `[`} {
		if _, err := DecodeCrun("p1", []byte(bad), nil); err == nil {
			t.Errorf("DecodeCrun(%s) accepted", bad)
		}
	}
}
