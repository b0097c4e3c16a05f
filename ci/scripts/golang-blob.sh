#!/usr/bin/env bash
# Makes sure the golang-1-linux blob named in config/blobs.yml is in the local
# blobstore named in config/final.yml, rebuilding it when it is not: download
# the toolchain zip through the Go module proxy (checked against
# sum.golang.org), repack it reproducibly (spec/tools/golangblob), and refuse
# it unless its sha256 equals the one in config/blobs.yml.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"

path="$(awk -F: '/^golang\/go.*\.tar\.gz:/ {print $1; exit}' config/blobs.yml)"
object_id="$(awk -v p="${path}:" '$1 == p {f=1; next} f && $1 == "object_id:" {print $2; exit}' config/blobs.yml)"
want="$(awk -v p="${path}:" '$1 == p {f=1; next} f && $1 == "sha:" {print $2; exit}' config/blobs.yml)"
store="$(awk '$1 == "blobstore_path:" {print $2; exit}' config/final.yml)"
version="$(sed -E 's#^golang/go([0-9.]+)\.linux-amd64\.tar\.gz$#\1#' <<<"${path}")"
if [ -z "${path}" ] || [ -z "${object_id}" ] || [ -z "${want}" ] || [ -z "${store}" ]; then
  echo "golang-blob: cannot read the golang blob from config/blobs.yml or the blobstore from config/final.yml" >&2
  exit 2
fi

sha_of() { echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"; }

if [ -f "${store}/${object_id}" ] && [ "$(sha_of "${store}/${object_id}")" = "${want}" ]; then
  echo "golang-blob: ${path} is in ${store} (${object_id})"
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
echo "golang-blob: built ${path} (${got}) into ${store}/${object_id}"
