#!/usr/bin/env bash
# Prints the path of the bosh-agent that spec/go.mod pins (the version bosh-cli
# v7.9.12 requires: v2.759.0), building it from the Go module proxy the first
# time (CGO_ENABLED=0, the version stamped as upstream's bin/build does). The
# local stemcell (src/tests/bosh/stemcell) carries it. ~20 s with a warm module
# cache; later calls reuse the binary.
set -euo pipefail

# shellcheck source=lib/pinned-tool.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/pinned-tool.sh"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
module=github.com/cloudfoundry/bosh-agent/v2
version="$(cd "${repo}/spec" && go list -mod=mod -m -f '{{.Version}}' "${module}")"
version=${version#v}
CGO_ENABLED=0 pinned_tool "${BOSH_AGENT_BIN:-/var/tmp/cellguard-tools/bosh-agent}" "${version}" -v \
  -trimpath -ldflags "-X main.VersionLabel=${version}" "${module}/main"
