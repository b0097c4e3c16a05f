package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
)

// VM is one of the nspawn CPI's VMs, found through the CPI's state: the
// director's metadata (set_vm_metadata) says which instance it is.
type VM struct {
	CID     string
	Box     string
	InitPID string
	IP      string
	Name    string // instance group/uuid, as the director names it
	// Deployment is the director's deployment of the instance: a shape's
	// lanes are deployments of their own on one director.
	Deployment string
	Job        string // instance group
	Index      string
	Dir        string
	Metadata   map[string]string
}

// VMs lists the CPI's VMs in state (its state_dir), by instance group and index.
func VMs(state string) ([]VM, error) {
	dirs, err := filepath.Glob(filepath.Join(state, "vms", "vm-*"))
	if err != nil {
		return nil, fmt.Errorf("list vms in %s: %w", state, err)
	}
	var vms []VM
	for _, d := range dirs {
		vm := VM{CID: filepath.Base(d), Dir: d}
		vm.Box = strings.TrimSpace(readOr(filepath.Join(d, "box")))
		vm.InitPID = keyValue(readOr(filepath.Join(d, "sdbox.env")), "SDBOX_INIT_PID")
		vm.IP = keyValue(readOr(filepath.Join(d, "net.env")), "IP")
		if b, err := os.ReadFile(filepath.Join(d, "metadata.json")); err == nil {
			var m map[string]any
			if json.Unmarshal(b, &m) == nil {
				vm.Metadata = map[string]string{}
				for k, v := range m {
					vm.Metadata[k] = fmt.Sprint(v)
				}
				vm.Name, vm.Job, vm.Index = vm.Metadata["name"], vm.Metadata["job"], vm.Metadata["index"]
				vm.Deployment = vm.Metadata["deployment"]
			}
		}
		vms = append(vms, vm)
	}
	sort.Slice(vms, func(i, j int) bool {
		if vms[i].Job != vms[j].Job {
			return vms[i].Job < vms[j].Job
		}
		return vms[i].Index < vms[j].Index
	})
	return vms, nil
}

// Exec runs args in the VM (all its namespaces): the test's own hand on the
// machine, as a fault injector would have it, never the operator's way in
// (that is bosh ssh).
func (vm VM) Exec(ctx context.Context, args ...string) (string, error) {
	if vm.InitPID == "" {
		return "", fmt.Errorf("vm %s (%s) has no init pid", vm.CID, vm.Name)
	}
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"-t", vm.InitPID, "-a", "--"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("in vm %s (%s): %s: %w: %s", vm.CID, vm.Name, strings.Join(args, " "), err, boshlab.LastLines(string(out), 4))
	}
	return string(out), nil
}

func keyValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}
