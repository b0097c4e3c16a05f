#!/bin/bash
# sdbox.sh - boot a real systemd (PID 1 of its own PID namespace) in systemd-nspawn, on a
# cached Debian rootfs, for cellguard's integration tests. Needs root. See README.md here.
#
#   sdbox.sh start         build the rootfs once, boot, wait for "is-system-running" =
#                          running|degraded, print KEY=VALUE lines on stdout. Idempotent.
#   sdbox.sh stop          halt the box; remove its cgroups, mounts and state. Idempotent;
#                          also cleans up after a killed previous run of the same name.
#   sdbox.sh status        KEY=VALUE lines + IS_SYSTEM_RUNNING (exit 1 if not running)
#   sdbox.sh env           KEY=VALUE lines only: eval "$(sdbox.sh env)"
#   sdbox.sh exec CMD...   run CMD in the box (all its namespaces and its cgroup)
#   sdbox.sh gc            stop boxes whose owner (SDBOX_OWNER_PID) has exited; start does it too
#   sdbox.sh watch         (used by the Go testkit) wait for EOF on fd 3, then stop the box
#   sdbox.sh list          names of the boxes with state on this machine
#   sdbox.sh rootfs        only build the cached rootfs, print its path
#   sdbox.sh source        KEY=VALUE lines: the rootfs path, whether it is built
#                          (ROOTFS_CACHED=true|false) and the archive it is built from
#
# Knobs (environment):
#   SDBOX_NAME          box name (default: sdbox); [a-z0-9-], at most 63 characters.
#                       Cgroup "cellguard-sdbox-$SDBOX_NAME" in every host hierarchy holds
#                       everything of the box. Callers running in parallel need distinct names.
#   SDBOX_CGROUP_MODE   hybrid (default): this host's layout, v1 controllers + name=systemd +
#                         cgroup2 on /sys/fs/cgroup/unified, v1 controllers writable inside
#                       legacy: pure v1 inside (no unified mount), controllers writable
#                       unified: cgroup v2 only inside
#   SDBOX_DIR           cache + state dir (default: /var/tmp/cellguard-sdbox)
#   SDBOX_SUITE         debootstrap suite (default: bookworm); Ubuntu's xenial, bionic, jammy,
#                       noble too (components main,universe, from SDBOX_MIRROR's default
#                       http://archive.ubuntu.com/ubuntu, verified with Ubuntu's archive keyring)
#   SDBOX_MIRROR        archive mirror (default: this machine's apt sources for Debian suites,
#                       http://archive.ubuntu.com/ubuntu for Ubuntu's)
#   SDBOX_KEYRING       keyring debootstrap verifies the suite's Release with (default: Debian's
#                       for Debian suites; for Ubuntu's /usr/share/keyrings/ubuntu-archive-keyring.gpg
#                       if installed, else the one of ubuntu-keyring 2021.03.26 fetched from the
#                       mirror, its .deb and key fingerprints pinned below)
#   SDBOX_EXTRA_PACKAGES  more packages for the rootfs (space separated; own cached rootfs)
#   SDBOX_V1_EXTRA      v1 hierarchies the host does not mount that the box needs, as controller
#                       sets ("net_cls,net_prio"; space separated), hybrid and legacy modes only
#                       (default: the rootfs's /etc/sdbox/v1-hierarchies, e.g. a BOSH stemcell's).
#                       Only the initial cgroup namespace may create a hierarchy, so sdbox.sh does
#                       it (mounted in a mount namespace of its own: the host never sees the
#                       mount) and puts the box below $SDBOX_HOST_CGROUP in it; the box mounts it
#                       itself. The hierarchy is kernel-wide: while it exists every process's
#                       /proc/PID/cgroup lists it and nspawn mounts it in every box, so every
#                       box is put below its own cgroup there too. stop removes the box's
#                       cgroups in it; the kernel drops the hierarchy when no mount and no
#                       child cgroup is left.
#   SDBOX_ROOTFS        boot this prepared rootfs directory instead of the cached one (read-only
#                       lower dir of the overlay, e.g. an extracted BOSH stemcell built from
#                       "sdbox.sh rootfs"); it must carry /usr/local/sbin/sdbox-init
#   SDBOX_BOOT_TIMEOUT  seconds to wait for the boot (default: 120)
#   SDBOX_NSPAWN_ARGS   extra systemd-nspawn arguments, e.g. "--bind-ro=/src:/src"
#   SDBOX_OWNER_PID     pid whose exit makes the box garbage for "gc" (the Go testkit sets
#                       its own pid); unset: the box lives until "stop".
set -euo pipefail

NAME=${SDBOX_NAME:-sdbox}
DIR=${SDBOX_DIR:-/var/tmp/cellguard-sdbox}
MODE=${SDBOX_CGROUP_MODE:-hybrid}
SUITE=${SDBOX_SUITE:-bookworm}
BOOT_TIMEOUT=${SDBOX_BOOT_TIMEOUT:-120}
PACKAGES="systemd,systemd-sysv,dbus,procps,monit,runc,busybox-static,iproute2,util-linux,kmod,less"
case $SUITE in
  xenial|bionic|focal|jammy|noble) DISTRO=ubuntu ;;
  *) DISTRO=debian ;;
esac
[ -n "${SDBOX_EXTRA_PACKAGES:-}" ] && PACKAGES="$PACKAGES,$(echo "$SDBOX_EXTRA_PACKAGES" | tr ' ' ',')"
# Bump when the rootfs recipe below changes: a new key means a fresh cached rootfs.
RECIPE=4
KEY=$(echo "$SUITE $PACKAGES $RECIPE" | sha256sum | cut -c1-10)
ROOTFS=${SDBOX_ROOTFS:-$DIR/rootfs-$SUITE-$KEY}
BOXES=$DIR/boxes
ST=$BOXES/$NAME                  # per-box state: env, mode, console.log, nspawn.pid
CG=cellguard-sdbox-$NAME
T0=$(date +%s%N)
SELF=$(readlink -f "$0")

log() { local ms=$(( ($(date +%s%N) - T0) / 1000000 )); printf '[sdbox %s %d.%03ds] %s\n' "$NAME" $((ms/1000)) $((ms%1000)) "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (nspawn, cgroups, mounts)"
# a valid hostname and machine name
[[ $NAME =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] || die "SDBOX_NAME=$NAME: want [a-z0-9-], at most 63 characters"
case $MODE in hybrid|legacy|unified) ;; *) die "SDBOX_CGROUP_MODE=$MODE: want hybrid|legacy|unified" ;; esac

suite_mirror() {  # the archive the suite's rootfs is built from
  if [ -n "${SDBOX_MIRROR:-}" ]; then echo "$SDBOX_MIRROR"
  elif [ "$DISTRO" = ubuntu ]; then echo http://archive.ubuntu.com/ubuntu
  else apt_mirror
  fi
}
apt_mirror() {  # the main Debian archive URI from this machine's apt sources
  { awk '/^URIs:/{for(i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
    awk '$1=="deb" && $2 ~ /debian/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true
  } | grep -m1 . || echo http://deb.debian.org/debian
}

# cgroup hierarchies of the host (/sys/fs/cgroup/* on v1/hybrid, /sys/fs/cgroup on pure v2)
hierarchies() { awk '($3=="cgroup"||$3=="cgroup2") && $2 ~ "^/sys/fs/cgroup" {print $2}' /proc/self/mounts; }

nspawn_pid() {  # pid of this box's systemd-nspawn, if alive
  local p
  [ -f "$ST/nspawn.pid" ] || return 1
  p=$(cat "$ST/nspawn.pid")
  [ -r "/proc/$p/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "^systemd-nspawn -M $NAME " || return 1
  echo "$p"
}
alive() {       # a zombie counts as gone: its reaper may be slow (on this host PID 1
  local s       # reaps about once a second)
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}
init_pid() {    # host pid of the box's PID 1 (nspawn's only child)
  local np; np=$(nspawn_pid) || return 1
  pgrep -P "$np" | head -n 1 | grep .
}

cg_pids() {     # every process in the box's cgroup subtree, in any hierarchy
  local h
  for h in $(hierarchies); do
    [ -d "$h/$CG" ] && find "$h/$CG" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}
in_our_cg() { grep -q ":/$CG\(/\|$\)" "/proc/$1/cgroup" 2>/dev/null; }

ensure_rootfs() {
  if [ -n "${SDBOX_ROOTFS:-}" ]; then   # prepared by the caller: never built or pruned here
    [ -x "$ROOTFS/usr/local/sbin/sdbox-init" ] ||
      die "SDBOX_ROOTFS=$ROOTFS has no /usr/local/sbin/sdbox-init (build it from \"sdbox.sh rootfs\")"
    return 0
  fi
  [ -e "$ROOTFS/.sdbox-complete" ] && return 0
  command -v systemd-nspawn >/dev/null || die "systemd-nspawn missing: run ci/scripts/install-deps.sh"
  command -v debootstrap >/dev/null || die "debootstrap missing: run ci/scripts/install-deps.sh"
  mkdir -p "$DIR"
  exec 9>"$DIR/.rootfs.lock"; flock 9         # the first build is serialized
  if [ -e "$ROOTFS/.sdbox-complete" ]; then exec 9>&-; return 0; fi
  local mirror args=() keyring=${SDBOX_KEYRING:-}
  mirror=$(suite_mirror)
  if [ "$DISTRO" = ubuntu ]; then
    [ -n "$keyring" ] || keyring=$(ubuntu_keyring "$mirror") || exit 1
    args=(--components=main,universe)
  fi
  [ -n "$keyring" ] && args+=(--keyring="$keyring")
  rm -rf "$ROOTFS.tmp"
  log "debootstrap $SUITE from $mirror -> $ROOTFS (once; about a minute)"
  # Debian 12's debootstrap (1.0.128) has no script for suites newer than it (noble): every
  # Ubuntu script since gutsy is that one, so name it.
  local script=()
  if [ "$DISTRO" = ubuntu ] && [ ! -e "/usr/share/debootstrap/scripts/$SUITE" ]; then
    script=(/usr/share/debootstrap/scripts/gutsy)
  fi
  debootstrap --variant=minbase "${args[@]}" --include="$PACKAGES" "$SUITE" "$ROOTFS.tmp" "$mirror" "${script[@]}" \
    >"$DIR/debootstrap-$KEY.log" 2>&1 || die "debootstrap failed, see $DIR/debootstrap-$KEY.log"
  log "debootstrap took $(( ($(date +%s%N) - T0) / 1000000000 )) s"
  local R=$ROOTFS.tmp
  # PID 1 wrapper. nspawn mounts the v1 controller hierarchies read-only (it delegates only
  # name=systemd/unified); clearing the flag per mount (MS_REMOUNT|MS_BIND, in the box's own
  # mount namespace) lets the box's systemd realize units in cpu/memory/pids/devices/...,
  # as on a real cell. The hierarchies are rooted at cellguard-sdbox-NAME on the host.
  cat >"$R/usr/local/sbin/sdbox-init" <<'EOF'
#!/bin/sh
if [ "${SDBOX_CGROUP_RW:-0}" = 1 ]; then
  for m in /sys/fs/cgroup/*; do
    [ -L "$m" ] && continue
    mountpoint -q "$m" && mount -o remount,bind,rw "$m"
  done
fi
exec /lib/systemd/systemd "$@"
EOF
  chmod 755 "$R/usr/local/sbin/sdbox-init"
  # Quiet and deterministic: nothing starts units (and so re-realizes cgroups) behind a
  # test's back, no getty. monit is installed but not started: tests start it themselves.
  local u
  for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
           e2scrub_reap.service fstrim.timer console-getty.service getty@.service \
           systemd-tmpfiles-clean.timer man-db.timer logrotate.timer; do
    ln -sf /dev/null "$R/etc/systemd/system/$u"
  done
  rm -f "$R"/etc/rc[2345].d/S[0-9][0-9]monit "$R/etc/systemd/system/multi-user.target.wants/monit.service"
  echo sdbox >"$R/etc/hostname"
  : >"$R/etc/machine-id"
  touch "$R/.sdbox-complete"
  mv "$R" "$ROOTFS"
  prune_rootfs
  exec 9>&-
  log "rootfs ready: $ROOTFS"
}

# Ubuntu's archive keyring, when this Debian host has none: the ubuntu-keyring package from the
# mirror itself, trusted only because its sha256 and its keys' fingerprints match the ones pinned
# here (the 2012 and 2018 archive signing keys, and the 2012 cdimage key the package carries).
UBUNTU_KEYRING_DEB=pool/main/u/ubuntu-keyring/ubuntu-keyring_2021.03.26_all.deb
UBUNTU_KEYRING_SHA256=0d0e7ed6b112f5d03eabf3c7eb01ebdacf9c57714b279e90495cfc58c8c4520f
UBUNTU_KEYRING_FPRS="790BC7277767219C42C86F933B4FE6ACC0B21F32 843938DF228D22F7B3742BC0D94AA3F0EFE21092 F6ECB3762474EDA9D21B7022871920D1991BC93C"
ubuntu_keyring() {  # prints the keyring's path; the caller holds the rootfs lock
  local k=/usr/share/keyrings/ubuntu-archive-keyring.gpg d=$DIR/ubuntu-keyring got
  if [ -s "$k" ]; then echo "$k"; return; fi
  k=$d/usr/share/keyrings/ubuntu-archive-keyring.gpg
  if [ ! -s "$k" ]; then
    rm -rf "$d" "$d.deb"; mkdir -p "$d"
    curl -fsS -o "$d.deb" "$1/$UBUNTU_KEYRING_DEB" || die "fetch $1/$UBUNTU_KEYRING_DEB failed"
    got=$(sha256sum "$d.deb" | cut -d' ' -f1)
    [ "$got" = "$UBUNTU_KEYRING_SHA256" ] || die "$d.deb: sha256 $got, want $UBUNTU_KEYRING_SHA256"
    dpkg-deb -x "$d.deb" "$d" && rm -f "$d.deb"
  fi
  got=$(gpg --show-keys --with-colons "$k" 2>/dev/null | awk -F: '$1=="fpr"{print $10}' | sort | tr '\n' ' ')
  [ "$got" = "$(echo "$UBUNTU_KEYRING_FPRS" | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
    die "$k: key fingerprints $got, want $UBUNTU_KEYRING_FPRS"
  echo "$k"
}

in_use() {  # is $1 the rootfs (-D) of a running systemd-nspawn?
  local f
  for f in /proc/[0-9]*/cmdline; do
    [[ $(tr '\0' ' ' <"$f" 2>/dev/null) == *"-D $1 "* ]] && return 0
  done
  return 1
}
prune_rootfs() {  # older cached rootfs of this suite that no running box uses as its overlay
  local old       # lower dir (other suites' caches stay: a test may boot several suites)
  for old in "$DIR/rootfs-$SUITE"-*; do
    [ "$old" = "$ROOTFS" ] && continue
    in_use "$old" && continue
    log "removing old rootfs $old"; rm -rf "$old"
  done
}

make_cgroups() {
  local h
  for h in $(hierarchies); do
    mkdir -p "$h/$CG"
    if [ -e "$h/cpuset.cpus" ] && [ -e "$h/$CG/cpuset.cpus" ] && [ -z "$(cat "$h/$CG/cpuset.cpus")" ]; then
      cat "$h/cpuset.cpus" >"$h/$CG/cpuset.cpus"      # v1 cpuset: empty cpus/mems = no tasks
      cat "$h/cpuset.mems" >"$h/$CG/cpuset.mems"
    fi
  done
}

kill_leftovers() {  # processes of the box whose nspawn is gone (e.g. SIGKILLed test binary)
  local ip p
  ip=$(sed -n 's/^SDBOX_INIT_PID=//p' "$ST/env" 2>/dev/null || true)
  if [ -n "$ip" ] && in_our_cg "$ip" && [ "$(cat "/proc/$ip/comm" 2>/dev/null)" = systemd ]; then
    log "orphaned box init (pid $ip): halting it"
    kill -s SIGRTMIN+3 "$ip" 2>/dev/null || true
    for _ in $(seq 1 100); do in_our_cg "$ip" || break; sleep 0.1; done
    if in_our_cg "$ip"; then kill -KILL "$ip" 2>/dev/null || true; fi  # init dies -> PID ns dies
  fi
  for _ in 1 2 3 4 5; do
    p=$(cg_pids); [ -z "$p" ] && return 0
    log "killing leftover processes in $CG: $(echo $p)"
    for ip in $p; do if in_our_cg "$ip"; then kill -KILL "$ip" 2>/dev/null || true; fi; done
    sleep 0.2
  done
}

remove_cgroups() {  # deepest first; a cgroup with processes cannot be removed
  local h d left=0
  for h in $(hierarchies); do
    [ -d "$h/$CG" ] || continue
    while read -r d; do rmdir "$d" 2>/dev/null || left=1; done < <(find "$h/$CG" -depth -type d)
  done
  for h in $(unmounted_hierarchies); do v1x_run "$h" remove || left=1; done
  return $left
}

# v1 hierarchies that exist (a box made them: SDBOX_V1_EXTRA) but the host does not mount, as
# the controller sets of /proc/cgroups ("net_cls,net_prio")
unmounted_hierarchies() {
  local mounted
  mounted=$(awk '$3=="cgroup" {print $4}' /proc/self/mounts | tr ',' '\n')
  awk 'NR>1 && $2!=0 && $4==1 {s[$2]=s[$2] (s[$2]==""?"":",") $1} END {for (i in s) print s[i]}' /proc/cgroups |
    while read -r set; do
      grep -qxF "${set%%,*}" <<<"$mounted" || echo "$set"
    done
}
# v1x_run SET join PID | remove: with the hierarchy SET mounted in a private mount namespace,
# put PID in the box's cgroup (creating the hierarchy if needed), or remove the box's cgroups.
v1x_run() {
  local m rc=0
  m=$(mktemp -d "${TMPDIR:-/tmp}/sdbox-v1.XXXXXX")
  unshare -m --propagation private sh -c '
    set -e; mount -t cgroup -o "$1" cgroup "$2"; d=$2/$3
    if [ "$4" = join ]; then mkdir -p "$d"; echo "$5" >"$d/cgroup.procs"
    elif [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} +; fi' sh "$1" "$m" "$CG" "$2" "${3:-}" || rc=$?
  # The hierarchy goes away at the unmount only when it has no child cgroup then, and a child
  # just removed may still count (measured): unmount once more when it is left empty.
  if [ "$2" = remove ] && [ $rc = 0 ]; then
    unshare -m --propagation private sh -c 'mount -t cgroup -o "$1" cgroup "$2" &&
      [ -z "$(find "$2" -mindepth 1 -maxdepth 1 -type d)" ]' sh "$1" "$m" 2>/dev/null || true
  fi
  rmdir "$m"
  return $rc
}

launch() {
  local hs envs=(-u SYSTEMD_NSPAWN_UNIFIED_HIERARCHY -u UNIFIED_CGROUP_HIERARCHY) rw=1 v1x=""
  hs=$(hierarchies | tr '\n' ' ')
  # before nspawn makes the box's cgroup namespace, whose root is where the launcher is;
  # also those another box made: nspawn mounts every v1 hierarchy the kernel has (measured),
  # so the box would see the hierarchy's root and leave its cgroups there
  if [ "$MODE" != unified ]; then
    v1x=${SDBOX_V1_EXTRA-$(cat "$ROOTFS/etc/sdbox/v1-hierarchies" 2>/dev/null || true)}
    v1x=$(printf '%s\n' $v1x $(unmounted_hierarchies) | sort -u | tr '\n' ' ')
  fi
  case $MODE in
    hybrid) ;;                                       # nspawn copies the host's hybrid layout
    legacy) envs+=(SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0) ;;
    unified) rw=0; envs+=(SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1) ;;
  esac
  # The launcher moves itself into $CG in EVERY hierarchy before exec'ing nspawn, so the
  # box lives entirely below it and the host's own cgroups are never touched.
  # --keep-unit --register=no: there is no host systemd/machined; nspawn uses the cgroup
  #   it runs in. --volatile=overlay: read-only rootfs + tmpfs overlay, every boot pristine.
  # --private-network: only "lo" inside; the host's network is untouched.
  # shellcheck disable=SC2086
  setsid env "${envs[@]}" bash -c '
      for h in '"$hs"'; do echo $$ > "$h/'"$CG"'/cgroup.procs"; done
      for s in '"$v1x"'; do bash "'"$SELF"'" v1x-join "$s" $$ || exit 1; done
      echo $$ > "'"$ST"'/nspawn.pid"
      exec systemd-nspawn -M "'"$NAME"'" -q -D "'"$ROOTFS"'" --hostname="'"$NAME"'" --volatile=overlay \
        --keep-unit --register=no --private-network --link-journal=no \
        --console=read-only --kill-signal=SIGRTMIN+3 --setenv=SDBOX_CGROUP_RW='"$rw"' \
        '"${SDBOX_NSPAWN_ARGS:-}"' /usr/local/sbin/sdbox-init' \
    >"$ST/console.log" 2>&1 </dev/null 8>&- 9>&- &   # the box must not inherit our flocks
  disown   # no "Killed" job report from this shell when a failed boot is torn down
}

print_env() {
  local ip; ip=$(init_pid) || return 1
  cat <<EOF
SDBOX_NAME=$NAME
SDBOX_CGROUP_MODE=$(cat "$ST/mode")
SDBOX_NSPAWN_PID=$(nspawn_pid)
SDBOX_INIT_PID=$ip
SDBOX_ROOT=/proc/$ip/root
SDBOX_SYSTEM_BUS_ADDRESS=unix:path=/proc/$ip/root/run/dbus/system_bus_socket
SDBOX_HOST_CGROUP=$CG
SDBOX_HIERARCHIES='$(hierarchies | tr '\n' ' ' | sed 's/ $//')'
SDBOX_STATE=$ST
EOF
}

print_howto() {
  local ip; ip=$(init_pid)
  cat <<EOF
systemd is up in box '$NAME' (cgroup mode $(cat "$ST/mode")); host pid of its PID 1: $ip
  shell:      $0 exec bash        (or: nsenter -t $ip -a bash)
  system bus: unix:path=/proc/$ip/root/run/dbus/system_bus_socket  (from any host process)
  files:      /proc/$ip/root/...  (the box's overlay rootfs; lost at stop)
  stop:       SDBOX_NAME=$NAME $0 stop
EOF
}

box_lock() { mkdir -p "$BOXES"; exec 8>"$BOXES/$NAME.lock"; flock 8; }

abort_start() { stop_locked 0 || true; rm -f "$BOXES/$NAME.lock"; die "$@"; }

do_start() {
  local np ip state deadline
  do_gc
  box_lock
  if np=$(nspawn_pid); then
    log "box already running (nspawn pid $np)"
    print_env; return 0
  fi
  if [ -d "$ST" ] || [ -n "$(for h in $(hierarchies); do [ -d "$h/$CG" ] && echo x; done)" ]; then
    log "stale state of a previous run found, cleaning up first"
    stop_locked || die "cannot clean up the previous run (see above)"
  fi
  ensure_rootfs
  mkdir -p "$ST"
  echo "$MODE" >"$ST/mode"
  if [ -n "${SDBOX_OWNER_PID:-}" ]; then
    echo "$SDBOX_OWNER_PID $(proc_start "$SDBOX_OWNER_PID")" >"$ST/owner"
  fi
  make_cgroups
  launch
  for _ in $(seq 1 50); do nspawn_pid >/dev/null && break; sleep 0.1; done
  deadline=$(( $(date +%s) + BOOT_TIMEOUT )); state=""
  while :; do
    if ! nspawn_pid >/dev/null; then
      cat "$ST/console.log" >&2 2>/dev/null || true; abort_start "systemd-nspawn exited during boot"
    fi
    ip=$(init_pid || true)
    if [ -n "$ip" ] && [ -S "/proc/$ip/root/run/systemd/private" ]; then
      state=$(nsenter -t "$ip" -a systemctl is-system-running 2>/dev/null || true)
      case $state in running|degraded) break ;; esac
    fi
    if [ "$(date +%s)" -ge $deadline ]; then
      tail -n 50 "$ST/console.log" >&2 || true
      abort_start "boot timeout after ${BOOT_TIMEOUT}s (state '$state')"
    fi
    sleep 0.05
  done
  log "booted: $state (init pid $ip)"
  if [ "$state" = degraded ]; then nsenter -t "$ip" -a systemctl --failed --no-pager >&2 || true; fi
  print_env >"$ST/env"
  cat "$ST/env"
  [ -t 2 ] && print_howto >&2
  return 0
}

# stop_locked [GRACE]: halt systemd cleanly, SIGKILL the box's PID 1 after GRACE seconds
# (default 10; a booting systemd ignores the halt signal until its handlers are set up).
# Fails when something of the box could not be removed.
stop_locked() {
  local np ip rc=0 grace=${1:-10}
  if np=$(nspawn_pid); then
    ip=$(init_pid || true)
    kill -TERM "$np"                       # nspawn sends SIGRTMIN+3: a clean systemd halt
    for _ in $(seq 1 $((grace * 50))); do alive "$np" || break; sleep 0.02; done
    if alive "$np"; then
      [ "$grace" = 0 ] || log "nspawn did not exit within ${grace}s: SIGKILL"
      if [ -n "$ip" ] && in_our_cg "$ip"; then kill -KILL "$ip" 2>/dev/null || true; fi
      kill -KILL "$np" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$np" || break; sleep 0.1; done
    fi
  fi
  if [ -n "$(cg_pids)" ]; then kill_leftovers; fi
  for _ in $(seq 1 50); do remove_cgroups && break; sleep 0.1; done
  if ! remove_cgroups; then
    log "ERROR: cgroups below $CG could not be removed: $(for h in $(hierarchies); do [ -d "$h/$CG" ] && echo "$h/$CG"; done | tr '\n' ' ')"
    log "ERROR: processes left in them: $(cg_pids | tr '\n' ' ')"
    rc=1
  fi
  # nspawn leaves its mount-propagation dir behind when killed
  if [ -d "/run/systemd/nspawn/propagate/$NAME" ]; then
    umount -R "/run/systemd/nspawn/propagate/$NAME" 2>/dev/null || true
    rm -rf "/run/systemd/nspawn/propagate/$NAME"
  fi
  rm -rf "$ST"
  return $rc
}

do_stop() {
  box_lock
  if [ -d "$ST" ] || nspawn_pid >/dev/null || [ -n "$(for h in $(hierarchies); do [ -d "$h/$CG" ] && echo x; done)" ]; then
    stop_locked || die "stop left something behind (see above)"
    log "stopped and cleaned up"
  fi
  rm -f "$BOXES/$NAME.lock"
}

proc_start() {  # start time of pid $1 (field 22 of stat; comm may contain spaces)
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo gone; return; }
  s=${s##*) }
  echo "$s" | awk '{print $20}'
}

do_gc() {  # boxes whose owner process has exited (a killed "go test") are garbage
  local d n owner start
  [ -d "$BOXES" ] || return 0
  for d in "$BOXES"/*/; do
    n=$(basename "$d")
    # another run may remove its box meanwhile: a vanished owner file is not ours to judge
    read -r owner start 2>/dev/null <"$d/owner" || continue
    # "gone" was recorded when the owner died while start ran (a Ctrl-C during
    # boot): it matches proc_start's "gone" forever, so it never protects a box.
    [ "$start" != gone ] && [ "$(proc_start "$owner")" = "$start" ] && continue
    log "box $n: owner pid $owner is gone, stopping it"
    SDBOX_NAME=$n "$0" stop || true
  done
}

# Everything runs from main, called on the last line: bash parses a function whole, so
# editing this file while a long "watch" waits cannot make bash run a mix of old and new.
main() {
  case ${1:-start} in
    start) do_start ;;
    stop) do_stop ;;
    status|env)
      nspawn_pid >/dev/null || { echo "box $NAME not running" >&2; exit 1; }
      print_env
      if [ "$1" = status ]; then
        echo "IS_SYSTEM_RUNNING=$(nsenter -t "$(init_pid)" -a systemctl is-system-running || true)"
      fi
      ;;
    exec)
      shift
      ip=$(init_pid) || die "box $NAME not running"
      # join the box's root cgroup in every hierarchy (nspawn puts the box one level down,
      # in payload/, in the hierarchies it manages itself), as if started by the box's init
      for h in $(hierarchies); do
        d=$h/$CG; [ -d "$d/payload" ] && d=$d/payload
        echo $$ >"$d/cgroup.procs" || log "WARNING: could not join $d"
      done
      exec nsenter -t "$ip" -a -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "${@:-bash}"
      ;;
    gc) do_gc ;;
    v1x-join) v1x_run "$2" join "$3" ;;   # (the launcher's: SDBOX_V1_EXTRA)
    watch)  # stop the box when fd 3 (a pipe held open only by the box's owner) hits EOF
      read -r -u 3 _ 2>/dev/null || true
      exec "$0" stop
      ;;
    list) [ -d "$BOXES" ] && find "$BOXES" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' ;;
    rootfs) ensure_rootfs; echo "$ROOTFS" ;;
    source)
      echo "ROOTFS=$ROOTFS"
      echo "ROOTFS_CACHED=$([ -e "$ROOTFS/.sdbox-complete" ] && echo true || echo false)"
      echo "MIRROR=$(suite_mirror)"
      ;;
    *) echo "usage: $0 [start|stop|status|env|exec CMD...|gc|list|rootfs|source]" >&2; exit 2 ;;
  esac
}

main "$@"; exit
