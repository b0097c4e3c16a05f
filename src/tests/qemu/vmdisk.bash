# vmdisk.bash - what both images booted in QEMU with Ubuntu's own kernel do to a noble
# rootfs: image.sh (the qemuvm test VM) and stemcell.sh (the noble stemcell as a bootable
# image, for the QEMU CPI). Sourced by them, not run.
#
# The caller defines: R (the rootfs), log (the step's log), fail MESSAGE, and
# in_root ARGS (runs ARGS chrooted in R with /proc mounted, output to the log).

vmdisk_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The kernel command line of bosh-linux-stemcell-builder's noble stemcells, branch
# ubuntu_noble_poc, commit dc7da914d12c64813275fb4955a0f8f5128355ac (2024-10-23),
# stemcell_builder/stages/image_install_grub/apply.sh (GRUB_CMDLINE_LINUX, no
# infrastructure suffix). It names no systemd.unified_cgroup_hierarchy (dropped in
# 933220bb3, "move to cgroups v2"), so systemd 255 mounts the unified hierarchy (v2).
# cgroup_enable=memory and swapaccount=1 are Debian-era memcg switches (memcg is on in
# Ubuntu's kernel either way). Changed here: rootdelay=300 is dropped (with the
# builder's initrd it is initramfs-tools' longest wait for the root device; the kernel
# without an initrd sleeps all 300 s before mounting root), and root=/dev/vda rw added
# (GRUB adds root= on a stemcell).
vmdisk_builder_cmdline="vconsole.keymap=us net.ifnames=0 biosdevname=0 crashkernel=auto selinux=0 plymouth.enable=0 console=ttyS0,115200n8 earlyprintk=ttyS0 rootdelay=300 audit=1 cgroup_enable=memory swapaccount=1"
vmdisk_cmdline="root=/dev/vda rw ${vmdisk_builder_cmdline/ rootdelay=300/}"

# vmdisk_kernel_pins: the kernel pins of SHA256SUMS here ("sha256  NAME_VERSION_amd64.deb"
# for linux-image and linux-modules of one version) into image_sum image_deb image_pkg
# kversion, modules_sum modules_deb modules_pkg, and abi (6.8.0-151-generic).
vmdisk_kernel_pins() {
  local modules_version
  read_pin() { awk -v p="$1" '{split($2, f, "_")} f[1] ~ p {print $1, $2, f[1], f[2]}' "${vmdisk_here}/SHA256SUMS"; }
  read -r image_sum image_deb image_pkg kversion < <(read_pin '^linux-image-')
  read -r modules_sum modules_deb modules_pkg modules_version < <(read_pin '^linux-modules-')
  abi=${image_pkg#linux-image-}
  [ -n "${kversion}" ] && [ "${modules_pkg}" = "linux-modules-${abi}" ] && [ "${modules_version}" = "${kversion}" ] ||
    fail "${vmdisk_here}/SHA256SUMS must pin linux-image-ABI and linux-modules-ABI of one version"
}

# vmdisk_key_files: the files whose content goes into a cache key of an image built
# with this library.
vmdisk_key_files() { echo "${vmdisk_here}/vmdisk.bash" "${vmdisk_here}/SHA256SUMS"; }

# vmdisk_install_kernel: the pinned kernel into R, by dpkg from the packages apt fetched
# (the archive's signatures), each .deb checked against SHA256SUMS; its modules
# indexed (depmod) and the ones the VMs mount checked (9p for the CPI's shared
# directories, overlay for containers, isofs for the CPI's config drive). R's apt must
# know noble-updates (apt-get update done). Needs vmdisk_kernel_pins first.
vmdisk_install_kernel() {
  mkdir -p "${R}/tmp/kernel"
  in_root sh -c "cd /tmp/kernel && apt-get download ${image_pkg}=${kversion} ${modules_pkg}=${kversion}"
  (cd "${R}/tmp/kernel" && sha256sum -c --strict "${vmdisk_here}/SHA256SUMS") >>"${log}" 2>&1 ||
    fail "the kernel packages apt fetched do not match ${vmdisk_here}/SHA256SUMS"
  in_root apt-get install -y -q --no-install-recommends "/tmp/kernel/${image_deb}" "/tmp/kernel/${modules_deb}"
  rm -rf "${R}/tmp/kernel"
  in_root depmod -a "${abi}"
  local m
  for m in 9p 9pnet_virtio overlay isofs; do
    in_root modinfo -k "${abi}" -n "${m}" || fail "module ${m} missing from ${modules_pkg}"
  done
}

# vmdisk_make DISK EXTRA_MB: R as one raw ext4 filesystem (no partition table: the kernel
# mounts /dev/vda) with EXTRA_MB free beyond its content; sparse.
vmdisk_make() {
  local disk=$1 extra=$2 size_mb
  echo '/dev/vda / ext4 defaults 0 1' >"${R}/etc/fstab"
  size_mb=$(( $(du -sm "${R}" | cut -f1) + extra ))
  mkfs.ext4 -q -F -L cellguard-root -d "${R}" "${disk}" "${size_mb}M" >>"${log}" 2>&1 ||
    fail "mkfs.ext4 of ${R} into ${disk} failed"
  echo "${size_mb}"
}

# vmdisk_in_root ARGS: ARGS chrooted in R with /proc mounted in a mount namespace of the
# chroot's own (nothing is left mounted, ever), output appended to the log.
vmdisk_in_root() {
  unshare --mount --propagation private bash -c 'mount -t proc proc "$0/proc" && exec chroot "$0" /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"' "${R}" "$@" >>"${log}" 2>&1
}

# vmdisk_apt_begin MIRROR: R's apt on noble, noble-updates and noble-security (main,
# universe) from MIRROR, lists fetched; no maintainer script may start a service
# (policy-rc.d 101); the host's resolv.conf serves the build (noble's points at
# systemd-resolved's stub). vmdisk_apt_end undoes all but the sources.
vmdisk_apt_begin() {
  printf '#!/bin/sh\nexit 101\n' >"${R}/usr/sbin/policy-rc.d" && chmod 0755 "${R}/usr/sbin/policy-rc.d"
  vmdisk_resolv=$(readlink "${R}/etc/resolv.conf" || true)
  rm -f "${R}/etc/resolv.conf" && cp /etc/resolv.conf "${R}/etc/resolv.conf"
  cat >"${R}/etc/apt/sources.list" <<SOURCES
deb $1 noble main universe
deb $1 noble-updates main universe
deb $1 noble-security main universe
SOURCES
  in_root apt-get update -q
}

vmdisk_apt_end() {
  rm -f "${R}/etc/resolv.conf"
  [ -z "${vmdisk_resolv}" ] || ln -s "${vmdisk_resolv}" "${R}/etc/resolv.conf"
  rm -f "${R}/usr/sbin/policy-rc.d"
  in_root apt-get clean
  rm -rf "${R}"/var/lib/apt/lists/*_Packages* "${R}"/var/lib/apt/lists/*_Translation*
}
