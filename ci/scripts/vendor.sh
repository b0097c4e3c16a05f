#!/usr/bin/env bash
# Writes src/vendor (`go mod vendor -o src/vendor`) from the root go.mod and
# go.sum: packages/cellguard's dependencies, committed so that a plain
# `bosh create-release` works in a checkout (BOSH packages only files under
# src/). vendor/modules.txt records every required module and version, so a
# dependency bump changes the package's fingerprint.
#
#   vendor.sh          write src/vendor
#   vendor.sh --check  exit 1 unless src/vendor equals what vendor.sh would write
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"
dst=src/vendor

# Build the new tree beside the old one (a dot dir: go ignores it) and swap.
tmp="$(mktemp -d "src/.vendor.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
if ! GOFLAGS=-mod=mod go mod vendor -o "${tmp}/vendor"; then
  echo "vendor: go mod vendor failed; if it asks for go mod tidy, go.mod does not match the imports: tidy and commit it" >&2
  exit 1
fi

if [ "${1:-}" = "--check" ]; then
  if ! diff -r "${tmp}/vendor" "${dst}" >/dev/null 2>&1; then
    echo "src/vendor is stale or missing: run make vendor and commit src/vendor" >&2
    diff -r "${tmp}/vendor" "${dst}" 2>&1 | head -n 20 >&2 || true
    exit 1
  fi
  echo "src/vendor matches go.mod and go.sum"
  exit 0
fi

rm -rf "${dst}"
mv "${tmp}/vendor" "${dst}"
echo "vendored $(grep -c '^# ' "${dst}/modules.txt") modules into ${dst}"
