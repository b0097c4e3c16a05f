#!/usr/bin/env bash
# Copies the root module's go.mod and go.sum, and `go mod vendor`s its
# dependencies, into src/_module: the package files packages/cellguard/spec
# lists. BOSH fingerprints only package files, so a copy there (not a
# pre_packaging step, not a symlink, not ../go.mod) is what makes a
# dependency bump change the package version.
#
#   sync-module.sh          write src/_module
#   sync-module.sh --check  exit 1 unless src/_module equals what a sync would write
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"
dst=src/_module

# Build the new copy beside the old one (a dot dir: go ignores it) and swap.
tmp="$(mktemp -d "src/.module.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
cp go.mod go.sum "${tmp}/"
if ! GOFLAGS=-mod=mod go mod vendor -o "${tmp}/vendor"; then
  echo "sync-module: go mod vendor failed; if it asks for go mod tidy, go.mod does not match the imports: tidy and commit it" >&2
  exit 1
fi

if [ "${1:-}" = "--check" ]; then
  if ! diff -r "${tmp}" "${dst}" >/dev/null 2>&1; then
    echo "src/_module is stale or missing: run make release-sync" >&2
    diff -r "${tmp}" "${dst}" 2>&1 | head -n 20 >&2 || true
    exit 1
  fi
  echo "src/_module matches go.mod, go.sum and go mod vendor"
  exit 0
fi

rm -rf "${dst}"
mv "${tmp}" "${dst}"
echo "synced go.mod, go.sum and $(grep -c '^# ' "${dst}/vendor/modules.txt") vendored modules into ${dst}"
