#!/bin/bash
# settle-race.sh [TRIALS] - on systemd 229 (a box of Ubuntu xenial), can a look at a
# neighbour's process made right after `systemctl start` returns come before systemd moved
# it? And after one more call to systemd (garden.SettleArgs), can it still?
#
# Per trial a fresh slice race-I.slice holds sup-I.service (no Delegate), whose child puts
# itself into /garden/I of the cpu hierarchy, as the Garden stand-in's containers do. Then
# trig-I.service (Type=simple, CPUAccounting, CPUShares) starts in the same slice, which
# realizes cpu for sup-I.service and moves the child back. The child's cpu cgroup is read at
# once ("plain") or after `systemctl show -p Version` ("settled"), trials alternating, and
# again a second later. The box's systemd runs at nice 19 against 4 busy loops at nice 0.
# One line per trial, and a count per mode at the end. The race needs a saturated machine:
# src/tests/harness/README.md says what it showed, and under which load.
# Needs root and what sdbox.sh needs. Ctrl-C or a failure stops the box and the loops it
# started, and nothing else.
set -euo pipefail
N=${1:-20}
SDBOX=$(cd "$(dirname "$0")" && pwd)/sdbox.sh
export SDBOX_NAME=settle-race SDBOX_SUITE=xenial SDBOX_OWNER_PID=$$
LOOPS=()
cleanup() {
  [ ${#LOOPS[@]} -eq 0 ] || kill "${LOOPS[@]}" 2>/dev/null || true
  "$SDBOX" stop >/dev/null 2>&1 || echo "stopping the box failed: run SDBOX_NAME=settle-race $SDBOX stop" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ "$(id -u)" = 0 ] || { echo "settle-race.sh: must run as root" >&2; exit 1; }
"$SDBOX" start >/dev/null
in_box() { "$SDBOX" exec "$@"; }
in_box systemctl --version | sed -n 1p
in_box sh -c 'cat >/usr/local/bin/sup && chmod +x /usr/local/bin/sup' <<'SUP'
#!/bin/sh
mkdir -p /sys/fs/cgroup/cpu/garden/$1
sh -c "echo \$\$ >/sys/fs/cgroup/cpu/garden/$1/cgroup.procs; echo \$\$ >/run/child-$1.pid; exec sleep infinity" &
wait
SUP
declare -A early=() trials=()
for i in $(seq 1 "$N"); do
  in_box sh -c "printf '[Service]\nSlice=race-$i.slice\nExecStart=/usr/local/bin/sup $i\n' >/etc/systemd/system/sup-$i.service
    printf '[Service]\nSlice=race-$i.slice\nExecStart=/bin/sleep infinity\nCPUAccounting=yes\nCPUShares=50\n' >/etc/systemd/system/trig-$i.service
    systemctl daemon-reload && systemctl start sup-$i.service"
  for _ in $(seq 50); do in_box test -s "/run/child-$i.pid" && break; sleep 0.1; done
  child=$(in_box cat "/run/child-$i.pid")
  before=$(in_box grep :cpu: "/proc/$child/cgroup")
  if [ ${#LOOPS[@]} -eq 0 ]; then
    renice -n 19 -p "$("$SDBOX" env | sed -n 's/^SDBOX_INIT_PID=//p')" >/dev/null
    for _ in 1 2 3 4; do ( while :; do :; done ) & LOOPS+=($!); done
  fi
  if [ $((i % 2)) = 1 ]; then
    mode=plain settle=
  else
    mode=settled settle="systemctl show -p Version >/dev/null;"
  fi
  at_once=$(in_box sh -c "systemctl start trig-$i.service; $settle grep :cpu: /proc/$child/cgroup")
  sleep 1
  later=$(in_box grep :cpu: "/proc/$child/cgroup")
  echo "trial $i $mode: before ${before##*:}, at once ${at_once##*:}, a second later ${later##*:}"
  trials[$mode]=$(( ${trials[$mode]:-0} + 1 ))
  [ "${at_once##*:}" != "${before##*:}" ] || early[$mode]=$(( ${early[$mode]:-0} + 1 ))
done
for m in plain settled; do
  echo "$m: read before the move in ${early[$m]:-0} of ${trials[$m]:-0} trials"
done
