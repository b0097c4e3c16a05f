# shellcheck shell=bash
# A Go tool pinned in spec/go.mod, built once into a fixed path. Sourced by
# ci/scripts/bosh-cli.sh and ci/scripts/bosh-agent.sh.
#
#   pinned_tool BIN WANT VERSION_FLAG GO_BUILD_ARGS...
#
# Prints BIN. When `BIN VERSION_FLAG` already prints WANT (its first line), BIN
# is reused; otherwise `go build -mod=mod GO_BUILD_ARGS... -o BIN` runs in spec/
# (the caller's environment, e.g. CGO_ENABLED, applies) into a temporary file
# that replaces BIN only when the build succeeded.
pinned_tool() {
  local bin=$1 want=$2 vflag=$3 repo
  shift 3
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
  if [ -x "${bin}" ] && [ "$("${bin}" "${vflag}" 2>/dev/null | head -n1)" = "${want}" ]; then
    echo "${bin}"
    return 0
  fi
  mkdir -p "$(dirname "${bin}")"
  echo "building ${*: -1} (${want}) into ${bin}" >&2
  (cd "${repo}/spec" && go build -mod=mod -o "${bin}.tmp.$$" "$@") >&2
  mv "${bin}.tmp.$$" "${bin}"
  echo "${bin}"
}
