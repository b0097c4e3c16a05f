#!/usr/bin/env bash
# Makes sure every pinned upstream file in ci/upstream-sources.lock is in its
# cache directory (../shared/sources, ../shared/stemcell, or
# CELLGUARD_SOURCES / CELLGUARD_STEMCELL_SOURCES) with the sha256 pinned there.
# A file that is missing (or differs) is fetched by commit from
# CELLGUARD_SOURCES_MIRROR (default: the upstream's own archive URLs), checked,
# and only then installed, with its line added to the directory's SHA256SUMS
# (which the scripts that read the cache check against).
#
#   fetch-sources.sh [FILE...]   only those files of the lock (default: all)
#
# Exits 1 naming every file it could not get: where to fetch it, and where
# to put it by hand.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
# shellcheck source=lib/git-archive.sh
. "${here}/lib/git-archive.sh"
lock="${repo}/ci/upstream-sources.lock"

log() { echo "fetch-sources: $*" >&2; }

cache_dir() {
  case "$1" in
    sources) echo "${CELLGUARD_SOURCES:-${repo}/../shared/sources}" ;;
    stemcell) echo "${CELLGUARD_STEMCELL_SOURCES:-${repo}/../shared/stemcell}" ;;
    *) return 1 ;;
  esac
}

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch_one KIND REPOSITORY COMMIT PREFIX-OR-PATH OUT [PATHSPEC...]: OUT is the
# file the lock line describes, built from what the mirror serves.
fetch_one() {
  local kind=$1 repository=$2 commit=$3 what=$4 out=$5 url
  shift 5
  case "${kind}" in
    raw)
      url="${CELLGUARD_SOURCES_MIRROR:-https://raw.githubusercontent.com}/${repository}/${commit}/${what}"
      curl -fsSL --retry 2 -o "${out}" "${url}" || { echo "${url}"; return 1; }
      ;;
    archive)
      url="${CELLGUARD_SOURCES_MIRROR:-https://codeload.github.com}/${repository}/tar.gz/${commit}"
      curl -fsSL --retry 2 -o "${out}.src" "${url}" || { echo "${url}"; return 1; }
      git_archive_rebuild "${out}.src" "${what}" "${commit}" "${out}" "$@" >&2 || { echo "${url} (rebuilding the archive)"; return 1; }
      rm -f "${out}.src"
      ;;
    *) echo "unknown kind ${kind}"; return 1 ;;
  esac
}

failed=()
while read -r dir file sha kind repository commit what paths; do
  case "${dir}" in '' | '#'*) continue ;; esac
  if [ $# -gt 0 ] && [[ " $* " != *" ${file} "* ]]; then continue; fi
  cache="$(cache_dir "${dir}")" || { failed+=("${file}: unknown directory ${dir} in ${lock}"); continue; }
  if [ -f "${cache}/${file}" ] && [ "$(sha_of "${cache}/${file}")" = "${sha}" ]; then
    continue
  fi
  if [ -f "${cache}/${file}" ]; then
    log "${cache}/${file} has sha256 $(sha_of "${cache}/${file}"), the lock pins ${sha}: fetching it again"
  fi
  mkdir -p "${cache}" 2>/dev/null || true
  tmp="$(mktemp "${cache}/.${file}.XXXXXX" 2>/dev/null)" ||
    { failed+=("${file}: cannot write into ${cache}"); continue; }
  log "fetching ${file} (${repository} at ${commit:0:12})"
  # shellcheck disable=SC2086 # paths: the lock's pathspecs, one word each
  if ! from="$(fetch_one "${kind}" "${repository}" "${commit}" "${what}" "${tmp}" ${paths})"; then
    rm -f "${tmp}" "${tmp}.src"
    failed+=("${file}: could not fetch ${from}; take ${repository} at ${commit} (${kind} ${what}${paths:+ ${paths}}) and put it in ${cache} (sha256 ${sha}), or set CELLGUARD_SOURCES_MIRROR")
    continue
  fi
  got="$(sha_of "${tmp}")"
  if [ "${got}" != "${sha}" ]; then
    rm -f "${tmp}"
    failed+=("${file}: what ${CELLGUARD_SOURCES_MIRROR:-the upstream} serves for ${repository} at ${commit:0:12} gives sha256 ${got}, the lock pins ${sha}: refused")
    continue
  fi
  mv "${tmp}" "${cache}/${file}"
  if ! grep -qx "${sha}  ${file}" "${cache}/SHA256SUMS" 2>/dev/null; then
    sums="$( (grep -v "  ${file}\$" "${cache}/SHA256SUMS" 2>/dev/null || true; echo "${sha}  ${file}") )"
    echo "${sums}" >"${cache}/SHA256SUMS"
  fi
  log "installed ${cache}/${file} (sha256 ${sha})"
done <"${lock}"

if [ ${#failed[@]} -gt 0 ]; then
  for f in "${failed[@]}"; do echo "fetch-sources: error: ${f}" >&2; done
  exit 1
fi
