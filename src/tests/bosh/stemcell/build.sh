#!/usr/bin/env bash
# build.sh - a local BOSH stemcell for systemd-nspawn VMs (the nspawn CPI in
# ../cpi-release), in one of the two shapes whose supervisor seed 000 hits:
#
#   build.sh jammy   systemd -> runit.service -> runsvdir -> monit 5.2.5 (+ validate.patch)
#                    and the agent, both under runit
#   build.sh noble   systemd -> monit.service -> monit 5.2.5 (+ validate.patch);
#                    bosh-agent.service
#
# Prints the stemcell tarball's path on stdout (stemcell.MF + image, what `bosh
# create-env` takes as resource_pools[].stemcell.url); progress goes to stderr.
# Built once per content key (shape, base rootfs, agent binary, monit build, this
# script and assets/) into $CELLGUARD_BOSH_CACHE/stemcells (default
# /var/tmp/cellguard-bosh); a second call with the same inputs only prints the path.
#
# Inputs:
#   - the base rootfs: src/tests/harness/sdbox.sh's cached debootstrap plus runit
#     and containerd (its own cache under $CELLGUARD_BOSH_CACHE/base);
#   - the real bosh-agent, built from spec/go.mod's pin (ci/scripts/bosh-agent.sh);
#   - BOSH's monit sources from $CELLGUARD_STEMCELL_SOURCES (default: ../shared/stemcell
#     beside the repository, or beside its main checkout when this is a git worktree),
#     checked against SHA256SUMS here.
# A failing step says which one, the command, and where its log is. Needs root
# (chroot, file owners).
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../../../.." && pwd)
shape=${1:-}
# monit: 5.2.5 with the validate patch on both shapes, as every branch of the
# builder builds it (5.29.0 was its monit for one week in 2021, reverted in df452cec7;
# the noble branch deleted the tarball: docs/bosh.md). The noble shape can be built
# with 5.29.0 (CELLGUARD_NOBLE_MONIT=5.29.0) to see why, but bosh-agent
# v2.759.0 cannot drive it: monit 5.29.0 refuses every POST without a CSRF token
# (src/http/processor.c, is_authenticated) and the agent's monit client sends none
# (jobsupervisor/monit/http_client.go StartService), so starting a job fails with
# "403 Forbidden" (measured; docs/bosh.md).
case ${shape} in
  jammy) monit_version=5.2.5 ;;
  noble) monit_version=${CELLGUARD_NOBLE_MONIT:-5.2.5} ;;
  *) echo "usage: build.sh jammy|noble" >&2; exit 2 ;;
esac
case ${monit_version} in 5.2.5|5.29.0) ;; *) echo "build.sh: monit ${monit_version}: want 5.2.5 or 5.29.0" >&2; exit 2 ;; esac
cache=${CELLGUARD_BOSH_CACHE:-/var/tmp/cellguard-bosh}
# ../shared beside the repository; in a git worktree elsewhere, beside its main checkout.
sources=${CELLGUARD_STEMCELL_SOURCES:-${repo}/../shared/stemcell}
if [ -z "${CELLGUARD_STEMCELL_SOURCES:-}" ] && [ ! -d "${sources}" ]; then
  common=$(git -C "${repo}" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  [ -n "${common}" ] && [ -d "$(dirname "${common}")/../shared/stemcell" ] &&
    sources=$(cd "$(dirname "${common}")/../shared/stemcell" && pwd)
fi
# runit runs the jammy shape's agent and monit, whose DNS setup calls resolvconf
# (Ubuntu stemcells have it); containerd and its runc shim are
# Garden's runtime in containerd mode (the test release's stand-in uses them; on a
# real cell garden-runc-release ships them as packages).
base_packages="runit containerd resolvconf"

T0=${SECONDS}
step="" log=""
say() { echo "stemcell ${shape}: $*" >&2; }
fail() {
  # In a subshell (its output goes to the step's log) only say what failed there;
  # the main shell then names the step and the log.
  if [ "${BASH_SUBSHELL}" != 0 ]; then echo "FAILED: $*" >&2; exit 1; fi
  say "FAILED at step '${step}': $*${log:+; log: ${log}}"
  exit 1
}
begin() { step=$1; log=${2:-}; say "${step}"; }
trap 'fail "\`${BASH_COMMAND}\` exited $?"' ERR

[ "$(id -u)" = 0 ] || { step=start; fail "must run as root (chroot, file owners)"; }
mkdir -p "${cache}/logs" "${cache}/stemcells" "${cache}/monit"

# 1. BOSH's monit sources, as the stemcell builder ships them.
begin "check monit sources in ${sources}"
for f in $(awk '{print $2}' "${here}/SHA256SUMS"); do
  [ -f "${sources}/${f}" ] || fail "${sources}/${f} is missing. Take monit-5.2.5.tar.gz and monit-5.29.0.tar.gz from github.com/cloudfoundry/bosh-linux-stemcell-builder (branch ubuntu-jammy, commit d43233002, stemcell_builder/stages/bosh_monit/assets/) and assets/validate.patch (commit 0eb1ed03) saved as monit-5.2.5-validate.patch, put them in one directory and set CELLGUARD_STEMCELL_SOURCES to it; they are checked against ${here}/SHA256SUMS"
done
(cd "${sources}" && sha256sum --quiet -c "${here}/SHA256SUMS") >&2 ||
  fail "a file in ${sources} does not match ${here}/SHA256SUMS"

# 2. The base rootfs: sdbox's debootstrap recipe plus runit and containerd.
log=${cache}/logs/base-rootfs.log
begin "base rootfs (debootstrap once, about a minute)" "${log}"
base=$(SDBOX_DIR=${cache}/base SDBOX_EXTRA_PACKAGES=${base_packages} \
  bash "${repo}/src/tests/harness/sdbox.sh" rootfs 2>"${log}") || fail "sdbox.sh rootfs failed"

# 3. The agent.
log=${cache}/logs/bosh-agent.log
begin "bosh-agent (spec/go.mod's pin)" "${log}"
agent=$(bash "${repo}/ci/scripts/bosh-agent.sh" 2>"${log}") || fail "building the agent failed"
agent_version=$("${agent}" -v)

# 4. monit, built as the stemcell builder builds it, installed under /var/vcap/bosh.
monit_key=$( { echo "${monit_version} recipe-1"; grep "monit-${monit_version}" "${here}/SHA256SUMS"; } | sha256sum | cut -c1-12)
monit_dir=${cache}/monit/${monit_version}-${monit_key}
log=${cache}/logs/monit-${monit_version}.log
begin "monit ${monit_version} (${monit_dir})" "${log}"
exec 9>"${cache}/monit/.lock-${monit_version}"; flock 9
if [ ! -e "${monit_dir}/.complete" ]; then
  rm -rf "${monit_dir}" "${monit_dir}.tmp"
  mkdir -p "${monit_dir}.tmp/src" "${monit_dir}.tmp/root"
  tar -xzf "${sources}/monit-${monit_version}.tar.gz" -C "${monit_dir}.tmp/src"
  (
    set -e
    cd "${monit_dir}.tmp/src/monit-${monit_version}"
    if [ "${monit_version}" = 5.2.5 ]; then
      patch -p1 <"${sources}/monit-5.2.5-validate.patch"
      # 5.2.5 predates gcc 10's -fno-common default.
      ./configure --prefix=/var/vcap/bosh --without-ssl CFLAGS=-fcommon
    else
      ./configure --prefix=/var/vcap/bosh --without-ssl --without-pam
    fi
    make -j2
    make install DESTDIR="${monit_dir}.tmp/root"
  ) >"${log}" 2>&1   # (needs gcc make flex bison zlib1g-dev: make deps)
  rm -rf "${monit_dir}.tmp/src"
  touch "${monit_dir}.tmp/.complete"
  mv "${monit_dir}.tmp" "${monit_dir}"
fi
exec 9>&-
monit_bin=${monit_dir}/root/var/vcap/bosh/bin/monit
[ -x "${monit_bin}" ] || fail "${monit_bin} missing"

# 5. The stemcell's content key: everything that goes into it.
key=$( {
  echo "${shape} ${base}"
  for f in "${agent}" "${monit_bin}" "${BASH_SOURCE[0]}"; do sha256sum <"${f}"; done
  (cd "${here}/assets" && find common "${shape}" -type f | LC_ALL=C sort | xargs sha256sum)  # relative paths
} | sha256sum | cut -c1-12)
name=cellguard-nspawn-${shape}
if [ "${shape}" = noble ] && [ "${monit_version}" != 5.2.5 ]; then name=${name}-monit-${monit_version}; fi
out=${cache}/stemcells/${name}-${key}
tarball=${out}/stemcell.tgz
exec 9>"${cache}/stemcells/.lock-${shape}"; flock 9
if [ -e "${tarball}" ]; then
  say "cached: ${tarball} (key ${key})"
  echo "${tarball}"
  exit 0
fi
# One stemcell per shape is kept: a new key replaces the old.
find "${cache}/stemcells" -mindepth 1 -maxdepth 1 -type d -name "${name}-*" -exec rm -rf {} +
work=${out}.tmp
rm -rf "${work}"
mkdir -p "${work}"
trap 'rm -rf "${work}"' EXIT
R=${work}/rootfs

log=${cache}/logs/assemble-${shape}.log
: >"${log}"
begin "assemble the rootfs (${work})" "${log}"
cp -a "${base}" "${R}"
in_root() { chroot "${R}" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" >>"${log}" 2>&1; }
# Maintainer scripts run in the chroot must not start or stop services (101:
# action forbidden); /proc is not mounted there, so they could not find any.
printf '#!/bin/sh\nexit 101\n' >"${R}/usr/sbin/policy-rc.d" && chmod 0755 "${R}/usr/sbin/policy-rc.d"
# Debian's monit (sdbox's rootfs has it) would answer instead of BOSH's; and
# containerd is Garden's to start (under monit), not the OS's.
in_root dpkg --purge monit
ln -sf /dev/null "${R}/etc/systemd/system/containerd.service"
# Users and groups the agent expects (it fails bootstrap without them).
in_root groupadd --system syslog
for g in vcap admin bosh_sshers bosh_sudoers; do in_root groupadd "${g}"; done
in_root useradd -m -g vcap -G admin,bosh_sshers,bosh_sudoers -s /bin/bash vcap
rm -f "${R}/usr/sbin/policy-rc.d"
mkdir -p "${R}/var/vcap/bosh/bin" "${R}/var/vcap/bosh/etc" "${R}/var/vcap/bosh/log" \
  "${R}/var/vcap/bosh/cpi" "${R}/var/vcap/monit/job" "${R}/var/vcap/monit/svlog" \
  "${R}/var/vcap/micro_bosh/data/cache"
# The agent copies /etc/resolv.conf there at bootstrap (Ubuntu's resolvconf
# layout) and fails without the directory.
mkdir -p "${R}/etc/resolvconf/resolv.conf.d"
chmod 0755 "${R}/var/vcap"
install -m 0755 "${agent}" "${R}/var/vcap/bosh/bin/bosh-agent"
for f in bosh-agent-rc bosh-start-logging-and-auditing restart_networking; do
  install -m 0755 "${here}/assets/common/${f}" "${R}/var/vcap/bosh/bin/${f}"
done
echo ubuntu >"${R}/var/vcap/bosh/etc/operating_system"
echo "${agent_version}" >"${R}/var/vcap/bosh/etc/agent-version"
install -m 0700 "${here}/assets/common/monitrc" "${R}/var/vcap/bosh/etc/monitrc"
install -m 0600 "${here}/assets/common/alerts.monitrc" "${R}/var/vcap/monit/alerts.monitrc"
: >"${R}/var/vcap/monit/empty.monitrc"   # monit refuses to start without an include
# The agent's configuration for a container (as bosh-lite's warden stemcell):
# no disk partitioning, the default /tmp, settings from the file the CPI binds
# in read-only at /var/vcap/bosh/cpi. Noble's agent manages monit with systemctl.
service_manager=""
if [ "${shape}" = noble ]; then service_manager=systemd; fi
jq -n --arg sm "${service_manager}" '{
  Platform: {Linux: ({UseDefaultTmpDir: true, UsePreformattedPersistentDisk: true,
                      BindMountPersistentDisk: true, SkipDiskSetup: true}
                     + (if $sm == "" then {} else {ServiceManager: $sm} end))},
  Infrastructure: {Settings: {Sources: [{Type: "File", SettingsPath: "/var/vcap/bosh/cpi/settings.json"}],
                              UseRegistry: false}}}' >"${R}/var/vcap/bosh/agent.json"

if [ "${shape}" = jammy ]; then
  install -m 0755 "${monit_bin}" "${R}/var/vcap/bosh/bin/monit-actual"
  install -m 0755 "${here}/assets/jammy/monit" "${R}/var/vcap/bosh/bin/monit"
  install -m 0644 "${here}/assets/jammy/monit-access-helper.sh" "${R}/var/vcap/bosh/etc/monit-access-helper.sh"
  # runsvdir-start: Debian's runit stage 2 (runsvdir on /etc/service), as the
  # stemcell installs /etc/runit/2 under that name.
  install -m 0750 "${R}/etc/runit/2" "${R}/usr/sbin/runsvdir-start"
  install -m 0644 "${here}/assets/jammy/runit.service" "${R}/etc/systemd/system/runit.service"
  ln -sf /etc/systemd/system/runit.service "${R}/etc/systemd/system/multi-user.target.wants/runit.service"
  # As the stemcell builder: /etc/service becomes a plain directory (Debian's is
  # a link into runit's runsvdir tree) holding the agent and monit.
  rm -rf "${R}/etc/service"
  mkdir -p "${R}/etc/sv" "${R}/etc/service"
  cp -a "${here}/assets/jammy/sv/agent" "${here}/assets/jammy/sv/monit" "${R}/etc/sv/"
  chmod 0755 "${R}"/etc/sv/*/run "${R}"/etc/sv/*/log/run
  chmod -R go-rwx "${R}/etc/sv/agent"
  ln -sfn /etc/sv/agent "${R}/etc/service/agent"
  ln -sfn /etc/sv/monit "${R}/etc/service/monit"
else
  install -m 0755 "${monit_bin}" "${R}/var/vcap/bosh/bin/monit"
  for u in monit bosh-agent; do
    install -m 0644 "${here}/assets/noble/${u}.service" "${R}/etc/systemd/system/${u}.service"
    ln -sf "/etc/systemd/system/${u}.service" "${R}/etc/systemd/system/multi-user.target.wants/${u}.service"
  done
  ln -sf /etc/systemd/system/bosh-agent.service "${R}/etc/systemd/system/agent.service"
fi

log=${cache}/logs/pack-${shape}.log
begin "pack stemcell.MF + image" "${log}"
# image: the rootfs as a tar (the CPI extracts it once per create_stemcell); the
# stemcell tarball around it is gzipped, as bosh-cli requires.
tar --numeric-owner -C "${R}" -cf "${work}/image" . 2>>"${log}"
sha1=$(sha1sum "${work}/image" | cut -d' ' -f1)
cat >"${work}/stemcell.MF" <<EOF
---
name: ${name}
version: "${key}"
api_version: 3
operating_system: ubuntu-${shape}
stemcell_formats:
- nspawn-rootfs
sha1: ${sha1}
cloud_properties:
  shape: ${shape}
  monit: "${monit_version}"
  bosh_agent: "${agent_version}"
EOF
tar -C "${work}" -czf "${work}/stemcell.tgz" stemcell.MF image 2>>"${log}"
mkdir -p "${out}"
mv "${work}/stemcell.tgz" "${work}/stemcell.MF" "${out}/"
say "built in $((SECONDS - T0))s: ${tarball} ($(du -h "${tarball}" | cut -f1), key ${key}; agent ${agent_version}, monit ${monit_version})"
echo "${tarball}"
