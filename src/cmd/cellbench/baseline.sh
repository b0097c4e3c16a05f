#!/usr/bin/env bash
# The check an operator runs by hand when cellguard is not there: for each
# runc state.json (read with jq), every process in the container's pid
# namespace has its /proc/<pid>/cgroup read with cat and compared, hierarchy
# by hierarchy, with the cgroup_paths runc recorded. Prints one line per
# escape: "pid hierarchy expected actual".
#
# It is written to be fair to the shell: pid namespaces come from one find
# over /proc (not a readlink per process), the pids of a container from the
# map it builds, and only the two commands the procedure names (jq, cat)
# run per file.
#
# usage: baseline.sh ROOT [RUNTIME_ROOT]
set -euo pipefail
root=${1:?usage: baseline.sh ROOT [RUNTIME_ROOT]}
rr=${2:-/run/runc}

declare -A ns_of      # pid -> pid namespace link
declare -A pids_in    # pid namespace link -> " pid pid ..."
while read -r dir target; do
  pid=${dir%/ns}
  pid=${pid##*/}
  ns_of[$pid]=$target
  pids_in[$target]+=" $pid"
done < <(find "$root/proc" -mindepth 3 -maxdepth 3 -path '*/ns/pid' -printf '%h %l\n')

for state in "$root$rr"/*/state.json; do
  [[ -e $state ]] || continue
  mapfile -t fields < <(jq -r '.init_process_pid, (.cgroup_paths | to_entries[] | .value)' "$state")
  init=${fields[0]}
  # hierarchy as /proc/<pid>/cgroup names it ("" for v2, hence the "h:"
  # prefix: bash keys cannot be empty) -> expected cgroup
  declare -A want=()
  for p in "${fields[@]:1}"; do
    rel=${p#/sys/fs/cgroup/}
    dir=${rel%%/*}
    case $dir in
      systemd) h=name=systemd ;;
      unified) h= ;;
      *) h=$dir ;;
    esac
    want[h:$h]=/${rel#*/}
  done
  ns=${ns_of[$init]-}
  [[ -n $ns ]] || continue
  for pid in ${pids_in[$ns]}; do
    cg=$(cat "$root/proc/$pid/cgroup") || continue
    while IFS=: read -r _ ctl path; do
      [[ -v want[h:$ctl] ]] || continue
      exp=${want[h:$ctl]}
      [[ $path == "$exp" || $path == "$exp"/* ]] && continue
      echo "$pid ${ctl:-unified} $exp $path"
    done <<<"$cg"
  done
  unset want
done
