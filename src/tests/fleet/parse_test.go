package fleet

import (
	"encoding/json"
	"reflect"
	"testing"
)

// taskOutput is bosh-cli's output of a real cold deploy on the lab's
// director (2026-12-02, trimmed), and two update lines in the form the
// director's "Updating instance" stage (tagged with the group) takes.
const taskOutput = `Using environment 'https://10.244.0.1:25555' as client 'admin'
Task 4 | 09:43:21 | Preparing package compilation: Finding packages to compile (00:00:01)
Task 4 | 09:43:22 | Compiling packages: golang-1-linux/50065b595ef88749f2eb2051694fb62775a1c9e0c3711b6ebd6d2367a2c1d6d8
Task 4 | 09:43:22 | Compiling packages: garden-standin/eb1275dcaed621aae815430bed724ba0c2512a6517f38a3b5e9f213a138d8bae (00:04:05)
Task 4 | 09:48:51 | Compiling packages: golang-1-linux/50065b595ef88749f2eb2051694fb62775a1c9e0c3711b6ebd6d2367a2c1d6d8 (00:05:29)
Task 4 | 09:48:52 | Compiling packages: cellguard/aea4827c3a9b18159107e77b733f70d366be9cf9986e438bffb3c85eaa698bee (00:12:21)
Task 4 | 10:07:36 | Creating missing vms: cell/b9367d5d-e169-41df-ac5f-246c414d9070 (1) (00:05:40)
                  L Error: Action Failed get_task: Task e04a2a2b result: Updating certificates with retries
Task 5 | 10:20:01 | Updating instance cell: cell/7ea3ba64-6215-4cb1-9eca-3fa6af5ff9c3 (0) (canary) (00:00:31)
Task 5 | 10:20:32 | Updating instance cell: cell/5d9a3d8b-ebb6-469e-8397-a265ba9465dd (2) (00:00:09)
                  L Error: Action Failed get_task: Task 1 result: 1 of 2 drain scripts failed. Failed Jobs: cellguard.

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
	lines := taskLines(taskOutput)
	if len(lines) != 10 || lines[len(lines)-1] != "L Error: Action Failed get_task: Task 1 result: 1 of 2 drain scripts failed. Failed Jobs: cellguard." {
		t.Errorf("taskLines = %d lines, last %q; want the 8 events and 2 errors, the drain's last", len(lines), lines[len(lines)-1])
	}
}

// TestCPIConfig: the CPI's config behind a director is built from env.json:
// the lab's netns and bridge, NATS as the mbus, the blobstore bound in.
func TestCPIConfig(t *testing.T) {
	e := Env{Netns: "/run/netns/cellguard-lab-x", Bridge: "cgbr0", Gateway: "10.244.0.1", CIDR: "10.244.0.0/24",
		NatsURL: "nats://10.244.0.1:4222", BlobstorePath: "/state/blobstore"}
	b, err := e.CPIConfig("/w/sdbox.sh", "/w/cpi-state", "fleet")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Network   map[string]string `json:"network"`
		Bind      bool              `json:"blobstore_bind"`
		MbusListn *string           `json:"mbus_listen"`
		Agent     struct {
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
	if c.Network["netns"] != e.Netns || c.Network["bridge"] != "cgbr0" || !c.Bind || c.MbusListn != nil ||
		c.Agent.Mbus != e.NatsURL || c.Agent.Blobstore.Provider != "local" || c.Agent.Blobstore.Options["blobstore_path"] != e.BlobstorePath {
		t.Errorf("CPI config = %s", b)
	}
	if r, err := e.Reserved(); err != nil || r != "10.244.0.2-10.244.0.9" {
		t.Errorf("Reserved = %q, %v", r, err)
	}
	if _, err := (Env{CIDR: "10.0.0.0/16"}).Reserved(); err == nil {
		t.Errorf("Reserved of a /16: want an error")
	}
}
