#!/usr/bin/env bash
# Builds a dev release tarball offline:
#   create-release.sh [RELEASE_DIR] [TARBALL]
# RELEASE_DIR defaults to this repository, TARBALL to dev_releases/cellguard-dev.tgz
# (both dev_releases/ and the .dev_builds/ index bosh writes are gitignored).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(cd "${1:-${here}/../..}" && pwd)"
tarball="${2:-${dir}/dev_releases/cellguard-dev.tgz}"

bosh="$("${here}/bosh-cli.sh")"
"${here}/golang-blob.sh"
"${dir}/ci/scripts/vendor.sh" --check

mkdir -p "$(dirname "${tarball}")"
offline=()
# A network namespace with no interfaces proves create-release needs no
# network; only root may make one.
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then
  offline=(unshare --net)
fi
(cd "${dir}" && "${offline[@]}" "${bosh}" create-release --force --tarball="${tarball}" --non-interactive)
echo "release tarball: ${tarball}"
