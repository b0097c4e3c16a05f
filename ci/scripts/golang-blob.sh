#!/usr/bin/env bash
# Makes sure the golang-1-linux blob named in config/blobs.yml is in blobs/
# (where bosh create-release reads it; bosh sync-blobs would fetch it from
# config/final.yml's bucket), rebuilding it when it is not: download the
# toolchain zip through the Go module proxy (checked against sum.golang.org),
# repack it reproducibly (spec/tools/golangblob), and refuse it unless its
# sha256 equals the one in config/blobs.yml. The built blob is kept under its
# object_id in CELLGUARD_BLOB_CACHE (default /var/tmp/cellguard-blobstore),
# shared by every checkout on the machine, and with FINAL_BLOBSTORE_DIR set it
# is put there too (a local final blobstore, docs/releasing.md).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"

path="$(awk -F: '/^golang\/go.*\.tar\.gz:/ {print $1; exit}' config/blobs.yml)"
object_id="$(awk -v p="${path}:" '$1 == p {f=1; next} f && $1 == "object_id:" {print $2; exit}' config/blobs.yml)"
want="$(awk -v p="${path}:" '$1 == p {f=1; next} f && $1 == "sha:" {print $2; exit}' config/blobs.yml)"
store="${CELLGUARD_BLOB_CACHE:-/var/tmp/cellguard-blobstore}"
version="$(sed -E 's#^golang/go([0-9.]+)\.linux-amd64\.tar\.gz$#\1#' <<<"${path}")"
if [ -z "${path}" ] || [ -z "${object_id}" ] || [ -z "${want}" ] || [ -z "${store}" ]; then
  echo "golang-blob: cannot read the golang blob from config/blobs.yml" >&2
  exit 2
fi

sha_of() { echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"; }

# place: copy the cached blob into blobs/ and the local final blobstore.
place() {
  if [ ! -f "blobs/${path}" ] || [ "$(sha_of "blobs/${path}")" != "${want}" ]; then
    mkdir -p "$(dirname "blobs/${path}")"
    cp "${store}/${object_id}" "blobs/${path}.tmp.$$" && mv "blobs/${path}.tmp.$$" "blobs/${path}"
  fi
  if [ -n "${FINAL_BLOBSTORE_DIR:-}" ] && [ ! -f "${FINAL_BLOBSTORE_DIR}/${object_id}" ]; then
    mkdir -p "${FINAL_BLOBSTORE_DIR}"
    cp "${store}/${object_id}" "${FINAL_BLOBSTORE_DIR}/${object_id}"
  fi
}

if [ -f "${store}/${object_id}" ] && [ "$(sha_of "${store}/${object_id}")" = "${want}" ]; then
  place
  echo "golang-blob: ${path} is in blobs/ (cached in ${store}/${object_id})"
  exit 0
fi

zip="$(GOFLAGS=-mod=mod go mod download -json "golang.org/toolchain@v0.0.1-go${version}.linux-amd64" | sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p')"
if [ -z "${zip}" ] || [ ! -f "${zip}" ]; then
  echo "golang-blob: go mod download gave no zip for golang.org/toolchain@v0.0.1-go${version}.linux-amd64" >&2
  exit 1
fi
mkdir -p "${store}"
tmp="${store}/.${object_id}.tmp.$$"
trap 'rm -f "${tmp}"' EXIT
(cd spec && go run -mod=mod ./tools/golangblob -zip "${zip}" -o "${tmp}")
got="$(sha_of "${tmp}")"
if [ "${got}" != "${want}" ]; then
  echo "golang-blob: repacked ${path} has ${got}, config/blobs.yml wants ${want}" >&2
  echo "golang-blob: hint: a Go release with a different compress/gzip can change the bytes; re-run bosh add-blob + upload-blobs and commit config/blobs.yml" >&2
  exit 1
fi
mv "${tmp}" "${store}/${object_id}"
place
echo "golang-blob: built ${path} (${got}) into blobs/ (cached in ${store}/${object_id})"
