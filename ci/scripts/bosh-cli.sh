#!/usr/bin/env bash
# Prints the path of a bosh CLI v7.9.12, building it from the Go module proxy
# (pinned by spec/go.mod + spec/go.sum) the first time. ~1m20s cold and a
# 1.1 GB module cache; later calls reuse the binary.
set -euo pipefail

# shellcheck source=lib/pinned-tool.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/pinned-tool.sh"
version=7.9.12
pinned_tool "${BOSH_BIN:-/var/tmp/cellguard-tools/bosh}" "version ${version}" --version \
  -ldflags "-X github.com/cloudfoundry/bosh-cli/v7/cmd.VersionLabel=${version}" github.com/cloudfoundry/bosh-cli/v7
