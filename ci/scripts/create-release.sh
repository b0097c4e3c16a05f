#!/usr/bin/env bash
# Builds a dev release tarball offline:
#   create-release.sh [RELEASE_DIR] [TARBALL]
# RELEASE_DIR defaults to this repository, TARBALL to dev_releases/cellguard-dev.tgz
# (dev_releases/ is gitignored).
#
# bosh create-release in RELEASE_DIR itself works too (docs/releasing.md),
# but takes every job and package whose fingerprint a final release has
# from that release's blobstore (config/final.yml's bucket, or
# ~/.bosh/cache). This builds in a scratch copy without .final_builds and
# releases/, so every package is built from its sources with no network and
# no blobstore, and nothing is written into RELEASE_DIR but the tarball.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(cd "${1:-${here}/../..}" && pwd)"
tarball="${2:-${dir}/dev_releases/cellguard-dev.tgz}"

bosh="$("${here}/bosh-cli.sh")"
(cd "${dir}" && bash ci/scripts/golang-blob.sh)
(cd "${dir}" && bash ci/scripts/vendor.sh --check)

work="$(mktemp -d /var/tmp/cellguard-create-release.XXXXXX)"
trap 'rm -rf "${work}"' EXIT
tar -C "${dir}" --exclude=./.git --exclude=./.final_builds --exclude=./releases \
  --exclude=./dev_releases --exclude=./.dev_builds --exclude=./bin -cf - . | tar -xf - -C "${work}"

mkdir -p "$(dirname "${tarball}")"
offline=()
# A network namespace with no interfaces proves create-release needs no
# network; only root may make one.
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then
  offline=(unshare --net)
fi
(cd "${work}" && "${offline[@]}" "${bosh}" create-release --force --tarball="${tarball}" --non-interactive)
echo "release tarball: ${tarball}"
