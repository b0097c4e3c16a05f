#!/usr/bin/env bash
# image.sh - the noble VM image qemuvm boots (src/tests/testkit/qemuvm; README.md here):
# Ubuntu noble's userland, Ubuntu's own kernel as SHA256SUMS pins it, and the test agent.
#
#   image.sh          build the image once (minutes), print its directory on stdout
#   image.sh source   KEY=VALUE lines: IMAGE_DIR, IMAGE_CACHED=true|false, MIRROR (no build)
#
# The directory holds disk.img (raw ext4, the whole root filesystem, no partition
# table: the kernel mounts /dev/vda), vmlinuz (Ubuntu's, booted with -kernel: virtio
# and ext4 are built into linux-image-*-generic, so no initrd), cmdline (the kernel
# command line), image.env (what it is) and packages.txt (dpkg -l). VMs boot it
# through a throwaway overlay (QEMU's snapshot=on): nothing ever writes to it.
# Cached by content key (this script, SHA256SUMS, the agent's sources, the base rootfs)
# in $CELLGUARD_QEMU_CACHE (default /var/tmp/cellguard-qemu), as sdbox.sh caches its
# rootfs; a second call with the same inputs only prints the path. Other keys go once
# unused for a day.
#
# Inputs:
#   - the base rootfs: sdbox.sh's debootstrap of noble from Ubuntu's archive (the
#     archive keyring pinned there) with udev and a stemcell's cheap userland
#     (base_packages below), cached in $CELLGUARD_QEMU_CACHE/base;
#   - noble-updates and noble-security: apt upgrades the rootfs (checking the
#     archive's signatures), then fetches the kernel packages SHA256SUMS names
#     (linux-image and linux-modules, the same version) and this script checks each
#     .deb against SHA256SUMS before dpkg installs it. A new kernel is a new line
#     pair there (and a new image);
#   - the agent: go build of src/tests/testkit/qemuvm/guestagent (CGO_ENABLED=0).
#
# Exit status: 0 built or cached; 1 a step failed; 2 bad usage; 3 SKIPPED: not cached
# and Ubuntu's archive cannot be reached (the caller decides; in CI that fails).
# Needs root (chroot, file owners).
set -Eeuo pipefail
# One block, parsed before it runs: editing the file cannot change a running build.
{
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../../.." && pwd)
cache=${CELLGUARD_QEMU_CACHE:-/var/tmp/cellguard-qemu}
mirror=${CELLGUARD_QEMU_MIRROR:-http://archive.ubuntu.com/ubuntu}
suite=noble
# On top of sdbox.sh's packages (systemd, dbus, runc, kmod, ...), what a BOSH stemcell's
# userland has that costs little: udev (it links /dev/virtio-ports/NAME for the agent;
# without it dev-ttyS0.device never appeared and the boot waited 1m30 for it, measured),
# the stemcell builder's network and ssh tools,
# systemd-resolved (noble's DNS), containerd (Garden's runtime), e2fsprogs.
base_packages="udev kmod iptables ca-certificates sudo netbase e2fsprogs containerd openssh-server systemd-resolved"
# The kernel, its pins and the command line (the noble stemcells'): vmdisk.bash, which
# the noble stemcell as a bootable image (stemcell.sh) shares.
. "${here}/vmdisk.bash"
cmdline=${vmdisk_cmdline}

say() { echo "qemu image: $*" >&2; }
step="" log=""
fail() { say "FAILED at step '${step}': $*${log:+; log: ${log}}"; exit 1; }
begin() { step=$1; log=${2:-}; say "${step} (at ${SECONDS}s)"; }
trap 'fail "\`${BASH_COMMAND}\` exited $?"' ERR

[ "$(id -u)" = 0 ] || { step=start; fail "must run as root (chroot, file owners)"; }
case ${1:-build} in build|source) ;; *) echo "usage: image.sh [source]" >&2; exit 2 ;; esac
mkdir -p "${cache}/logs"

step=pins
vmdisk_kernel_pins

sdbox_base() { SDBOX_DIR=${cache}/base SDBOX_SUITE=${suite} SDBOX_MIRROR=${mirror} \
  SDBOX_EXTRA_PACKAGES=${base_packages} bash "${repo}/src/tests/harness/sdbox.sh" "$@"; }
base_source=$(sdbox_base source 2>>"${cache}/logs/base.log")
base=$(sed -n 's/^ROOTFS=//p' <<<"${base_source}")
key=$( {
  echo "${suite} ${base} ${mirror}"
  sha256sum <"${BASH_SOURCE[0]}"
  cat $(vmdisk_key_files) | sha256sum
  (cd "${repo}" && find src/tests/testkit/qemuvm/guestagent src/tests/testkit/qemuvm/wire -name '*.go' ! -name '*_test.go' |
    LC_ALL=C sort | xargs sha256sum; sha256sum go.mod)
} | sha256sum | cut -c1-12)
out=${cache}/images/noble-${abi}-${key}
cached=false
[ -e "${out}/image.env" ] && cached=true
if [ "${1:-build}" = source ]; then
  printf 'IMAGE_DIR=%s\nIMAGE_CACHED=%s\nMIRROR=%s\n' "${out}" "${cached}" "${mirror}"
  exit 0
fi

mkdir -p "${cache}/images"
exec 9>"${cache}/images/.lock"; flock 9
if [ -e "${out}/image.env" ]; then
  touch "${out}"   # used: kept another day
  echo "${out}"
  exit 0
fi
if ! curl -fsS --max-time 30 -o /dev/null "${mirror}/dists/${suite}-updates/Release" 2>>"${cache}/logs/base.log"; then
  say "SKIPPED: noble VM image not built: Ubuntu's archive ${mirror} cannot be reached"
  exit 3
fi
find "${cache}/images" -mindepth 1 -maxdepth 1 -type d -name 'noble-*' -mmin +1440 -exec rm -rf {} +

log=${cache}/logs/base.log
begin "base rootfs (sdbox.sh's debootstrap of noble, once, minutes)" "${log}"
base=$(sdbox_base rootfs 2>>"${log}")

work=${out}.tmp
rm -rf "${work}"
mkdir -p "${work}"
trap 'rm -rf "${work}"' EXIT
R=${work}/rootfs
log=${cache}/logs/image-${key}.log
: >"${log}"
begin "copy the base rootfs" "${log}"
cp -a "${base}" "${R}"
in_root() { vmdisk_in_root "$@"; }

begin "apt: noble-updates and noble-security, upgrade" "${log}"
vmdisk_apt_begin "${mirror}"
in_root apt-get -y -q -o Dpkg::Options::=--force-confold upgrade

begin "kernel ${image_pkg} ${kversion} (pinned in SHA256SUMS)" "${log}"
vmdisk_install_kernel
install -m 0644 "${R}/boot/vmlinuz-${abi}" "${work}/vmlinuz"

begin "the agent, units, identity" "${log}"
(cd "${repo}" && CGO_ENABLED=0 go build -trimpath -o "${R}/usr/local/sbin/cellguard-vm-agent" ./src/tests/testkit/qemuvm/guestagent) >>"${log}" 2>&1
cat >"${R}/etc/systemd/system/cellguard-vm-agent.service" <<'UNIT'
[Unit]
Description=cellguard test VM agent (virtio-serial port cellguard.agent)
After=systemd-udevd.service

[Service]
ExecStart=/usr/local/sbin/cellguard-vm-agent
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/cellguard-vm-agent.service "${R}/etc/systemd/system/multi-user.target.wants/cellguard-vm-agent.service"
# As the nspawn stemcell (../bosh/stemcell/build.sh): containerd is Garden's to start,
# not the OS's. No login prompt on the console (the agent is the way in): under TCG at
# load 20 its dev-ttyS0.device timed out after 90 s, which the boot waited for (measured).
ln -sf /dev/null "${R}/etc/systemd/system/containerd.service"
ln -sf /dev/null "${R}/etc/systemd/system/serial-getty@.service"
echo cellguard-noble >"${R}/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 cellguard-noble\n' >"${R}/etc/hosts"
: >"${R}/etc/machine-id"            # each boot makes its own
rm -f "${R}"/etc/ssh/ssh_host_*_key*   # and its own ssh host keys (ssh.service's sshd-keygen)
vmdisk_apt_end

begin "ext4 image" "${log}"
systemd_version=$(chroot "${R}" dpkg-query -W -f='${Version}' systemd)
chroot "${R}" dpkg-query -W -f='${Package} ${Version}\n' >"${work}/packages.txt"
size_mb=$(vmdisk_make "${work}/disk.img" 1024)
rm -rf "${R}"
echo "${cmdline}" >"${work}/cmdline"
cat >"${work}/image.env" <<ENV
SUITE=${suite}
KERNEL_ABI=${abi}
KERNEL_VERSION=${kversion}
SYSTEMD_VERSION=${systemd_version}
DISK_MB=${size_mb}
KEY=${key}
ENV
mv "${work}" "${out}"
trap - EXIT
say "built in ${SECONDS}s: ${out} (kernel ${abi} ${kversion}, systemd ${systemd_version}, ${size_mb} MB disk)"
echo "${out}"
exit 0
}
