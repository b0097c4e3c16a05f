#!/usr/bin/env bash
# Installs what cellguard's tests need on a Debian 12 machine: Debian packages, the Go
# toolchain named in go.mod (only when there is no go at all), the Go modules, the pinned
# upstream files in ../shared (fetched where missing), and the cached rootfs of the test
# systemd box. Idempotent; silent unless it changes something.
# Run as root (make deps). Installing systemd-container may upgrade the host's systemd
# packages to the same version; that is expected.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"

log() { echo "install-deps: $*" >&2; }
die() { echo "install-deps: error: $*" >&2; exit 1; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

apt_updated=0
apt_install() {  # quiet apt-get install; the full log only when it fails
  [ "$(id -u)" = 0 ] || die "need root to apt-get install $*; run: sudo make deps"
  local out
  out=$(mktemp)
  if [ "${apt_updated}" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >"${out}" 2>&1 || { cat "${out}" >&2; rm -f "${out}"; die "apt-get update failed"; }
    apt_updated=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >"${out}" 2>&1 ||
    { cat "${out}" >&2; rm -f "${out}"; die "apt-get install $* failed"; }
  rm -f "${out}"
}

# apt_install_no_start installs like apt_install while no service may start: a
# policy-rc.d (only while installing, only if none exists) refuses every start a
# package's postinst asks for.
apt_install_no_start() {
  local policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\n# install-deps: no service starts while packages install\nexit 101\n' >"${policy}"
    chmod 0755 "${policy}"
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT  # apt_install exits on failure
  fi
  apt_install "$@"
  [ -z "${policy}" ] || { rm -f "${policy}"; trap - EXIT; }
}

# 1. Debian packages: the systemd box (systemd-nspawn, debootstrap, nsenter), the
#    daemons and runtimes tests drive on the host, ruby for the BOSH templates, jq;
#    time (GNU time) for make bench's peak RSS; for the fleet's stemcells (make cell,
#    src/tests/bosh): a compiler and flex, bison, zlib for BOSH's monit (the compiler also
#    builds cellbench's live cell, src/cmd/cellbench/cellfarm); for boxes of older Ubuntu suites (the xenial
#    seed-000 test, src/tests/harness/seed000-matrix.sh): curl and gpg to fetch and check
#    Ubuntu's archive keyring, patchelf to run this host's runc and containerd there;
#    iptables for real Garden in boxes (src/tests/garden; copied in with containerd);
#    qemu-system-x86 for the noble VM (src/tests/qemu: Ubuntu's kernel on cgroup v2); for the
#    QEMU CPI (src/tests/bosh/cpi/qemu-cpi): qemu-utils (qemu-img, each VM's overlay disk),
#    genisoimage (its config drive), openssh-client (its test enters the VM as bosh ssh does);
#    strace to prove validate writes nothing to the host (src/internal/cli/nowrite_test.go);
#    libseccomp-dev (libseccomp.a) for static runc with seccomp: seed 001's real rc93 and rc94
#    (src/tests/qemu/runc.sh) and runc at guardian c2d9348's pin (src/tests/garden/build.sh 2026-08).
pkgs=(systemd-container debootstrap curl gpg patchelf monit runc containerd ruby busybox-static jq iproute2 util-linux time
  gcc make patch flex bison zlib1g-dev libseccomp-dev iptables qemu-system-x86 qemu-utils genisoimage openssh-client strace)
missing=()
for p in "${pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

# 1b. The test director (src/tests/director, ../shared/bosh-director/README.md): Debian's
#     ruby gems the director v283.0.0 runs on, and PostgreSQL 15, which director.sh runs as
#     its own cluster in its state directory. The package's postinst would create and start
#     a cluster "main": a policy-rc.d (only while installing, only if none exists) keeps it
#     from starting, and a cluster the package left running is stopped.
director_pkgs=(postgresql-15 openssl ruby-activesupport ruby-bcrypt ruby-json ruby-logging ruby-rack-test rake
  ruby-rufus-scheduler ruby-sequel ruby-sinatra ruby-sinatra-contrib ruby-rack ruby-sys-filesystem ruby-ffi
  ruby-delayed-job ruby-tzinfo puma ruby-nio4r ruby-multi-json ruby-httpclient ruby-addressable ruby-hana
  ruby-regexp-parser ruby-simpleidn ruby-concurrent ruby-little-plugger ruby-pg)
missing=()
for p in "${director_pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt_install_no_start "${missing[@]}"
  if command -v pg_lsclusters >/dev/null; then
    pg_lsclusters --no-header 2>/dev/null | awk '$4 == "online" {print $1, $2}' | while read -r v c; do
      log "stopping PostgreSQL cluster ${v}/${c} the package started"
      pg_ctlcluster "${v}" "${c}" stop
    done
  fi
fi

# 1c. promtool, which checks and unit-tests the alert rules (spec/jobs TestAlertRulesPromtool):
#     Debian ships it in prometheus. Its postinst would start prometheus.service (a listener on
#     :9090) and node_exporter comes as a recommendation: no recommends, a policy-rc.d while it
#     installs (as for PostgreSQL above), and the unit disabled so no boot starts it.
if ! installed prometheus; then
  apt_install_no_start --no-install-recommends prometheus
  if command -v systemctl >/dev/null; then
    systemctl disable prometheus.service >/dev/null 2>&1 || true
    if systemctl is-active --quiet prometheus.service 2>/dev/null; then
      log "stopping prometheus.service the package started"
      systemctl stop prometheus.service
    fi
  fi
fi
command -v promtool >/dev/null || die "the prometheus package installed no promtool"

# 2. Go. A fresh Debian 12 has none (and its golang-go is far too old for go.mod), so
#    fetch exactly go.mod's toolchain from the Go module proxy, checked against the
#    checksum database (also served by the proxy), into /usr/local/go.
want_go="$(awk '$1 == "toolchain" {sub(/^go/, "", $2); print $2; exit} $1 == "go" {v = $2} END {if (v) print v}' go.mod | head -n 1)"
GO="$(command -v go || true)"
[ -n "${GO}" ] || { [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go; } || true
if [ -z "${GO}" ]; then
  [ "$(id -u)" = 0 ] || die "no go found and need root to install it into /usr/local/go"
  tools=()
  for p in curl ca-certificates unzip; do installed "${p}" || tools+=("${p}"); done
  [ ${#tools[@]} -eq 0 ] || apt_install "${tools[@]}"
  proxy="${GOPROXY:-https://proxy.golang.org}"; proxy="${proxy%%,*}"
  [ "${proxy}" != direct ] && [ "${proxy}" != off ] || proxy=https://proxy.golang.org
  arch="$(dpkg --print-architecture)"
  mod="golang.org/toolchain@v0.0.1-go${want_go}.linux-${arch}"
  log "installing go ${want_go} (${mod}) into /usr/local/go"
  tmp="$(mktemp -d)"
  trap 'rm -rf "${tmp}"' EXIT
  curl -fsSL -o "${tmp}/go.zip" "${proxy}/golang.org/toolchain/@v/v0.0.1-go${want_go}.linux-${arch}.zip" ||
    die "download ${mod} from ${proxy}"
  sum="$(curl -fsSL "${proxy}/sumdb/sum.golang.org/lookup/${mod}" | awk -v m="golang.org/toolchain" -v v="v0.0.1-go${want_go}.linux-${arch}" '$1 == m && $2 == v {print $3}')" ||
    die "look up ${mod} in the checksum database via ${proxy}"
  unzip -q "${tmp}/go.zip" -d "${tmp}/x"
  # the module hash (h1, golang.org/x/mod/sumdb/dirhash): sha256 over the sorted
  # "sha256  name" lines of every file in the zip
  hex="$(cd "${tmp}/x" && find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)"
  got="h1:$(printf '%b' "$(sed 's/../\\x&/g' <<<"${hex}")" | base64)"
  [ -n "${sum}" ] && [ "${got}" = "${sum}" ] || die "${mod}: hash ${got} does not match the checksum database's '${sum}'"
  rm -rf /usr/local/go.new
  mv "${tmp}/x/golang.org/toolchain@v0.0.1-go${want_go}.linux-${arch}" /usr/local/go.new
  [ ! -e /usr/local/go ] || mv /usr/local/go "/usr/local/go.old.$$"
  mv /usr/local/go.new /usr/local/go
  rm -rf "/usr/local/go.old.$$"
  ln -sf /usr/local/go/bin/go /usr/local/bin/go
  ln -sf /usr/local/go/bin/gofmt /usr/local/bin/gofmt
  GO=/usr/local/go/bin/go
fi

# 3. Go modules (silent when they are in the module cache already).
"${GO}" mod download

# 4. The pinned upstream files (ci/upstream-sources.lock: the director's source and gems,
#    Garden's sources, BOSH's monit) in ../shared, a cache beside the repository: each
#    one missing there is fetched by commit (CELLGUARD_SOURCES_MIRROR, default the
#    upstream's archive URLs) and installed only if its sha256 is the pinned one.
#    Offline, the error names each file, where to fetch it and where to put it.
if ! bash ci/scripts/fetch-sources.sh; then
  if [ "${CI:-}" = true ]; then
    echo "install-deps: FAILED: pinned upstream files are missing (above); CI=true: the director, fleet and Garden tests must run" >&2
    exit 1
  fi
  echo "install-deps: !!! pinned upstream files are missing (above); the director, fleet and Garden tests will NOT RUN here (and fail in CI) !!!" >&2
fi

# 5. The test box's cached rootfs (debootstrap, about a minute, once): built here so
#    the first integration test does not spend its timeout on it.
#    xenial's too (systemd 229, the one where the seed-000 symptom shows: the integration
#    test TestSeed000SymptomXenial boots it): about five and a half minutes, once.
# needed_by TEST WHAT CMD...: run CMD, a cached build from Ubuntu's archive (or the Go module proxy). Ubuntu's
# archive is not a registry every machine of this kind reaches; without the build TEST
# cannot run: in CI that is a failure, here and now, saying why; on a developer's
# machine a loud warning (the test then skips loudly).
needed_by() {
  local test=$1 what=$2 out
  shift 2
  out=$(mktemp)
  if ! "$@" >/dev/null 2>"${out}"; then
    local why="${what} could not be built (archive.ubuntu.com, proxy.golang.org?): $(tail -n 2 "${out}")"
    rm -f "${out}"
    if [ "${CI:-}" = true ]; then
      echo "install-deps: FAILED: ${why}; CI=true: ${test} must run" >&2
      exit 1
    fi
    echo "install-deps: !!! ${why}; ${test} will NOT RUN here (and fails in CI) !!!" >&2
  fi
  rm -f "${out}"
}
if [ "$(id -u)" = 0 ]; then
  src/tests/harness/sdbox.sh rootfs >/dev/null
  # TestSeed000SymptomXenial is the only test of the README's headline symptom
  # (sdbox.RequireSuite).
  needed_by TestSeed000SymptomXenial "xenial's rootfs" env SDBOX_SUITE=xenial src/tests/harness/sdbox.sh rootfs
  # The noble VM image (src/tests/qemu/image.sh: Ubuntu's pinned kernel, noble's userland,
  # ext4), a few minutes once, 0.04 s when cached: TestNobleVM boots it and must not build
  # it in its timeout (qemuvm.RequireImage).
  needed_by TestNobleVM "the noble VM image" src/tests/qemu/image.sh
  # Seed 001's runc builds (module proxy, cgo, libseccomp): 2.5-8 minutes each once,
  # instant when cached; TestNobleSeed001 would otherwise build them in its timeout.
  needed_by TestNobleSeed001 "runc 1.0.0-rc93" src/tests/qemu/runc.sh rc93
  needed_by TestNobleSeed001 "runc 1.0.0-rc94" src/tests/qemu/runc.sh rc94
fi
