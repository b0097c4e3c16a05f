#!/usr/bin/env bash
# Compiles every package of a release tarball as the BOSH agent does on a
# compile VM, into a compiled-package cache (a director keeps one too):
#
#   compile-packages.sh TARBALL CACHE_DIR
#
# For each package in release.MF order: its files alone in
# BOSH_COMPILE_TARGET, `bash -x packaging` in a clean environment without the
# host's Go and (as root) without network, only its declared dependencies
# under BOSH_PACKAGES_DIR. Output: CACHE_DIR/NAME/VERSION/ (BOSH_INSTALL_TARGET)
# and one line "NAME VERSION DIR" per package on stdout. A package version
# (its fingerprint) already in the cache is not compiled again.
set -euo pipefail

tarball=${1:?usage: compile-packages.sh TARBALL CACHE_DIR}
cache=${2:?usage: compile-packages.sh TARBALL CACHE_DIR}
say() { echo "compile-packages: $*" >&2; }
# compile_order, compile_package: shared with ci/scripts/release-e2e.sh.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/ci/scripts/lib/bosh-compile.sh"

work=$(mktemp -d /var/tmp/cellguard-compile.XXXXXX)
current=""   # the install dir being compiled: removed when interrupted
trap 'rm -rf "${work}"; [ -z "${current}" ] || rm -rf "${current}"' EXIT
tar -xzf "${tarball}" -C "${work}"
order=$(compile_order "${work}/release.MF")

# Relocated below the scratch dir (the cache lives elsewhere), offline as root.
export COMPILE_SCRATCH=${work}/var
declare -A dir
while read -r name version deps; do
  install=${cache}/${name}/${version}
  dir[${name}]=${install}
  if [ -e "${install}/.compiled" ]; then
    say "${name}/${version}: compiled before (cache ${install})"
    echo "${name} ${version} ${install}"
    continue
  fi
  # An interrupted compile leaves a directory without .compiled; keep two finished
  # versions of each package besides this one.
  find "${cache}/${name}" -mindepth 1 -maxdepth 1 -type d ! -exec test -e '{}/.compiled' \; -exec rm -rf '{}' + 2>/dev/null || true
  # (With pipefail, ls finding no version yet must not end the script.)
  { ls -1dt "${cache}/${name}"/*/ 2>/dev/null || true; } | tail -n +3 | xargs -r rm -rf
  rm -rf "${install}" && mkdir -p "${install}"
  current=${install}
  dep_dirs=()
  for dep in ${deps//,/ }; do dep_dirs+=("${dep}=${dir[${dep}]}"); done
  t0=${SECONDS}
  if ! compile_package "${name}" "${version}" "${work}/packages/${name}.tgz" "${install}" \
        "${work}/compile-${name}.log" "${dep_dirs[@]}"; then
    tail -n 30 "${work}/compile-${name}.log" >&2
    rm -rf "${install}"
    say "FAIL: compiling ${name}/${version} from ${tarball}"
    exit 1
  fi
  touch "${install}/.compiled"
  current=""
  say "${name}/${version}: compiled in $((SECONDS - t0))s (deps: ${deps:-none})"
  echo "${name} ${version} ${install}"
done <<<"${order}"
