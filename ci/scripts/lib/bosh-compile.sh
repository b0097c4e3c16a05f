# shellcheck shell=bash
# Compiling a release tarball's packages as the BOSH agent does on a compile
# VM. Sourced by ci/scripts/release-e2e.sh (a fresh compile of every package,
# at the real /var/vcap paths); `make cell` has the director compile them on
# its compilation VMs (src/tests/fleet).
#
#   compile_order RELEASE_MF
#   compile_package NAME VERSION PACKAGE_TGZ INSTALL_DIR LOG [DEP=DIR ...]
#   compile_at_var_possible
#
# COMPILE_OFFLINE is `unshare --net` as root where that works, else empty.

COMPILE_OFFLINE=()
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then COMPILE_OFFLINE=(unshare --net); fi

# compile_order RELEASE_MF prints "NAME VERSION DEP,DEP" per package of the
# release manifest, each after its dependencies.
compile_order() {
  ruby -ryaml -e '
    pkgs = YAML.load_file(ARGV[0])["packages"]
    done = []
    until pkgs.empty?
      ready = pkgs.select { |p| (p["dependencies"] || []).all? { |d| done.include?(d) } }
      abort "dependency cycle among #{pkgs.map { |p| p["name"] }}" if ready.empty?
      ready.each { |p| puts [p["name"], p["version"], (p["dependencies"] || []).join(",")].join(" "); done << p["name"] }
      pkgs -= ready
    end' "$1"
}

# compile_at_var_possible: whether compile_package can run with
# COMPILE_AT_VAR=true here (root, and mount plus network namespaces work).
compile_at_var_possible() {
  [ "$(id -u)" = 0 ] && unshare --mount --net true 2>/dev/null
}

# _compile_in_var SCRATCH PATH: where PATH, a compiled package below
# SCRATCH/vcap/data/packages, is seen with SCRATCH bound over /var.
_compile_in_var() {
  case $2 in
    "$1/vcap/data/packages/"*) echo "/var${2#"$1"}" ;;
    *) echo "compile_package: $2 is not below $1/vcap/data/packages (COMPILE_AT_VAR=true)" >&2; return 1 ;;
  esac
}

# compile_package NAME VERSION PACKAGE_TGZ INSTALL_DIR LOG [DEP=DIR ...]
# unpacks the package into a fresh BOSH_COMPILE_TARGET and runs
# `bash -x packaging` there with BOSH_INSTALL_TARGET=INSTALL_DIR, in a clean
# environment (no host Go, a HOME of its own), with only the declared
# dependencies linked under the packages dir (DIR: the dependency's compiled
# INSTALL_DIR). Its output goes to LOG; the status is packaging's.
#
# COMPILE_SCRATCH (required) holds vcap/data/compile/NAME, vcap/packages and
# vcap/data/home. With COMPILE_AT_VAR=true (see compile_at_var_possible) the
# script runs in its own mount and network namespace with COMPILE_SCRATCH
# bound over /var, so it sees the real paths (/var/vcap/data/compile/NAME,
# /var/vcap/packages/DEP) and nothing of the host's /var; INSTALL_DIR and each
# DIR must then lie below COMPILE_SCRATCH/vcap/data/packages. Otherwise the
# same layout stays below COMPILE_SCRATCH, BOSH_PACKAGES_DIR (honoured by
# golang-1-linux's compile.env) points at it, and as root it runs offline.
#
# Callers test the status (`if ! compile_package ...`), which turns errexit
# off in here: every step checks its own.
compile_package() {
  local name=$1 version=$2 tgz=$3 install=$4 log=$5
  shift 5
  local scratch=${COMPILE_SCRATCH:?COMPILE_SCRATCH must name a scratch directory}
  local at_var=${COMPILE_AT_VAR:-false}
  local compile=${scratch}/vcap/data/compile/${name}
  local packages=${scratch}/vcap/packages
  local dep target

  rm -rf "${compile}" && mkdir -p "${compile}" "${install}" "${scratch}/vcap/data/home" || return 1
  tar -xzf "${tgz}" -C "${compile}" || return 1
  # The agent keeps only the declared dependencies under /var/vcap/packages.
  rm -rf "${packages}" && mkdir -p "${packages}" || return 1
  for dep in "$@"; do
    target=${dep#*=}
    if [ "${at_var}" = true ]; then target=$(_compile_in_var "${scratch}" "${target}") || return 1; fi
    ln -s "${target}" "${packages}/${dep%%=*}" || return 1
  done

  local clean_env=(env -i PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
    BOSH_PACKAGE_NAME="${name}" BOSH_PACKAGE_VERSION="${version}")
  if [ "${at_var}" = true ]; then
    local ns_install
    ns_install=$(_compile_in_var "${scratch}" "${install}") || return 1
    unshare --mount --net -- bash -c 'mount --make-rprivate / && mount --bind "$1" /var && cd "$2" && shift 3 && exec "$@"' \
      _ "${scratch}" "/var/vcap/data/compile/${name}" - "${clean_env[@]}" HOME=/var/vcap/data/home \
      BOSH_COMPILE_TARGET="/var/vcap/data/compile/${name}" BOSH_INSTALL_TARGET="${ns_install}" \
      bash -x packaging >"${log}" 2>&1 || return
  else
    (cd "${compile}" && "${clean_env[@]}" HOME="${scratch}/vcap/data/home" \
      BOSH_COMPILE_TARGET="${compile}" BOSH_INSTALL_TARGET="${install}" BOSH_PACKAGES_DIR="${packages}" \
      "${COMPILE_OFFLINE[@]}" bash -x packaging) >"${log}" 2>&1 || return
  fi
  # Go's module cache is read-only.
  chmod -R u+w "${compile}" && rm -rf "${compile}"
}
