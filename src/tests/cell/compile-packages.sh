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

work=$(mktemp -d /var/tmp/cellguard-compile.XXXXXX)
current=""   # the install dir being compiled: removed when interrupted
trap 'rm -rf "${work}"; [ -z "${current}" ] || rm -rf "${current}"' EXIT
tar -xzf "${tarball}" -C "${work}"
order=$(ruby -ryaml -e '
  pkgs = YAML.load_file(ARGV[0])["packages"]
  done = []
  until pkgs.empty?
    ready = pkgs.select { |p| (p["dependencies"] || []).all? { |d| done.include?(d) } }
    abort "dependency cycle among #{pkgs.map { |p| p["name"] }}" if ready.empty?
    ready.each { |p| puts [p["name"], p["version"], (p["dependencies"] || []).join(",")].join(" "); done << p["name"] }
    pkgs -= ready
  end' "${work}/release.MF")

offline=()
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then offline=(unshare --net); fi

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
  ls -1dt "${cache}/${name}"/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
  rm -rf "${install}" && mkdir -p "${install}"
  current=${install}
  compile=${work}/compile/${name}
  packages=${work}/packages-${name}
  mkdir -p "${compile}" "${packages}"
  tar -xzf "${work}/packages/${name}.tgz" -C "${compile}"
  for dep in ${deps//,/ }; do ln -s "${dir[${dep}]}" "${packages}/${dep}"; done
  t0=${SECONDS}
  if ! (cd "${compile}" && env -i PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${work}/home" \
        BOSH_COMPILE_TARGET="${compile}" BOSH_INSTALL_TARGET="${install}" \
        BOSH_PACKAGE_NAME="${name}" BOSH_PACKAGE_VERSION="${version}" BOSH_PACKAGES_DIR="${packages}" \
        "${offline[@]}" bash -x packaging) >"${work}/compile-${name}.log" 2>&1; then
    tail -n 30 "${work}/compile-${name}.log" >&2
    rm -rf "${install}"
    say "FAIL: compiling ${name}/${version} from ${tarball}"
    exit 1
  fi
  chmod -R u+w "${compile}" && rm -rf "${compile}"
  touch "${install}/.compiled"
  current=""
  say "${name}/${version}: compiled in $((SECONDS - t0))s (deps: ${deps:-none})"
  echo "${name} ${version} ${install}"
done <<<"${order}"
