#!/usr/bin/env bash
# Cuts the final release the checked-out tag names (vX.Y.Z -> X.Y.Z) with make
# final-release, commits what it wrote (make final-release commits nothing),
# and leaves the tarball and its notes for the GitHub release.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CI=true
out="${PWD}/../final-release"

tag="$(git describe --tags --exact-match HEAD)"
version="${tag#v}"
: "${RELEASE_BLOBSTORE_ACCESS_KEY_ID:?}" "${RELEASE_BLOBSTORE_SECRET_ACCESS_KEY:?}"
# Credentials only in the gitignored config/private.yml, never in the commit.
umask 077
printf -- '---\nblobstore:\n  options:\n    access_key_id: %s\n    secret_access_key: %s\n' \
  "${RELEASE_BLOBSTORE_ACCESS_KEY_ID}" "${RELEASE_BLOBSTORE_SECRET_ACCESS_KEY}" >config/private.yml
umask 022

make final-release VERSION="${version}" | tee "${out}/final-release.txt"
rm -f config/private.yml

git add releases/cellguard .final_builds
git -c user.name="cellguard CI" -c user.email="cellguard-ci@cloudfoundry.org" \
  commit -m "releases: cellguard ${version}"
mv "releases/cellguard/cellguard-${version}.tgz" "${out}/"
echo "cellguard ${version}" >"${out}/name"
echo "${tag}" >"${out}/tag"
{
  echo "cellguard ${version}, from $(git rev-parse --short HEAD^)."
  echo
  echo '```'
  sed -n 's/^\(sha1\|sha256\): */\1: /p' "${out}/final-release.txt"
  echo '```'
} >"${out}/notes.md"
