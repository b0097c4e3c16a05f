#!/usr/bin/env bash
# create-release offline, compile every package from the tarball as a compile
# VM would, run the binary; then keep a dev release tarball for the pipeline.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CI=true
make deps
make release-e2e
make release
out="${PWD}/../dev-release"
mkdir -p "${out}"
cp dev_releases/cellguard-dev.tgz "${out}/cellguard-$(git rev-parse --short HEAD 2>/dev/null || date +%s).tgz"
