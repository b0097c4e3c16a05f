#!/usr/bin/env bash
# build.sh - a local BOSH stemcell for systemd-nspawn VMs (the nspawn CPI,
# ../cpi/nspawn-cpi) from Ubuntu's userland, in one of the shapes whose supervisor
# seed 000 hits:
#
#   build.sh xenial  systemd 229 -> runit.service -> runsvdir -> monit 5.2.5 (+ validate.patch)
#                    and the agent, both under runit (the seed's era)
#   build.sh jammy   systemd 249, the same runit chain
#   build.sh noble   systemd 255 -> monit.service -> monit 5.2.5 (+ validate.patch);
#                    bosh-agent.service
#
# Prints the stemcell tarball's path on stdout (stemcell.MF + image, what `bosh
# upload-stemcell` takes); progress goes to stderr.
# Built once per content key (shape, base rootfs, agent binary, monit build, this
# script and assets/) into $CELLGUARD_BOSH_CACHE/stemcells (default
# /var/tmp/cellguard-bosh); a second call with the same inputs only prints the path.
#
# Exit status: 0 built or cached; 1 a step failed; 2 bad usage; 3 the shape was
# SKIPPED because Ubuntu's archive cannot be reached (the line on stderr names the
# shape and the archive; the caller decides, and in CI a skipped shape fails).
#
# Inputs:
#   - the base rootfs: src/tests/harness/sdbox.sh's debootstrap of the shape's
#     Ubuntu suite from Ubuntu's archive (keyring pinned there), plus what the agent
#     and a real stemcell need (base_packages below); its own cache under
#     $CELLGUARD_BOSH_CACHE/base;
#   - the real bosh-agent, built from spec/go.mod's pin (ci/scripts/bosh-agent.sh);
#   - BOSH's monit sources from $CELLGUARD_STEMCELL_SOURCES (default: ../shared/stemcell
#     beside the repository, or beside its main checkout when this is a git worktree),
#     checked against SHA256SUMS here.
# A failing step says which one, the command, and where its log is. Needs root
# (chroot, file owners).
set -Eeuo pipefail
# The whole script is one block, which bash parses before running any of it: editing
# this file while a build runs cannot make that build run a mix of old and new lines.
{
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
# supervisor: which assets/ directory holds the chain from systemd to monit.
case ${shape} in
  xenial|jammy) monit_version=5.2.5 supervisor=runit ;;
  noble) monit_version=${CELLGUARD_NOBLE_MONIT:-5.2.5} supervisor=systemd ;;
  *) echo "usage: build.sh xenial|jammy|noble" >&2; exit 2 ;;
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
# On top of sdbox.sh's packages (systemd, dbus, runc, ...):
# - runit runs the runit shapes' agent and monit; the agent's DNS setup calls
#   resolvconf (measured: bootstrap fails without it), or with ServiceManager systemd
#   (noble) restarts systemd-resolved (bosh-agent platform/provider.go,
#   dnsresolver/dns_systemd_resolver.go); noble has no resolvconf package;
# - iptables: the agent's NATS firewall (bosh-agent platform/net/firewall_provider_linux.go)
#   inserts `-m cgroup --cgroup` rules with it; ca-certificates: the agent runs
#   `update-ca-certificates -f` on update_settings; openssh-server and sudo: `bosh ssh`
#   (the agent adds users, keys and sudoers, and reads /etc/ssh/ssh_host_rsa_key.pub);
# - gcc, make, patch, flex, bison, zlib1g-dev: monit is built inside the rootfs with the
#   suite's own libc (a host-built one needs the host's GLIBC_2.34, xenial has 2.23);
#   real stemcells carry a compiler too (bosh-linux-stemcell-builder,
#   bosh-stemcell/lib/bosh/stemcell/stage_collection.rb: ubuntu_os_stages runs
#   base_ubuntu_build_essential), which BOSH's compilation VMs use;
# - containerd (jammy, noble): Garden's runtime in containerd mode, which the test
#   release's stand-in uses (on a real cell garden-runc-release ships it); xenial's
#   release pocket has none.
dns=resolvconf
[ "${shape}" != noble ] || dns=systemd-resolved
base_packages="runit ${dns} iptables ca-certificates openssh-server sudo netbase gcc make patch flex bison zlib1g-dev libc6-dev"
[ "${shape}" = xenial ] || base_packages="${base_packages} containerd"

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
begin() { step=$1; log=${2:-}; say "${step} (at $((SECONDS - T0))s)"; }
trap 'fail "\`${BASH_COMMAND}\` exited $?"' ERR

[ "$(id -u)" = 0 ] || { step=start; fail "must run as root (chroot, file owners)"; }
mkdir -p "${cache}/logs" "${cache}/stemcells"

# 1. BOSH's monit sources, as the stemcell builder ships them.
begin "check monit sources in ${sources}"
for f in $(awk '{print $2}' "${here}/SHA256SUMS"); do
  [ -f "${sources}/${f}" ] || fail "${sources}/${f} is missing. Take monit-5.2.5.tar.gz and monit-5.29.0.tar.gz from github.com/cloudfoundry/bosh-linux-stemcell-builder (branch ubuntu-jammy, commit d43233002, stemcell_builder/stages/bosh_monit/assets/) and assets/validate.patch (commit 0eb1ed03) saved as monit-5.2.5-validate.patch, put them in one directory and set CELLGUARD_STEMCELL_SOURCES to it; they are checked against ${here}/SHA256SUMS"
done
(cd "${sources}" && sha256sum --quiet -c "${here}/SHA256SUMS") >&2 ||
  fail "a file in ${sources} does not match ${here}/SHA256SUMS"

# 2. The base rootfs: sdbox's debootstrap recipe for the Ubuntu suite, plus base_packages.
sdbox_base() { SDBOX_DIR=${cache}/base SDBOX_SUITE=${shape} SDBOX_EXTRA_PACKAGES=${base_packages} \
  bash "${repo}/src/tests/harness/sdbox.sh" "$@"; }
log=${cache}/logs/base-rootfs-${shape}.log
begin "base rootfs (debootstrap of Ubuntu ${shape} once, minutes)" "${log}"
base_source=$(sdbox_base source 2>"${log}") || fail "sdbox.sh source failed"
if grep -qx 'ROOTFS_CACHED=false' <<<"${base_source}"; then
  mirror=$(sed -n 's/^MIRROR=//p' <<<"${base_source}")
  if ! curl -fsS --max-time 30 -o /dev/null "${mirror}/dists/${shape}/Release" 2>>"${log}"; then
    say "SKIPPED: shape ${shape} not built: Ubuntu's archive ${mirror} cannot be reached ($(tail -n 1 "${log}"))"
    exit 3
  fi
fi
base=$(sdbox_base rootfs 2>"${log}") || fail "sdbox.sh rootfs failed"

# 3. The agent.
log=${cache}/logs/bosh-agent.log
begin "bosh-agent (spec/go.mod's pin)" "${log}"
agent=$(bash "${repo}/ci/scripts/bosh-agent.sh" 2>"${log}") || fail "building the agent failed"
agent_version=$("${agent}" -v)

# 4. monit: built inside the rootfs below (the suite's compiler and libc), as the
# stemcell builder builds it in its chroot (stemcell_builder/stages/bosh_monit/apply.sh).
monit_sum=$(grep " monit-${monit_version}" "${here}/SHA256SUMS")

# 5. The stemcell's content key: everything that goes into it.
key=$( {
  echo "${shape} ${base}"
  echo "${monit_sum}"
  for f in "${agent}" "${BASH_SOURCE[0]}"; do sha256sum <"${f}"; done
  (cd "${here}/assets" && find common "${supervisor}" -type f | LC_ALL=C sort | xargs sha256sum)  # relative paths
} | sha256sum | cut -c1-12)
name=cellguard-nspawn-${shape}
if [ "${shape}" = noble ] && [ "${monit_version}" != 5.2.5 ]; then name=${name}-monit-${monit_version}; fi
out=${cache}/stemcells/${name}-${key}
tarball=${out}/stemcell.tgz
exec 9>"${cache}/stemcells/.lock-${shape}"; flock 9
if [ -e "${tarball}" ]; then
  touch "${out}"   # used: kept another day
  say "cached: ${tarball} (key ${key})"
  echo "${tarball}"
  exit 0
fi
# Other keys of the shape go once unused for a day: engineers and CI share the cache
# with different build.sh versions at once, and removing another key's stemcell took
# a tarball away between build.sh printing its path and bosh upload-stemcell reading it.
find "${cache}/stemcells" -mindepth 1 -maxdepth 1 -type d -name "${name}-*" -mmin +1440 -exec rm -rf {} +
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
# Ubuntu's monit (sdbox's rootfs has it) would answer instead of BOSH's; and
# containerd is Garden's to start (under monit), not the OS's.
in_root dpkg --purge monit
[ "${shape}" = xenial ] || ln -sf /dev/null "${R}/etc/systemd/system/containerd.service"
# Users and groups the agent expects (it fails bootstrap without them).
in_root sh -c 'getent group syslog >/dev/null || groupadd --system syslog'
for g in vcap admin bosh_sshers bosh_sudoers; do in_root sh -c "getent group ${g} >/dev/null || groupadd ${g}"; done
in_root useradd -m -g vcap -G admin,bosh_sshers,bosh_sudoers -s /bin/bash vcap
rm -f "${R}/usr/sbin/policy-rc.d"

log=${cache}/logs/monit-${shape}.log
: >"${log}"
begin "build monit ${monit_version} inside the rootfs" "${log}"
mkdir -p "${R}/tmp/monit-build"
tar -xzf "${sources}/monit-${monit_version}.tar.gz" -C "${R}/tmp/monit-build"
cp "${sources}/monit-5.2.5-validate.patch" "${R}/tmp/monit-build/validate.patch"
if [ "${monit_version}" = 5.2.5 ]; then
  # 5.2.5 predates gcc 10's -fno-common default.
  in_root bash -c 'set -e; cd /tmp/monit-build/monit-5.2.5; patch -p1 <../validate.patch
    ./configure --prefix=/var/vcap/bosh --without-ssl CFLAGS=-fcommon; make -j2; make install'
else
  in_root bash -c 'set -e; cd /tmp/monit-build/monit-5.29.0
    ./configure --prefix=/var/vcap/bosh --without-ssl --without-pam; make -j2; make install'
fi
rm -rf "${R}/tmp/monit-build"
monit_bin=/var/vcap/bosh/bin/monit
in_root "${monit_bin}" -V

log=${cache}/logs/assemble-${shape}.log
begin "install the agent, its assets and the ${supervisor} chain" "${log}"
mkdir -p "${R}/var/vcap/bosh/bin" "${R}/var/vcap/bosh/etc" "${R}/var/vcap/bosh/log" \
  "${R}/var/vcap/bosh/cpi" "${R}/var/vcap/monit/job" "${R}/var/vcap/monit/svlog" \
  "${R}/var/vcap/micro_bosh/data/cache"
# The agent copies /etc/resolv.conf there at bootstrap (Ubuntu's resolvconf
# layout) and fails without the directory.
mkdir -p "${R}/etc/resolvconf/resolv.conf.d"
chmod 0755 "${R}/var/vcap"
rm -f "${R}"/etc/ssh/ssh_host_*
# net_cls,net_prio: the hierarchy the agent needs that this machine's host does not mount
# (perf_event and hugetlb, also unmounted, are not used by the agent): sdbox.sh creates it
# for the VM, which mounts it at boot (README, "The v1 hierarchies").
mkdir -p "${R}/etc/sdbox"
echo net_cls,net_prio >"${R}/etc/sdbox/v1-hierarchies"
install -m 0755 "${here}/assets/common/mount-v1-hierarchies" "${R}/usr/local/sbin/mount-v1-hierarchies"
install -m 0644 "${here}/assets/common/v1-hierarchies.service" "${R}/etc/systemd/system/v1-hierarchies.service"
mkdir -p "${R}/etc/systemd/system/sysinit.target.wants"
ln -sf /etc/systemd/system/v1-hierarchies.service "${R}/etc/systemd/system/sysinit.target.wants/v1-hierarchies.service"
install -m 0644 "${here}/assets/common/ssh-host-keys.service" "${R}/etc/systemd/system/ssh-host-keys.service"
ln -sf /etc/systemd/system/ssh-host-keys.service "${R}/etc/systemd/system/multi-user.target.wants/ssh-host-keys.service"
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

if [ "${supervisor}" = runit ]; then
  mv "${R}${monit_bin}" "${R}/var/vcap/bosh/bin/monit-actual"
  install -m 0755 "${here}/assets/runit/monit" "${R}/var/vcap/bosh/bin/monit"
  install -m 0644 "${here}/assets/runit/monit-access-helper.sh" "${R}/var/vcap/bosh/etc/monit-access-helper.sh"
  # runsvdir-start: xenial's runit ships it; newer ones have only runit's stage 2
  # (runsvdir on /etc/service), which the stemcell installs under that name.
  [ -x "${R}/usr/sbin/runsvdir-start" ] || install -m 0750 "${R}/etc/runit/2" "${R}/usr/sbin/runsvdir-start"
  install -m 0644 "${here}/assets/runit/runit.service" "${R}/etc/systemd/system/runit.service"
  ln -sf /etc/systemd/system/runit.service "${R}/etc/systemd/system/multi-user.target.wants/runit.service"
  # As the stemcell builder: /etc/service becomes a plain directory (Debian's is
  # a link into runit's runsvdir tree) holding the agent and monit.
  rm -rf "${R}/etc/service"
  mkdir -p "${R}/etc/sv" "${R}/etc/service"
  cp -a "${here}/assets/runit/sv/agent" "${here}/assets/runit/sv/monit" "${R}/etc/sv/"
  chmod 0755 "${R}"/etc/sv/*/run "${R}"/etc/sv/*/log/run
  chmod -R go-rwx "${R}/etc/sv/agent"
  ln -sfn /etc/sv/agent "${R}/etc/service/agent"
  ln -sfn /etc/sv/monit "${R}/etc/service/monit"
else
  for u in monit bosh-agent; do
    install -m 0644 "${here}/assets/systemd/${u}.service" "${R}/etc/systemd/system/${u}.service"
    ln -sf "/etc/systemd/system/${u}.service" "${R}/etc/systemd/system/multi-user.target.wants/${u}.service"
  done
  ln -sf /etc/systemd/system/bosh-agent.service "${R}/etc/systemd/system/agent.service"
fi

# bosh ssh: the agent puts each ssh user in bosh_sudoers, and a real stemcell lets that
# group sudo without a password (bosh-linux-stemcell-builder's spec: /etc/sudoers holds
# "%bosh_sudoers ALL=(ALL) NOPASSWD: ALL"). Without it `bosh ssh -c 'sudo ...'` waited
# for a password on the session's tty (the fleet's way-out, run 4).
echo '%bosh_sudoers ALL=(ALL) NOPASSWD: ALL' >"${R}/etc/sudoers.d/bosh_sudoers"
chmod 0440 "${R}/etc/sudoers.d/bosh_sudoers"

# ca-certificates: none of Ubuntu's bundle is selected ("!" in ca-certificates.conf).
# The agent runs `update-ca-certificates -f` on every update_settings with a 60 s
# timeout, three tries (bosh-agent platform/cert/cert_manager.go, provider.go), and
# over Ubuntu's ~140 CAs that took 44-280 s under this machine's load: the fleet's
# VMs failed update_settings with "Updating certificates with retries". The VMs
# reach nothing outside the lab, and the one CA they are given, the director's,
# comes through env.bosh (bosh-trusted-cert-N.crt), which -f still links. A real
# stemcell selects them all; this is the one difference (README, "The stemcell").
sed -i -E 's/^([^#![:space:]])/!\1/' "${R}/etc/ca-certificates.conf"
in_root update-ca-certificates -f

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
# gzip -1: the stemcell is a local file, so packing time counts more than its size (README)
tar -C "${work}" -cf - stemcell.MF image 2>>"${log}" | gzip -1 >"${work}/stemcell.tgz"
mkdir -p "${out}"
mv "${work}/stemcell.tgz" "${work}/stemcell.MF" "${out}/"
say "built in $((SECONDS - T0))s: ${tarball} ($(du -h "${tarball}" | cut -f1), key ${key}; agent ${agent_version}, monit ${monit_version})"
echo "${tarball}"
exit 0
}
