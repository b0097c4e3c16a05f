package fleet

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
)

// agentConfig is what both CPIs tell each VM's agent: the director's NATS
// as mbus and its local blobstore.
func agentConfig(e boshlab.Env) map[string]any {
	return map[string]any{
		"mbus": e.NatsURL, "ntp": []string{},
		"blobstore": map[string]any{"provider": "local", "options": map[string]any{"blobstore_path": e.BlobstorePath}},
	}
}

// cpiConfigFor is the nspawn CPI's config behind this director: VMs on the
// lab's bridge, the director's NATS as mbus, its local blobstore bound in,
// and the shape's nspawnArgs.
func cpiConfigFor(e boshlab.Env, sdbox, state, boxPrefix, nspawnArgs string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"sdbox": sdbox, "state_dir": state, "box_prefix": boxPrefix, "nspawn_args": nspawnArgs,
		"network":        map[string]any{"netns": e.Netns, "bridge": e.Bridge},
		"blobstore_bind": true,
		"agent":          agentConfig(e),
	}, "", "  ")
}

// The QEMU CPI's VMs, sized for this 2-core, 24 GiB machine shared with
// other runs: up to 4 VMs at once (the rollout lane's until 2026-12-07;
// 2 cells since 2026-12-08). -m 1536 with tb-size 256
// MiB (QEMU 7.2's default translation buffer is 1 GiB) keeps 4 VMs under
// about 7 GiB; one vCPU each, as 4 VMs under TCG already ask more than the
// 2 cores have. nice -5, not the CPI's -10 for a lone guest: four guests at
// -10 would outweigh the director and its compilation VM about 37 to 1 on
// two cores (a cold deploy compiles before it creates the VMs, but the box
// shapes' lanes compile beside them). At nice 0 the guests starved when
// they booted beside the box shapes' deploys: make test's noble deploy took
// 6m45s when its VMs came after the boxes' deploys (CI-Q, 2026-12-07) and
// 15m4s when they came at the same time (CI-R, load 27). At -5 a guest
// weighs three nice-0 tasks. (A cpu cgroup of their own for the guests
// was tried and withdrawn: src/tests/qemu/README.md.)
const (
	qemuMemoryMB = 1536
	qemuCPUs     = 1
	qemuTBSizeMB = 256
	qemuTCGNice  = -5
)

// qemuCPIConfigFor is the QEMU CPI's config behind this director: the same
// lab network and agent settings as the nspawn CPI's.
func qemuCPIConfigFor(e boshlab.Env, state string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"state_dir":      state,
		"network":        map[string]any{"netns": e.Netns, "bridge": e.Bridge},
		"blobstore_bind": true,
		"agent":          agentConfig(e),
		"qemu": map[string]any{"memory_mb": qemuMemoryMB, "cpus": qemuCPUs, "tb_size_mb": qemuTBSizeMB,
			"tcg_nice": qemuTCGNice},
	}, "", "  ")
}

// cpiConfigYAML is the director's cpi config naming both CPIs by their
// wrappers (exec_path: bosh v283.0.0's CpiConfig::Cpi, which otherwise
// looks in /var/vcap/jobs/<type>_cpi/bin/cpi). The cloud config's AZs
// name them (qemu-cloud-config-ops.yml).
func cpiConfigYAML(nspawnExec, qemuExec string) string {
	return fmt.Sprintf("cpis:\n- name: nspawn\n  type: nspawn\n  exec_path: %s\n- name: qemu\n  type: qemu\n  exec_path: %s\n", nspawnExec, qemuExec)
}

// reserved is the cloud config's reserved range: .2-.9 of the lab's /24.
func reserved(e boshlab.Env) (string, error) {
	base, ok := strings.CutSuffix(e.CIDR, ".0/24")
	if !ok {
		return "", fmt.Errorf("lab cidr %q: want a /24 ending in .0", e.CIDR)
	}
	return base + ".2-" + base + ".9", nil
}
