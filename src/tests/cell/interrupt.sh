#!/usr/bin/env bash
# interrupt.sh - Ctrl-C a local cell run while bosh create-env compiles in its VM,
# and check that nothing of it is left: no box, no sdbox state, no systemd-nspawn,
# no host cgroup, no mount, no forwarder and no listening port, no bosh-cli.
#
#   interrupt.sh [cell.sh arguments, default: --shapes jammy --scenarios without]
#
# Exit 0 when nothing was left, 1 when something was, 2 when the run never got a VM.
# Needs what make cell needs (root, a release tarball, the stemcell sources).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../../.." && pwd)
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--shapes jammy --scenarios without)
shape=jammy sc=without
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in --shapes) shape=${args[i + 1]%%,*} ;; --scenarios) sc=${args[i + 1]%%,*} ;; esac
done
log=$(mktemp /tmp/cellguard-interrupt.XXXXXX)
before=$(ls -d /var/tmp/cellguard-cell.* 2>/dev/null)
# A script started in the background has SIGINT ignored (no job control); a
# terminal's foreground job does not: give cell.sh the default back.
env --default-signal=INT bash "${here}/cell.sh" "${args[@]}" >"${log}" 2>&1 &
pid=$!
w=""
for _ in $(seq 1 600); do
  for d in /var/tmp/cellguard-cell.*; do grep -qx "${d}" <<<"${before}" || w=${d}; done
  [ -n "${w}" ] && break; sleep 1
done
for _ in $(seq 1 1800); do
  grep -q "Compiling package 'golang" "${w}/${shape}-${sc}/create-env.log" 2>/dev/null && break
  kill -0 "${pid}" 2>/dev/null || break
  sleep 1
done
box=$(cat "${w}/${shape}-${sc}"/cpi/vms/*/box 2>/dev/null)
port=$(head -n1 "${w}/ports" 2>/dev/null)
if [ -z "${box}" ]; then
  kill -INT "${pid}" 2>/dev/null; wait "${pid}"
  echo "interrupt: the run never had a VM to interrupt; its log: ${log}"; exit 2
fi
left() {  # what is left of the run
  SDBOX_NAME=${box} bash "${repo}/src/tests/harness/sdbox.sh" status >/dev/null 2>&1 && echo "box ${box} running"
  [ -e "/var/tmp/cellguard-sdbox/boxes/${box}" ] && echo "sdbox state of ${box}"
  pgrep -f "systemd-nspawn -M ${box} " >/dev/null && echo "systemd-nspawn -M ${box}"
  for h in /sys/fs/cgroup/*/; do [ -d "${h}cellguard-sdbox-${box}" ] && echo "cgroup ${h}cellguard-sdbox-${box}"; done
  grep -q -- "${box}" /proc/self/mountinfo && echo "mounts naming ${box}"
  [ -e "/run/systemd/nspawn/propagate/${box}" ] && echo "/run/systemd/nspawn/propagate/${box}"
  ss -Htln "sport = :${port}" | grep -q . && echo "a socket listening on 127.0.0.1:${port}"
  pgrep -f "socat TCP-LISTEN:${port}," >/dev/null && echo "the forwarder (socat) for ${port}"
  pgrep -f "${w}" >/dev/null && echo "processes of ${w}"
  [ -e "${w}" ] && echo "${w}"
}
echo "interrupt: create-env is compiling in ${box} (mbus forwarder on 127.0.0.1:${port}); before Ctrl-C:"
left | sed 's/^/  /'
t0=${SECONDS}
kill -INT "${pid}"
wait "${pid}"; rc=$?
echo "interrupt: cell.sh exited ${rc} $((SECONDS - t0))s after SIGINT: $(grep -m1 'interrupted' "${log}")"
rest=$(left)
if [ -n "${rest}" ]; then
  echo "interrupt: FAILED, left behind:"; sed 's/^/  /' <<<"${rest}"; exit 1
fi
echo "interrupt: nothing left (box, sdbox state, nspawn, cgroups, mounts, forwarder, port, processes, work dir)"
rm -f "${log}"
