#!/usr/bin/env bash
# stemcell.sh - the noble stemcell as a bootable image, for the QEMU CPI
# (src/tests/bosh/cpi/qemu-cpi; README.md here).
#
#   stemcell.sh          build it once (minutes), print the stemcell tarball's path
#   stemcell.sh source   KEY=VALUE lines: STEMCELL, STEMCELL_CACHED=true|false (no build)
#
# It is the project's noble stemcell (src/tests/bosh/stemcell/build.sh noble: noble's
# userland, BOSH's monit, bosh-agent v2.759.0, monit.service and bosh-agent.service as
# the builder's noble branch writes them) made into a machine:
#   - upgraded from noble-updates and noble-security, plus udev (without it
#     dev-ttyS0.device never appeared and boot waited 1m30, measured for image.sh);
#   - Ubuntu's kernel as ../qemu/SHA256SUMS pins it (vmdisk.bash, shared with image.sh),
#     booted with -kernel and the noble stemcells' command line (vmdisk.bash: no cgroup
#     flag, so cgroup v2);
#   - the agent's settings from a config drive, as on OpenStack: agent.json's source is
#     the builder's ConfigDrive source (bosh_openstack_agent_settings/apply.sh, branch
#     ubuntu_noble_poc, commit dc7da914d12c64813275fb4955a0f8f5128355ac), read by
#     bosh-agent v2.759.0's infrastructure/config_drive_settings_source.go;
#   - the network configured by the agent (systemd-networkd, enabled, and the builder's
#     restart_networking, bosh_go_agent/apply.sh), not by the CPI;
#   - no v1 hierarchy: nspawn's net_cls mount is removed (on cgroup2 the agent skips its
#     NATS firewall, platform/net/firewall_provider_linux.go);
#   - cellguard-9p-shares.service: the host directories the CPI shares (the director's
#     local blobstore) mounted at the paths the config drive names, before the agent.
#
# The stemcell tarball holds stemcell.MF (format cellguard-qemu-raw, operating system
# ubuntu-noble, the nspawn noble stemcell's version) and image, a tar of disk.img (raw ext4, sparse), vmlinuz, cmdline and
# image.env. Cached by content key (build.sh's stemcell, this script, assets, vmdisk.bash,
# SHA256SUMS) in $CELLGUARD_QEMU_CACHE/stemcells (default /var/tmp/cellguard-qemu);
# other keys go once unused for a day.
#
# Exit status: 0 built or cached; 1 a step failed; 2 bad usage; 3 SKIPPED (build.sh's 3,
# or Ubuntu's archive cannot be reached). Needs root.
set -Eeuo pipefail
# One block, parsed before it runs: editing the file cannot change a running build.
{
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../../.." && pwd)
cache=${CELLGUARD_QEMU_CACHE:-/var/tmp/cellguard-qemu}
mirror=${CELLGUARD_QEMU_MIRROR:-http://archive.ubuntu.com/ubuntu}
. "${here}/vmdisk.bash"

say() { echo "qemu stemcell: $*" >&2; }
step="" log=""
fail() {
  if [ "${BASH_SUBSHELL}" != 0 ]; then echo "FAILED: $*" >&2; exit 1; fi
  say "FAILED at step '${step}': $*${log:+; log: ${log}}"; exit 1
}
begin() { step=$1; log=${2:-}; say "${step} (at ${SECONDS}s)"; }
trap 'fail "\`${BASH_COMMAND}\` exited $?"' ERR

[ "$(id -u)" = 0 ] || { step=start; fail "must run as root (chroot, file owners)"; }
case ${1:-build} in build|source) ;; *) echo "usage: stemcell.sh [source]" >&2; exit 2 ;; esac
mkdir -p "${cache}/logs" "${cache}/stemcells"
step=pins
vmdisk_kernel_pins

begin "the nspawn noble stemcell (build.sh noble)"
rc=0
nspawn=$(bash "${repo}/src/tests/bosh/stemcell/build.sh" noble) || rc=$?
[ "${rc}" != 3 ] || { say "SKIPPED: build.sh noble was skipped"; exit 3; }
[ "${rc}" = 0 ] || fail "build.sh noble exited ${rc}"

key=$( {
  echo "${nspawn} ${mirror}"
  sha256sum <"${BASH_SOURCE[0]}"
  cat $(vmdisk_key_files) | sha256sum
  (cd "${here}/stemcell-assets" && find . -type f | LC_ALL=C sort | xargs sha256sum)
} | sha256sum | cut -c1-12)
name=cellguard-qemu-noble
out=${cache}/stemcells/${name}-${key}
tarball=${out}/stemcell.tgz
if [ "${1:-build}" = source ]; then
  cached=false
  [ -e "${tarball}" ] && cached=true
  printf 'STEMCELL=%s\nSTEMCELL_CACHED=%s\n' "${tarball}" "${cached}"
  exit 0
fi
exec 9>"${cache}/stemcells/.lock"; flock 9
if [ -e "${tarball}" ]; then
  touch "${out}"   # used: kept another day
  echo "${tarball}"
  exit 0
fi
if ! curl -fsS --max-time 30 -o /dev/null "${mirror}/dists/noble-updates/Release" 2>>"${cache}/logs/stemcell.log"; then
  say "SKIPPED: the noble stemcell image not built: Ubuntu's archive ${mirror} cannot be reached"
  exit 3
fi
find "${cache}/stemcells" -mindepth 1 -maxdepth 1 -type d -name "${name}-*" -mmin +1440 -exec rm -rf {} +

work=${out}.tmp
rm -rf "${work}"
mkdir -p "${work}"
trap 'rm -rf "${work}"' EXIT
R=${work}/rootfs
log=${cache}/logs/stemcell-${key}.log
: >"${log}"
in_root() { vmdisk_in_root "$@"; }

begin "unpack the nspawn stemcell's rootfs" "${log}"
mkdir -p "${R}"
tar -xzOf "${nspawn}" image | tar --numeric-owner -xpf - -C "${R}"

begin "apt: upgrade, udev" "${log}"
vmdisk_apt_begin "${mirror}"
in_root apt-get -y -q -o Dpkg::Options::=--force-confold upgrade
in_root apt-get -y -q --no-install-recommends install udev
# No public CA, as build.sh leaves the nspawn stemcell: the upgrade's ca-certificates
# selects the CAs new to it (17 here), and the agent's update_settings runs
# `update-ca-certificates -f` with 60 s a try, three tries (bosh-agent
# platform/cert/cert_manager.go; 60 in platform/provider.go); under TCG at load 20 all
# three ran out (fleet run 1: "Updating certificates with retries" on every VM). The CAs'
# lines go, not only their selection: with 146 lines deselected ("!") the script still
# forks basename and sed for each (its remove loop): 180 execs and 0.21-0.26 s of CPU
# natively, against 34 execs and 0.04 s with none listed (measured with the image's own
# script and --certsconf); under TCG at a fifth of a core the deselected form ran out
# of its three minutes again (fleet run 3, load 23-60).
sed -i -E '/^[^#]/d' "${R}/etc/ca-certificates.conf"
in_root update-ca-certificates -f

begin "kernel ${image_pkg} ${kversion} (pinned in SHA256SUMS)" "${log}"
vmdisk_install_kernel
install -m 0644 "${R}/boot/vmlinuz-${abi}" "${work}/vmlinuz"

begin "a machine: config drive, networkd, 9p shares; no nspawn parts" "${log}"
# The agent's settings from the config drive the CPI attaches (label config-2), the
# OpenStack stemcell's ConfigDrive source. Of build.sh's warden-like platform options
# SkipDiskSetup, UseDefaultTmpDir and ServiceManager stay (the VM has no ephemeral
# disk: /var/vcap/data is on the root disk); BindMountPersistentDisk and
# UsePreformattedPersistentDisk go: with the first the agent mounts every disk with
# "-o bind", the config drive too, which fails ("Not a directory", measured;
# bosh-agent platform/disk/linux_bind_mounter.go).
jq '.Infrastructure.Settings.Sources = [{Type: "ConfigDrive",
      DiskPaths: ["/dev/disk/by-label/CONFIG-2", "/dev/disk/by-label/config-2"],
      MetaDataPath: "ec2/latest/meta-data.json", UserDataPath: "ec2/latest/user-data"}]
    | del(.Platform.Linux.BindMountPersistentDisk, .Platform.Linux.UsePreformattedPersistentDisk)' \
  "${R}/var/vcap/bosh/agent.json" >"${work}/agent.json"
install -m 0644 "${work}/agent.json" "${R}/var/vcap/bosh/agent.json"
# The agent writes /etc/systemd/network/10_eth0.network and runs restart_networking.
printf '#!/bin/bash\nsystemctl restart systemd-networkd\n' >"${R}/var/vcap/bosh/bin/restart_networking"
chmod 0755 "${R}/var/vcap/bosh/bin/restart_networking"
in_root systemctl enable systemd-networkd
# nspawn's v1 hierarchy (net_cls for the agent's NATS firewall): a VM on cgroup2 has none.
rm -f "${R}/etc/sdbox/v1-hierarchies" "${R}/etc/systemd/system/sysinit.target.wants/v1-hierarchies.service" \
  "${R}/etc/systemd/system/v1-hierarchies.service" "${R}/usr/local/sbin/mount-v1-hierarchies"
install -m 0755 "${here}/stemcell-assets/mount-9p-shares" "${R}/usr/local/sbin/mount-9p-shares"
install -m 0644 "${here}/stemcell-assets/cellguard-9p-shares.service" "${R}/etc/systemd/system/cellguard-9p-shares.service"
ln -sf /etc/systemd/system/cellguard-9p-shares.service "${R}/etc/systemd/system/multi-user.target.wants/cellguard-9p-shares.service"
# No login prompt on the console (a file): under TCG at load 20 its dev-ttyS0.device
# timed out after 90 s, which the boot waited for (image.sh, measured).
ln -sf /dev/null "${R}/etc/systemd/system/serial-getty@.service"
: >"${R}/etc/machine-id"   # each VM makes its own
vmdisk_apt_end

begin "ext4 image" "${log}"
systemd_version=$(chroot "${R}" dpkg-query -W -f='${Version}' systemd)
# 4 GiB free: /var/vcap/data (packages, jobs, logs) lives on the root disk.
size_mb=$(vmdisk_make "${work}/disk.img" 4096)
rm -rf "${R}"
echo "${vmdisk_cmdline}" >"${work}/cmdline"
cat >"${work}/image.env" <<ENV
SUITE=noble
KERNEL_ABI=${abi}
KERNEL_VERSION=${kversion}
SYSTEMD_VERSION=${systemd_version}
DISK_MB=${size_mb}
KEY=${key}
NSPAWN_STEMCELL=${nspawn}
ENV

begin "pack stemcell.MF + image" "${log}"
tar -C "${work}" -S -cf "${work}/image" disk.img vmlinuz cmdline image.env
sha1=$(sha1sum "${work}/image" | cut -d' ' -f1)
agent_version=$(tar -xzOf "${nspawn}" stemcell.MF | sed -n 's/^  bosh_agent: "\(.*\)"$/\1/p')
# The nspawn stemcell's version, as an IaaS's stemcells of one release share theirs: the
# director finds a compiled package by os and exact version (bosh v283.0.0
# CompiledPackageFinder#find_exact_match), so packages compiled on an nspawn noble VM
# (the fleet's compilation AZ) or exported from one serve these VMs; no Go under TCG.
nspawn_version=$(tar -xzOf "${nspawn}" stemcell.MF | sed -n 's/^version: "\(.*\)"$/\1/p')
[ -n "${nspawn_version}" ] || fail "no version in ${nspawn}'s stemcell.MF"
cat >"${work}/stemcell.MF" <<EOF
---
name: ${name}
version: "${nspawn_version}"
api_version: 3
operating_system: ubuntu-noble
stemcell_formats:
- cellguard-qemu-raw
sha1: ${sha1}
cloud_properties:
  kernel: "${abi}"
  systemd: "${systemd_version}"
  bosh_agent: "${agent_version}"
EOF
tar -C "${work}" -cf - stemcell.MF image | gzip -1 >"${work}/stemcell.tgz"
mkdir -p "${out}"
mv "${work}/stemcell.tgz" "${work}/stemcell.MF" "${work}/image.env" "${out}/"
say "built in ${SECONDS}s: ${tarball} ($(du -h "${tarball}" | cut -f1); kernel ${abi}, systemd ${systemd_version}, ${size_mb} MB disk)"
echo "${tarball}"
exit 0
}
