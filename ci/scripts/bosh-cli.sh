#!/usr/bin/env bash
# Prints the path of a bosh CLI v7.9.12, building it from the Go module proxy
# (pinned by spec/go.mod + spec/go.sum) the first time. ~1m20s cold and a
# 1.1 GB module cache; later calls reuse the binary.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version=7.9.12
bin="${BOSH_BIN:-/var/tmp/cellguard-tools/bosh}"

if [ -x "${bin}" ] && [ "$("${bin}" --version 2>/dev/null | head -n1)" = "version ${version}" ]; then
  echo "${bin}"
  exit 0
fi

mkdir -p "$(dirname "${bin}")"
echo "building bosh-cli ${version} into ${bin}" >&2
(
  cd "${repo}/spec"
  go build -mod=mod -ldflags "-X github.com/cloudfoundry/bosh-cli/v7/cmd.VersionLabel=${version}" \
    -o "${bin}.tmp.$$" github.com/cloudfoundry/bosh-cli/v7
) >&2
mv "${bin}.tmp.$$" "${bin}"
echo "${bin}"
