#!/bin/bash
# seed000-matrix.sh - does the seed-000 trigger show the seed's SYMPTOM (a container that
# cannot be destroyed), and on which systemd? One line per suite and layout on stdout.
#
#   src/tests/harness/seed000-matrix.sh [SUITE...]     (default: bookworm jammy bionic xenial)
#
# Per suite and layout it boots a fresh sdbox of that suite (sdbox.sh builds the rootfs once,
# cached by suite) and lays out what a jammy stemcell runs: a supervisor unit with no Delegate
# (as runit.service) running the Garden stand-in of src/tests/bosh (garden-standin), which makes
# one container with runc itself (r1) and one through containerd's runc shim (d1, namespace
# garden), both with the relative cgroupsPath garden/<id>. Then it starts the seed-000 trigger
# (src/tests/bosh/seed000-trigger.service, with the pre-232 setting names on older systemd) and
# records:
#   moved=     the v1 controllers in which a container process left the cgroup runc recorded
#   runc-kill  `runc kill --all r1 KILL`: container processes still alive 5 s later
#   ctr-delete `timeout 20 ctr task delete --force d1`: returned or not, and d1's processes
#              still alive afterwards
#
# Layouts (LAYOUTS, default "system slice"):
#   system  the supervisor in system.slice beside the other units, the trigger too (stemcells)
#   slice   the supervisor alone in sup.slice, the trigger in sup.slice
#   A layout with "+protect" (e.g. system+protect) runs `cellguard unit protect-supervisor
#   --pid <supervisor>` before the trigger; MATRIX_CELLGUARD names the (static) binary to copy in.
#   "+yes" writes a drop-in with Delegate=yes for the running supervisor and reloads instead.
#
# The runtime is the same everywhere: this host's runc, containerd, ctr and shim (Debian 12),
# copied in with their glibc and libseccomp and patchelf'ed to load them from /opt/seedm/lib
# (Debian's binaries need glibc 2.34; bionic and xenial have 2.27 and 2.23). Needs root,
# patchelf, and what sdbox.sh needs. Knobs: SDBOX_CGROUP_MODE (default hybrid; a suite whose
# systemd does not boot in it is retried in legacy and the line says so), MATRIX_LOG_DIR
# (default: a temporary directory; per-run logs with every /proc/PID/cgroup before and after).
# Ctrl-C or a failure stops the boxes it started and nothing else.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
SDBOX=$HERE/sdbox.sh
STANDIN=$REPO/src/tests/bosh/test-release/src/garden-standin
TRIGGER=$REPO/src/tests/bosh/seed000-trigger.service
if [ $# -gt 0 ]; then SUITES=("$@"); else SUITES=(bookworm jammy bionic xenial); fi
LAYOUTS=${LAYOUTS:-system slice}
LOGDIR=${MATRIX_LOG_DIR:-$(mktemp -d /tmp/seed000-matrix.XXXXXX)}
mkdir -p "$LOGDIR"
log() { echo "[matrix] $*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
command -v patchelf >/dev/null || { log "patchelf missing (apt-get install patchelf)"; exit 1; }

# The host's runtime, made to load its own glibc from /opt/seedm/lib inside any box.
STAGE=$(mktemp -d /tmp/seed000-matrix-stage.XXXXXX)
BOXES=()
cleanup() {
  local n ip
  for n in "${BOXES[@]}"; do
    # a runc kill --all interrupted mid-way can leave a container frozen; SIGKILL does not
    # reach frozen tasks, so thaw the box's freezer cgroups before sdbox stops it
    for f in $(find "/sys/fs/cgroup/freezer/cellguard-sdbox-$n" -name freezer.state 2>/dev/null); do
      [ "$(cat "$f" 2>/dev/null)" = THAWED ] || echo THAWED >"$f" 2>/dev/null || true
    done
    SDBOX_NAME=$n "$SDBOX" stop >/dev/null 2>&1 || log "stopping box $n failed: run SDBOX_NAME=$n $SDBOX stop"
  done
  BOXES=()
  rm -rf "$STAGE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$STAGE/bin" "$STAGE/lib"
for l in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libseccomp.so.2; do
  cp -L "$l" "$STAGE/lib/"
done
for b in runc containerd ctr containerd-shim-runc-v2; do
  cp "$(command -v $b)" "$STAGE/bin/$b"
  patchelf --set-interpreter /opt/seedm/lib/ld-linux-x86-64.so.2 --set-rpath /opt/seedm/lib "$STAGE/bin/$b"
done
RUNTIME="runc $(runc --version | awk 'NR==1{print $3}'), containerd $(containerd --version | awk '{print $3}')"

# boot NAME SUITE: boots the box (hybrid, falling back to legacy); sets BOOT_MODE, BOOT_IP
boot() {
  local n=$1 suite=$2 mode=${SDBOX_CGROUP_MODE:-hybrid} m
  BOXES+=("$n")
  for m in $mode legacy; do
    if SDBOX_NAME=$n SDBOX_SUITE=$suite SDBOX_CGROUP_MODE=$m SDBOX_OWNER_PID=$$ \
         SDBOX_NSPAWN_ARGS=--system-call-filter=@keyring "$SDBOX" start >"$LOGDIR/$n.boot" 2>&1; then
      BOOT_MODE=$m BOOT_IP=$(sed -n 's/^SDBOX_INIT_PID=//p' "$LOGDIR/$n.boot")
      return 0
    fi
    log "$suite: boot in $m failed: $(grep -m1 ERROR "$LOGDIR/$n.boot" || tail -n1 "$LOGDIR/$n.boot")"
    cp "$LOGDIR/$n.boot" "$LOGDIR/$n.boot-$m-failed"
    [ "$m" = legacy ] && return 1
  done
  return 1
}

# the trigger for this systemd: the same five settings under the names it knows
trigger_unit() {  # VERSION SLICE
  if [ "$1" -ge 232 ]; then
    cat "$TRIGGER"
  else  # CPUWeight (232), MemoryMax (231), IOWeight (230) are unknown to older systemd
    sed -e 's/^CPUWeight=50/CPUShares=512/' -e 's/^IOAccounting=yes/BlockIOAccounting=yes/' \
        -e 's/^IOWeight=50/BlockIOWeight=500/' -e 's/^MemoryMax=/MemoryLimit=/' "$TRIGGER"
  fi
  [ -n "$2" ] && echo "Slice=$2"
  return 0
}

moved_between() {  # SNAPSHOT1 SNAPSHOT2: the controllers whose line differs for some pid
  local m
  m=$(paste -d'|' <(echo "$1") <(echo "$2") |
    awk -F'|' '$1!=$2 && $1 !~ /^==/ {split($1,a,":"); split($2,b,":"); n=(a[2]==""?"unified":a[2]); sub(/^name=/,"",n); print n}' |
    tr ',' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')
  echo "${m:-nothing}"
}

run_one() {  # SUITE LAYOUT -> one result line
  local suite=$1 layout=$2 n="seedm-$1-${2//[^a-z]/-}-$$" mode ip R ver slice="" rl protect=""
  case $layout in
    *+protect) protect=cellguard; layout=${layout%+protect} ;;
    *+yes) protect=yes; layout=${layout%+yes} ;;
  esac
  rl="$suite $layout"
  if ! boot "$n" "$suite"; then echo "$rl: boot failed, see $LOGDIR/$n.boot*"; return; fi
  mode=$BOOT_MODE ip=$BOOT_IP
  R=/proc/$ip/root
  in_box() { SDBOX_NAME=$n "$SDBOX" exec "$@"; }
  ver=$(in_box systemctl --version | awk 'NR==1{print $2}')
  local layout_desc; layout_desc=$( [ -d "$R/sys/fs/cgroup/unified" ] && echo hybrid || echo legacy)
  [ "$layout" = slice ] && slice=sup.slice

  # the stand-in, laid out as the garden job lays it out
  mkdir -p "$R/opt/seedm" "$R/var/vcap/packages/garden-standin/bin" "$R/var/vcap/jobs/garden/config" \
    "$R/var/vcap/sys/log/garden"
  cp -r "$STAGE/bin" "$STAGE/lib" "$R/opt/seedm/"
  install -m 755 "$STANDIN/garden-standin" "$R/var/vcap/packages/garden-standin/bin/"
  cp "$STANDIN/container-config.json" "$R/var/vcap/packages/garden-standin/"
  cat >"$R/var/vcap/jobs/garden/config/containerd.toml" <<'EOF'
version = 2
root = "/var/vcap/data/containerd/root"
state = "/var/vcap/sys/run/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/var/vcap/sys/run/containerd/containerd.sock"
EOF
  cat >"$R/etc/systemd/system/supervisor.service" <<EOF
# a stemcell's runit.service, as far as systemd sees it: no Delegate
[Service]
Environment=PATH=/opt/seedm/bin:/usr/sbin:/usr/bin:/sbin:/bin GARDEN_RUNC=/opt/seedm/bin/runc
ExecStart=/var/vcap/packages/garden-standin/bin/garden-standin
KillMode=process
$([ -n "$slice" ] && echo "Slice=$slice")
EOF
  trigger_unit "$ver" "$slice" >"$R/etc/systemd/system/seed000-trigger.service"
  in_box systemctl daemon-reload
  in_box systemctl start supervisor.service
  for _ in $(seq 1 300); do
    [ -e "$R/var/vcap/sys/run/garden/ready" ] && break
    in_box systemctl is-failed -q supervisor.service && break
    sleep 0.1
  done
  if [ ! -e "$R/var/vcap/sys/run/garden/ready" ]; then
    in_box journalctl -u supervisor.service --no-pager >"$LOGDIR/$n.standin" 2>&1 || true
    echo "$rl: systemd $ver: the stand-in did not get ready, see $LOGDIR/$n.standin"; return
  fi
  # container processes (pids in the box's PID namespace) and what runc recorded
  local rpids dpids rst
  ctr_() { in_box /opt/seedm/bin/ctr --address /var/vcap/sys/run/containerd/containerd.sock --namespace garden "$@"; }
  rpids=$(in_box sh -c 'p=$(/opt/seedm/bin/runc --root /run/garden-runc state r1 | sed -n "s/.*\"pid\": *\([0-9]*\).*/\1/p"); echo $p $(cat /proc/$p/task/*/children)')
  dpids=$(in_box sh -c 'p=$(/opt/seedm/bin/ctr --address /var/vcap/sys/run/containerd/containerd.sock --namespace garden task ls | awk "\$1==\"d1\"{print \$2}"); echo $p $(cat /proc/$p/task/*/children)')
  rst=$(in_box /opt/seedm/bin/runc --root /run/garden-runc state r1)
  alive() {  # how many of these box pids are alive (a zombie is dead)
    in_box sh -c 'n=0; for p; do s=$(cat /proc/$p/stat 2>/dev/null) && [ "$(echo "${s##*) }" | cut -c1)" != Z ] && n=$((n+1)); done; echo $n' sh "$@"
  }
  snap() { local p; for p in $rpids $dpids; do echo "== $p"; in_box cat "/proc/$p/cgroup"; done; }
  local before after
  before=$(snap)
  { echo "# $rl: systemd $ver, $layout_desc, r1 pids: $rpids, d1 pids: $dpids"; echo "$rst"
    echo "--- BEFORE"; echo "$before"; echo "--- supervisor"; in_box cat /proc/"$(in_box systemctl show -p MainPID supervisor.service | cut -d= -f2)"/cgroup
  } >"$LOGDIR/$n.cgroups"
  # systemd's debug log (SIGRTMIN+22, known to every version here) says what it migrated
  in_box kill -56 1   # SIGRTMIN+22 with glibc's SIGRTMIN (34)
  sleep 0.2
  local prot=""
  if [ "$protect" = yes ]; then
    mkdir -p "$R/etc/systemd/system/supervisor.service.d"
    printf '[Service]\nDelegate=yes\n' >"$R/etc/systemd/system/supervisor.service.d/50-delegate.conf"
    in_box systemctl daemon-reload
    rl="$rl+yes (Delegate=$(in_box systemctl show -p Delegate supervisor.service | cut -d= -f2))"
  elif [ -n "$protect" ]; then
    [ -x "${MATRIX_CELLGUARD:-}" ] || { echo "$rl+protect: MATRIX_CELLGUARD is not an executable"; return; }
    install -m 755 "$MATRIX_CELLGUARD" "$R/usr/local/bin/cellguard"
    prot=$(in_box cellguard unit protect-supervisor --pid "$(in_box systemctl show -p MainPID supervisor.service | cut -d= -f2)" 2>&1) &&
      prot="protected" || prot="protect-supervisor FAILED"
    { echo "--- cellguard unit protect-supervisor: $prot"; in_box cellguard unit protect-supervisor --pid "$(in_box systemctl show -p MainPID supervisor.service | cut -d= -f2)" 2>&1 || true
      in_box systemctl show -p Delegate supervisor.service; cat "$R"/etc/systemd/system/supervisor.service.d/*.conf; } >>"$LOGDIR/$n.cgroups" 2>&1 || true
    rl="$rl+protect ($prot)"
  fi
  if [ -n "$protect" ]; then  # what the protection itself moved (it realizes the unit's cgroups)
    local mid; mid=$(snap)
    rl="$rl, moved by it: $(moved_between "$before" "$mid")"
    { echo "--- AFTER PROTECTION"; echo "$mid"; } >>"$LOGDIR/$n.cgroups"
  fi
  in_box systemctl start seed000-trigger.service
  sleep 1
  after=$(snap)
  local tstate tcg
  tstate=$(in_box systemctl is-active seed000-trigger.service || true)
  tcg=$(in_box sh -c 'grep -E "devices|:cpu[,:]" /proc/$(systemctl show -p MainPID seed000-trigger.service | cut -d= -f2)/cgroup' | tr '\n' ' ')
  { echo "--- AFTER"; echo "$after"; echo "--- trigger unit"; cat "$R/etc/systemd/system/seed000-trigger.service"
    echo "--- trigger: $tstate, $tcg"
    echo "--- the supervisor's processes after (name=systemd subtree of supervisor.service)"
    in_box sh -c 'for f in $(find /sys/fs/cgroup/systemd -path "*supervisor.service*" -name cgroup.procs); do for p in $(cat $f); do echo "== $p $(cat /proc/$p/comm)"; grep -E "devices|name=systemd" /proc/$p/cgroup; done; done'
    echo "--- systemd's debug log from the trigger on"
    in_box journalctl -q --no-pager -o short-monotonic _PID=1 | grep -iE "migrat|realiz|cgroup|seed000" | tail -n 60
  } >>"$LOGDIR/$n.cgroups" 2>&1
  if [ -n "${MATRIX_PROBE:-}" ]; then  # diagnosis only: can the kernel move r1's init in devices?
    in_box sh -c 'h=/sys/fs/cgroup/devices; d=$(awk -F: "\$2==\"devices\"{print \$3}" /proc/$(systemctl show -p MainPID supervisor.service | cut -d= -f2)/cgroup); echo "probe: echo $1 > $h$d/cgroup.procs"; echo $1 > $h$d/cgroup.procs; echo "probe rc $?"; grep devices /proc/$1/cgroup' sh "${rpids%% *}" >>"$LOGDIR/$n.cgroups" 2>&1 || true
  fi
  # controllers in which any container process left its cgroup
  local moved
  moved=$(moved_between "$before" "$after")
  [ "$moved" = nothing ] && moved=""
  local devmoved=no
  [[ ",$moved," == *",devices,"* ]] && devmoved=yes

  # runc kill --all on r1, then who is left
  local t0 rkill alive_r alive_d drc dt
  rkill=$(in_box /opt/seedm/bin/runc --root /run/garden-runc kill --all r1 KILL 2>&1 && echo rc=0 || echo "rc=$?")
  sleep 5
  alive_r=$(alive $rpids)
  # containerd: Garden's destroy (WithProcessKill: kill --all, then wait for the exit)
  t0=$(date +%s%N)
  drc=0
  in_box timeout 20 /opt/seedm/bin/ctr --address /var/vcap/sys/run/containerd/containerd.sock --namespace garden \
    task delete --force d1 >"$LOGDIR/$n.ctr-delete" 2>&1 || drc=$?
  dt=$(( ($(date +%s%N) - t0) / 1000000 ))
  alive_d=$(alive $dpids)
  local delete_desc
  if [ "$drc" = 124 ]; then delete_desc="did NOT return in 20 s"; else delete_desc="returned rc $drc in $((dt/1000)).$(( (dt%1000)/100 )) s"; fi
  echo "$rl: systemd $ver ($layout_desc, $RUNTIME), trigger $tstate, moved=${moved:-nothing} devices-moved=$devmoved;" \
       "runc kill --all r1 KILL: $alive_r/$(echo $rpids | wc -w) alive after 5 s;" \
       "ctr task delete --force d1: $delete_desc, $alive_d/$(echo $dpids | wc -w) alive" \
       "[runc pkg in suite: $(in_box dpkg-query -W -f '${Version}' runc 2>/dev/null || echo none)]"
  { echo "--- runc kill --all r1 KILL: $rkill"; echo "--- ctr delete rc $drc ${dt} ms"; cat "$LOGDIR/$n.ctr-delete"; } >>"$LOGDIR/$n.cgroups"
  for f in $(find "/sys/fs/cgroup/freezer/cellguard-sdbox-$n" -name freezer.state 2>/dev/null); do
    [ "$(cat "$f" 2>/dev/null)" = THAWED ] || echo THAWED >"$f" 2>/dev/null || true
  done
  SDBOX_NAME=$n "$SDBOX" stop >/dev/null 2>&1 || log "stopping $n failed"
  local kept=(); for b in "${BOXES[@]}"; do [ "$b" = "$n" ] || kept+=("$b"); done; BOXES=("${kept[@]}")
}

# Everything runs from main, called on the last line: bash parses a function whole, so editing
# this file while a matrix runs cannot make bash run a mix of old and new.
main() {
  log "logs: $LOGDIR"
  for s in "${SUITES[@]}"; do
    for l in $LAYOUTS; do run_one "$s" "$l"; done
  done
}

main; exit
