package update

import (
	"encoding/json"
	"fmt"

	"github.com/cloudfoundry/bosh-agent/v2/agentclient/applyspec"
)

// NextSpec is the apply spec the director sends for a configuration-only
// update: current (get_state's value, which carries the whole current apply
// spec besides job_state, vm, processes and the like) with the rendered
// templates archive and the configuration hash replaced. Packages, jobs and
// networks stay as they are.
func NextSpec(current json.RawMessage, archive applyspec.RenderedTemplatesArchiveSpec, configurationHash string) (applyspec.ApplySpec, error) {
	var s applyspec.ApplySpec
	if err := json.Unmarshal(current, &s); err != nil {
		return s, fmt.Errorf("decode current spec: %w", err)
	}
	if len(s.Job.Templates) == 0 {
		return s, fmt.Errorf("current spec has no jobs: nothing to update")
	}
	if archive.BlobstoreID == "" || archive.SHA1 == "" {
		return s, fmt.Errorf("rendered templates archive needs a blobstore id and a digest")
	}
	s.RenderedTemplatesArchive = archive
	s.ConfigurationHash = configurationHash
	return s, nil
}

// Address is the instance's IP in its first network (by name), which the
// templates see as spec.address.
func Address(s applyspec.ApplySpec) string {
	var first string
	for name := range s.Networks {
		if first == "" || name < first {
			first = name
		}
	}
	if m, ok := s.Networks[first].(map[string]interface{}); ok {
		if ip, ok := m["ip"].(string); ok {
			return ip
		}
	}
	return ""
}
