package fleet

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
)

// taskOutput is bosh-cli's output of a real cold deploy on the lab's
// director (2026-12-02, trimmed), then of run 4's blocked rollout (task 13,
// trimmed, uuids of the first): the canary updated, the next cell's drain
// failed.
const taskOutput = `Using environment 'https://10.244.0.1:25555' as client 'admin'
Task 4 | 09:43:21 | Preparing package compilation: Finding packages to compile (00:00:01)
Task 4 | 09:43:22 | Compiling packages: golang-1-linux/50065b595ef88749f2eb2051694fb62775a1c9e0c3711b6ebd6d2367a2c1d6d8
Task 4 | 09:43:22 | Compiling packages: garden-standin/eb1275dcaed621aae815430bed724ba0c2512a6517f38a3b5e9f213a138d8bae (00:04:05)
Task 4 | 09:48:51 | Compiling packages: golang-1-linux/50065b595ef88749f2eb2051694fb62775a1c9e0c3711b6ebd6d2367a2c1d6d8 (00:05:29)
Task 4 | 09:48:52 | Compiling packages: cellguard/aea4827c3a9b18159107e77b733f70d366be9cf9986e438bffb3c85eaa698bee (00:12:21)
Task 4 | 10:07:36 | Creating missing vms: cell/b9367d5d-e169-41df-ac5f-246c414d9070 (1) (00:05:40)
                  L Error: Action Failed get_task: Task e04a2a2b result: Updating certificates with retries
Task 13 | 14:40:28 | Updating instance cell: cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3 (0) (canary)
Task 13 | 14:40:29 | L executing drain: cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3 (0) (canary)
Task 13 | 14:40:36 | L executing pre-start: cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3 (0) (canary)
Task 13 | 14:40:46 | L executing post-start: cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3 (0) (canary) (00:00:18)
Task 13 | 14:40:46 | Updating instance cell: cell/5d9a3d8b-ebb6-469e-8397-a265ba9465dd (2)
Task 13 | 14:40:47 | L executing drain: cell/5d9a3d8b-ebb6-469e-8397-a265ba9465dd (2) (00:00:04)
                   L Error: Action Failed get_task: Task a031ea93-4906-4db6-43dd-5f83768f2ab0 result: 1 of 2 drain scripts failed. Failed Jobs: cellguard. Successful Jobs: garden.

Task 4 Started  Wed Dec  2 09:43:11 UTC 2026
Exit code 1
`

// TestTaskOutput: what the scenarios read from a task's output. A compile
// counts once, when it finished (the line with its duration); the cells
// updated are named in order, each once.
func TestTaskOutput(t *testing.T) {
	counts := map[string]int{}
	for _, m := range compileRE.FindAllStringSubmatch(taskOutput, -1) {
		counts[m[1]]++
	}
	if want := map[string]int{"golang-1-linux": 1, "garden-standin": 1, "cellguard": 1}; !reflect.DeepEqual(counts, want) {
		t.Errorf("compiled = %v; want %v", counts, want)
	}
	if got, want := updated(taskOutput), []string{"cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3", "cell/5d9a3d8b-ebb6-469e-8397-a265ba9465dd"}; !reflect.DeepEqual(got, want) {
		t.Errorf("updated = %v; want %v", got, want)
	}
	var done []string
	for _, m := range completedRE.FindAllStringSubmatch(taskOutput, -1) {
		done = append(done, m[1])
	}
	if want := []string{"cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3"}; !reflect.DeepEqual(done, want) {
		t.Errorf("completed = %v; want %v (the failed cell has no duration)", done, want)
	}
	lines := taskLines(taskOutput)
	if want := "L Error: Action Failed get_task: Task a031ea93-4906-4db6-43dd-5f83768f2ab0 result: 1 of 2 drain scripts failed. Failed Jobs: cellguard. Successful Jobs: garden."; len(lines) != 14 || lines[len(lines)-1] != want {
		t.Errorf("taskLines = %d lines, last %q; want the 12 events and 2 errors, the drain's last", len(lines), lines[len(lines)-1])
	}
}

// TestCPIConfig: the CPI's config behind a director is built from env.json:
// the lab's netns and bridge, NATS as the mbus, the blobstore bound in.
func TestCPIConfig(t *testing.T) {
	e := boshlab.Env{Netns: "/run/netns/cellguard-lab-x", Bridge: "cgbr0", Gateway: "10.244.0.1", CIDR: "10.244.0.0/24",
		NatsURL: "nats://10.244.0.1:4222", BlobstorePath: "/state/blobstore"}
	b, err := cpiConfigFor(e, "/w/sdbox.sh", "/w/cpi-state", "fleet", "--bind-ro=/w/garden-runtime:/usr/local/garden-runtime")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		NspawnArgs string            `json:"nspawn_args"`
		Network    map[string]string `json:"network"`
		Bind       bool              `json:"blobstore_bind"`
		MbusListn  *string           `json:"mbus_listen"`
		Agent      struct {
			Mbus      string `json:"mbus"`
			Blobstore struct {
				Provider string            `json:"provider"`
				Options  map[string]string `json:"options"`
			} `json:"blobstore"`
		} `json:"agent"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Network["netns"] != e.Netns || c.Network["bridge"] != "cgbr0" || !c.Bind || c.MbusListn != nil || c.NspawnArgs != "--bind-ro=/w/garden-runtime:/usr/local/garden-runtime" ||
		c.Agent.Mbus != e.NatsURL || c.Agent.Blobstore.Provider != "local" || c.Agent.Blobstore.Options["blobstore_path"] != e.BlobstorePath {
		t.Errorf("CPI config = %s", b)
	}
	if r, err := reserved(e); err != nil || r != "10.244.0.2-10.244.0.9" {
		t.Errorf("Reserved = %q, %v", r, err)
	}
	if _, err := reserved(boshlab.Env{CIDR: "10.0.0.0/16"}); err == nil {
		t.Errorf("Reserved of a /16: want an error")
	}
}

// TestReleaseKey: the compiled-release cache's key follows what compiling
// depends on (every package's and job's fingerprint, name and version) and
// nothing else bosh-cli writes into release.MF (the commit, its dirt).
func TestReleaseKey(t *testing.T) {
	mf := func(commit, pkg string) []byte {
		return []byte("name: cellguard\nversion: 0+dev.1\ncommit_hash: " + commit + "\nuncommitted_changes: true\n" +
			"jobs:\n- name: cellguard\n  version: aa\n  fingerprint: aa\n  sha1: sha256:11\n" +
			"packages:\n- name: cellguard\n  version: " + pkg + "\n  fingerprint: " + pkg + "\n  sha1: sha256:22\n  dependencies: []\n")
	}
	a, err := parseReleaseMF(mf("1234abcd", "bb"), "a.tgz")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "cellguard" || a.Version != "0+dev.1" || len(a.Key) != 16 {
		t.Errorf("release = %+v; want cellguard 0+dev.1 with a 16-hex key", a)
	}
	if b, _ := parseReleaseMF(mf("5678ef00", "bb"), "b.tgz"); b.Key != a.Key {
		t.Errorf("another commit, same content: key %s, was %s; want the same", b.Key, a.Key)
	}
	if c, _ := parseReleaseMF(mf("1234abcd", "cc"), "c.tgz"); c.Key == a.Key {
		t.Errorf("a changed package kept the key %s", a.Key)
	}
	if _, err := parseReleaseMF([]byte("name: x\nversion: 1\n"), "d.tgz"); err == nil {
		t.Errorf("a release.MF without fingerprints gave a key")
	}
}

// TestStemcellMF: build.sh writes the version double-quoted; the slug
// export-release takes is the bare value (ubuntu-jammy/457684b3ee24).
func TestStemcellMF(t *testing.T) {
	mf := []byte("---\nname: cellguard-nspawn-jammy\nversion: \"457684b3ee24\"\napi_version: 3\noperating_system: ubuntu-jammy\n")
	o, v, err := parseStemcellMF(mf, "s.tgz")
	if err != nil || o != "ubuntu-jammy" || v != "457684b3ee24" {
		t.Errorf("parseStemcellMF = %q, %q, %v; want ubuntu-jammy, 457684b3ee24", o, v, err)
	}
}

// TestGardenReads: what the garden scenario reads in a VM (a hybrid jammy
// VM's /proc/<pid>/cgroup, gclient's JSON lines, watch's /metrics).
func TestGardenReads(t *testing.T) {
	before := parseProcCgroups("== 41\n12:net_cls,net_prio:/\n7:blkio:/system.slice/garden.service/garden/c1\n1:name=systemd:/system.slice/garden.service/garden/c1\n0::/system.slice/garden.service/garden/c1\n== x\n== 42\n")
	if len(before) != 2 || before[41]["blkio"] != "/system.slice/garden.service/garden/c1" || before[41]["unified"] == "" || len(before[42]) != 0 {
		t.Fatalf("parseProcCgroups: %v", before)
	}
	after := map[string]string{"net_cls,net_prio": "/", "blkio": "/system.slice/garden.service", "name=systemd": before[41]["name=systemd"], "unified": before[41]["unified"]}
	moved := movedBetween(before[41], after)
	if len(moved) != 1 || moved["blkio"] != [2]string{"/system.slice/garden.service/garden/c1", "/system.slice/garden.service"} {
		t.Fatalf("movedBetween: %v", moved)
	}
	if d := describeMoved(nil); d != "nothing" {
		t.Errorf("describeMoved(nil) = %q", d)
	}
	res := gclientResults("Unauthorized access\n{\"op\":\"create\",\"handle\":\"c1\",\"seconds\":0.5}\n{\"op\":\"destroy\",\"handle\":\"c1\",\"seconds\":121.5,\"error\":\"timed out waiting for container kill\"}\n")
	if len(res) != 2 || res[1].Error == "" || res[0].Handle != "c1" {
		t.Fatalf("gclientResults: %+v", res)
	}
	if kv := keyValues("Delegate=yes\nControlGroup=/system.slice/garden.service\n"); kv["Delegate"] != "yes" || kv["ControlGroup"] != "/system.slice/garden.service" {
		t.Errorf("keyValues: %v", kv)
	}
}
