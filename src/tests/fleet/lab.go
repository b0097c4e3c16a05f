package fleet

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boshlab"
)

// cpiConfigFor is the nspawn CPI's config behind this director: VMs on the
// lab's bridge, the director's NATS as mbus, its local blobstore bound in,
// and the shape's nspawnArgs.
func cpiConfigFor(e boshlab.Env, sdbox, state, boxPrefix, nspawnArgs string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"sdbox": sdbox, "state_dir": state, "box_prefix": boxPrefix, "nspawn_args": nspawnArgs,
		"network":        map[string]any{"netns": e.Netns, "bridge": e.Bridge},
		"blobstore_bind": true,
		"agent": map[string]any{
			"mbus": e.NatsURL, "ntp": []string{},
			"blobstore": map[string]any{"provider": "local", "options": map[string]any{"blobstore_path": e.BlobstorePath}},
		},
	}, "", "  ")
}

// reserved is the cloud config's reserved range: .2-.9 of the lab's /24.
func reserved(e boshlab.Env) (string, error) {
	base, ok := strings.CutSuffix(e.CIDR, ".0/24")
	if !ok {
		return "", fmt.Errorf("lab cidr %q: want a /24 ending in .0", e.CIDR)
	}
	return base + ".2-" + base + ".9", nil
}
