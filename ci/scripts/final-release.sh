#!/usr/bin/env bash
# Cuts final release VERSION from the last commit:
#   final-release.sh VERSION           (make final-release VERSION=x.y.z)
# bosh create-release --final runs in a scratch clone at HEAD, so the
# release records HEAD's commit with no uncommitted changes. It uploads the
# new job and package tarballs to config/final.yml's blobstore with the
# credentials of config/private.yml (gitignored), or, with
# FINAL_BLOBSTORE_DIR=DIR, to that directory (a development override: the
# scratch clone's final.yml names it; the checkout's is never edited).
# It writes into this checkout, and commits none of it:
#   releases/cellguard/cellguard-VERSION.yml, releases/cellguard/index.yml,
#   .final_builds/ (the final builds' index files), and
#   releases/cellguard/cellguard-VERSION.tgz (gitignored: it is published),
# and prints the tarball's path, sha1 and sha256.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
cd "${repo}"

die() { echo "final-release: error: $*" >&2; exit 1; }
say() { echo "final-release: $*" >&2; }

version="${1:-}"
[[ "${version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION must be x.y.z (got '${version}'): make final-release VERSION=0.1.0"
name="$(awk '$1 == "name:" {print $2; exit}' config/final.yml)"
[ -n "${name}" ] || die "config/final.yml names no release"
[ ! -e "releases/${name}/${name}-${version}.yml" ] || die "releases/${name}/${name}-${version}.yml exists: ${version} is cut already"
dirty="$(git status --porcelain --untracked-files=no)"
[ -z "${dirty}" ] || die "uncommitted changes (a final release is cut from the last commit): ${dirty//$'\n'/, }"
"${here}/vendor.sh" --check >/dev/null || die "src/vendor is stale: make vendor, commit, and cut again"

store="${FINAL_BLOBSTORE_DIR:-}"
if [ -n "${store}" ]; then
  mkdir -p "${store}"
  store="$(cd "${store}" && pwd)"
  export FINAL_BLOBSTORE_DIR="${store}"
elif [ ! -f config/private.yml ]; then
  die "config/private.yml (the blobstore's write credentials, gitignored) is missing; or set FINAL_BLOBSTORE_DIR=DIR for a local blobstore (development only)"
fi

bosh="$("${here}/bosh-cli.sh")"
"${here}/golang-blob.sh" >&2

work="$(mktemp -d /var/tmp/cellguard-final-release.XXXXXX)"
scratch="${work}/release"
trap 'rm -rf "${work}"' EXIT
# A clone sharing this repository's objects (read only), at HEAD's commit.
head="$(git rev-parse HEAD)"
git clone --quiet --shared --no-checkout "$(cd "$(git rev-parse --git-common-dir)" && pwd)" "${scratch}"
git -C "${scratch}" checkout --quiet --detach "${head}"
cp -a blobs "${scratch}/"
offline=()
if [ -n "${store}" ]; then
  # The scratch clone's own index hides the override from bosh's dirty
  # check; this checkout's index and config/final.yml are untouched.
  printf -- '---\nname: %s\nblobstore:\n  provider: local\n  options:\n    blobstore_path: %s\n' "${name}" "${store}" \
    >"${scratch}/config/final.yml"
  git -C "${scratch}" update-index --skip-worktree config/final.yml
  # A local blobstore needs no network: prove it where we can.
  if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then offline=(unshare --net); fi
else
  cp config/private.yml "${scratch}/config/private.yml"
fi

tarball="${repo}/releases/${name}/${name}-${version}.tgz"
mkdir -p "$(dirname "${tarball}")"
say "bosh create-release --final --version ${version} from $(git rev-parse --short HEAD), blobstore: ${store:-config/final.yml}"
(cd "${scratch}" && "${offline[@]}" "${bosh}" create-release --final --version="${version}" \
  --tarball="${tarball}" --non-interactive) >&2

# What the cut wrote, back into this checkout: the release's manifest and
# index, and the final builds' index files (their tarballs are in the blobstore).
cp "${scratch}/releases/${name}/${name}-${version}.yml" "${scratch}/releases/${name}/index.yml" "releases/${name}/"
(cd "${scratch}" && find .final_builds -name index.yml -print0 | tar --null -T - -cf -) | tar -xf -

sha1="$(sha1sum "${tarball}" | cut -d' ' -f1)"
sha256="$(sha256sum "${tarball}" | cut -d' ' -f1)"
cat <<OUT
release:  ${name}/${version} (commit $(git rev-parse --short HEAD))
tarball:  ${tarball}
sha1:     ${sha1}
sha256:   ${sha256}
wrote (commit them): releases/${name}/${name}-${version}.yml releases/${name}/index.yml .final_builds/
OUT
