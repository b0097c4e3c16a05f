#!/usr/bin/env bash
# cell.sh - the local cell (the README's `make cell`): the release deployed with
# `bosh create-env` onto the real bosh-agent and BOSH's own monit, on both shapes of
# stemcell whose supervisor seed 000 hits. Needs root, a Debian host with
# systemd-nspawn (make deps) and a release tarball (make release).
#
#   cell.sh [--json] [--json-out FILE] [--tarball PATH] [--shapes jammy,noble]
#           [--scenarios without,protect,start,heal,seed001] [--serial] [--keep]
#
# Everything BOSH here is real: bosh-cli v7.9.12 create-env/delete-env, the
# bosh-agent v2.759.0 it pins, and the monit the stemcell builder builds, on a local
# stemcell (src/tests/bosh/stemcell) booted as a systemd-nspawn VM by a CPI of the
# project's own (src/tests/bosh/cpi-release):
#   jammy  systemd -> runit.service -> runsvdir -> monit 5.2.5 (+ validate.patch)
#   noble  systemd -> monit.service -> monit 5.2.5 (+ validate.patch: docs/bosh.md says why not 5.29.0)
# The agent compiles both of cellguard's packages from the tarball, applies the job,
# runs pre-start and starts monit; a Garden stand-in (src/tests/bosh/test-release)
# makes real containers below its own cgroup, with runc itself and through containerd.
#
# Scenarios (each a fresh create-env per shape; properties in src/tests/bosh/scenarios):
#   without  Garden's monit file as shipped, cellguard only validates and watches
#            (cellguard watch, healing off): the seed-000 trigger moves container
#            processes, watch logs and counts them; the update's drain blocks (the
#            failed step, each pid in drain.log), Garden destroys its containerd-mode
#            container (does kill --all still reach it?), `cellguard drain lift` on the
#            VM lets the same update past drain, and delete-env's drain (job_shutdown)
#            reports the runc-mode container's escapes and lets the VM go.
#   protect  Garden's monit file as shipped, cellguard.supervisor.protect: nothing
#            moves, the update and delete-env pass, the containers are destroyed.
#   start    Garden's monit file calls `cellguard start|stop garden`: the same.
#   heal     as without, and cellguard watch with cellguard.watch.heal: the trigger moves
#            container processes, watch moves them back, destroy and delete-env pass.
#   seed001  a runc reporting 1.0.0-rc93: pre-start blocks create-env while the pipe
#            soft limit is active; once lifted, the rc93 advisory is a warning.
#
# Every scenario of every shape runs at once, each in its own VM (--serial: a shape's
# scenarios one after the other). The story goes to stdout (stderr with --json, which
# prints the summary on stdout); --json-out FILE also writes the summary. Exit 0 when
# every expectation held, 1 when one failed, 2 when the cell could not be built.
# Everything made is removed at exit, Ctrl-C included: VMs, boxes, forwarders, their
# ports (--keep leaves the VMs running).
set -uo pipefail
# The whole script is one compound command, read before any of it runs: bash reads
# a script as it goes, and an edit to this file during a run must not change it.
{

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../../.." && pwd)
bdir=${repo}/src/tests/bosh
T0=${SECONDS}

json=0 keep=0 serial=0 json_out=""
tarball=${repo}/dev_releases/cellguard-dev.tgz
shapes=jammy,noble
scenarios=without,protect,start,heal,seed001
prefix=${CELL_BOX_PREFIX:-cell}
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1 ;;
    --keep) keep=1 ;;
    --serial) serial=1 ;;
    --json-out) json_out=$2; shift ;;
    --json-out=*) json_out=${1#*=} ;;
    --tarball) tarball=$2; shift ;;
    --tarball=*) tarball=${1#*=} ;;
    --shapes) shapes=$2; shift ;;
    --shapes=*) shapes=${1#*=} ;;
    --scenarios) scenarios=$2; shift ;;
    --scenarios=*) scenarios=${1#*=} ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "cell.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# ---- the story ---------------------------------------------------------------------------
# stdout, or stderr when stdout carries the JSON summary. Inside a runner every line
# carries the shape and scenario, as they run side by side.
if [ "${json}" = 1 ]; then exec 3>&2; else exec 3>&1; fi
tag=""
say() { local l; while IFS= read -r l; do printf '%s%s\n' "${tag:+[${tag}] }" "${l}" >&3; done <<<"$*"; }
indent() { awk '{ if (length($0) > 220) $0 = substr($0, 1, 217) "..."; print "      " $0 }' | while IFS= read -r l; do say "${l}"; done; }
die() { say "cell: ERROR: $*"; exit 2; }
elapsed() { echo "$((SECONDS - T0))s"; }
heading() { say ""; say "━━━ $* ━━━"; }
step() { say ""; say "-- [$(elapsed)] $*"; }

[ "$(id -u)" = 0 ] || die "must run as root (systemd-nspawn, cgroups, mounts)"
for c in jq ruby go systemd-nspawn socat nsenter ss tar; do
  command -v "$c" >/dev/null || die "$c is missing: run make deps"
done
[ -f "${tarball}" ] || die "no release tarball at ${tarball}: run make release"
tarball=$(cd "$(dirname "${tarball}")" && pwd)/$(basename "${tarball}")
IFS=, read -r -a want_shapes <<<"${shapes}"
IFS=, read -r -a want_scenarios <<<"${scenarios}"
for s in "${want_shapes[@]}"; do case $s in jammy|noble) ;; *) die "unknown shape $s: want jammy, noble" ;; esac; done
for s in "${want_scenarios[@]}"; do case $s in without|protect|start|heal|seed001) ;; *) die "unknown scenario $s: want without, protect, start, heal, seed001" ;; esac; done

work=$(mktemp -d /var/tmp/cellguard-cell.XXXXXX)
mkdir -p "${work}/summary" "${work}/tmp" "${work}/home"
# A box whose owner (this script) is SIGKILLed is stopped by the next sdbox.sh start.
export SDBOX_OWNER_PID=$$
runners=()   # process groups of the shape runners (job control below)

# cpi_cleanup STATE_DIR: every VM the CPI made there, deleted through the CPI itself
# (its forwarder ended, its box stopped), as delete-env would.
cpi_cleanup() {
  local st=$1 vm cfg=$1.cleanup.json
  [ -d "${st}/vms" ] || return 0
  jq -n --arg s "${st}" --arg b "${sdbox}" '{state_dir: $s, sdbox: $b, box_prefix: "cleanup"}' >"${cfg}"
  for vm in "${st}"/vms/vm-*; do
    [ -d "${vm}" ] || continue
    jq -n --arg c "$(basename "${vm}")" '{method: "delete_vm", arguments: [$c], context: {}}' |
      bash "${cpi}" "${cfg}" | jq -r 'select(.error) | "cell: cleanup: " + .error.message' | while IFS= read -r l; do say "${l}"; done
  done
}
cleanup() {
  local rc=$? pg st
  # Only the main shell cleans up: a subshell that caught the signal just ends.
  [ "${BASHPID}" = "$$" ] || exit "${rc}"
  trap - EXIT INT TERM
  for pg in "${runners[@]}"; do kill -TERM -- "-${pg}" 2>/dev/null; done
  for pg in "${runners[@]}"; do wait "${pg}" 2>/dev/null; done
  if [ "${keep}" = 1 ]; then
    say "--keep: VMs left running; their CPI state: $(ls -d "${work}"/*/cpi 2>/dev/null | tr '\n' ' ')"
    say "        (delete: echo '{\"method\":\"delete_vm\",\"arguments\":[\"VM\"]}' | ${cpi} STATE.cleanup.json)"
    exit "${rc}"
  fi
  for st in "${work}"/*/cpi; do [ -d "${st}" ] && cpi_cleanup "${st}"; done
  rm -rf "${work}"
  exit "${rc}"
}
trap cleanup EXIT
trap '[ "${BASHPID}" = "$$" ] && { say ""; say "cell: interrupted, cleaning up"; }; exit 130' INT TERM

# Private copies of the harness and the CPI: bash reads a script as it runs, so an
# edit to the shared file during a run must not change what this run executes.
sdbox=${work}/sdbox.sh
cp "${repo}/src/tests/harness/sdbox.sh" "${sdbox}"
cpi=${work}/nspawn-cpi
cp "${bdir}/cpi-release/src/nspawn_cpi/nspawn-cpi" "${cpi}"
# Every expectation each scenario records when it runs to the end, and the summary
# that fails a scenario missing one (it stopped early): copies, as above.
cp "${here}/expectations.json" "${work}/expectations.json"
cp "${here}/summary.jq" "${work}/summary.jq"

# ---- expectations and facts (one file each per shape/scenario) ---------------------------
# expect ID OK(true|false) DETAIL   (in a scenario: ${key} is shape/scenario)
expect() {
  local mark=ok
  [ "$2" = true ] || mark=FAILED
  say "   => expectation ${1}: ${mark} - ${3}"
  jq -nc --arg id "$1" --argjson ok "$2" --arg detail "$3" '{id: $id, ok: $ok, detail: $detail}' \
    >>"${work}/summary/${key/\//-}.expect.jsonl"
}
# fact KEY JSON
fact() { jq -nc --arg k "$1" --argjson v "$2" '{($k): $v}' >>"${work}/summary/${key/\//-}.facts.jsonl"; }
js() { jq -Rn --arg s "$1" '$s'; }   # a shell string as a JSON string
tf() { if "$@"; then echo true; else echo false; fi; }   # a test's outcome as true|false

# ---- what every shape shares: the tools, the releases, the stemcells ---------------------
heading "cellguard local cell on the real BOSH agent ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
say "host: $(uname -r), $(stat -fc %T /sys/fs/cgroup | sed 's/tmpfs/cgroup v1 hybrid (tmpfs + v1 controllers)/; s/cgroup2fs/cgroup v2/'), fs.pipe-user-pages-soft=$(cat /proc/sys/fs/pipe-user-pages-soft)"
say "shapes: ${want_shapes[*]}; scenarios: ${want_scenarios[*]}"

step "tools: bosh-cli, the bosh-agent client driver (spec/go.mod pins both)"
bosh=$(bash "${repo}/ci/scripts/bosh-cli.sh" 2>"${work}/bosh-cli.log") || { cat "${work}/bosh-cli.log" >&3; die "building bosh-cli failed (log above)"; }
bosh_() { HOME=${work}/home TMPDIR=${work}/tmp "${bosh}" "$@"; }
(cd "${repo}/spec" && go build -mod=mod -o "${work}/agent-update" ./cmd/agent-update) >"${work}/agent-update-build.log" 2>&1 ||
  { cat "${work}/agent-update-build.log" >&3; die "building spec/cmd/agent-update failed (log above)"; }
say "   $(bosh_ --version | head -n1 | sed 's/^version/bosh-cli/'); agent-update built from spec/cmd/agent-update"

step "releases: cellguard from ${tarball#"${repo}"/}, the CPI and the test release (dev tarballs)"
mkdir -p "${work}/release"
tar -xzf "${tarball}" -C "${work}/release" release.MF || die "unpack ${tarball}"
rel_version=$(ruby -ryaml -e 'puts YAML.load_file(ARGV[0])["version"]' "${work}/release/release.MF")
cg_pkg=$(ruby -ryaml -e 'puts YAML.load_file(ARGV[0])["packages"].find { |p| p["name"] == "cellguard" }["fingerprint"]' "${work}/release/release.MF")
say "   cellguard/${rel_version} (package cellguard/${cg_pkg:0:12}…)"
# make_release NAME DIR: a dev tarball from a scratch copy (nothing lands in the repo).
make_release() {
  mkdir -p "${work}/src"
  cp -a "$2" "${work}/src/$1"
  (cd "${work}/src/$1" && bosh_ create-release --force --tarball="${work}/$1.tgz" --non-interactive) \
    >"${work}/$1-release.log" 2>&1 || { cat "${work}/$1-release.log" >&3; die "bosh create-release of $2 failed (log above)"; }
  say "   $1: $(tar -xzOf "${work}/$1.tgz" release.MF | ruby -ryaml -e 'm = YAML.load($stdin.read); puts "jobs #{m["jobs"].map { |j| j["name"] }.join(", ")}; packages #{m["packages"].map { |p| p["name"] }.join(", ")}"')"
}
make_release nspawn-cpi "${bdir}/cpi-release"
make_release cellguard-test "${bdir}/test-release"

step "stemcells (src/tests/bosh/stemcell/build.sh; cached by content)"
declare -A stemcell
for s in "${want_shapes[@]}"; do
  bash "${bdir}/stemcell/build.sh" "${s}" >"${work}/stemcell-${s}.path" 2>"${work}/stemcell-${s}.log" &
  echo $! >"${work}/stemcell-${s}.pid"
done
for s in "${want_shapes[@]}"; do
  wait "$(cat "${work}/stemcell-${s}.pid")" || { cat "${work}/stemcell-${s}.log" >&3; die "building the ${s} stemcell failed (above)"; }
  stemcell[${s}]=$(cat "${work}/stemcell-${s}.path")
  say "   ${s}: $(tail -n1 "${work}/stemcell-${s}.log" | sed 's/^stemcell [a-z]*: //')"
done

# ---- a scenario's VM ---------------------------------------------------------------------
# Set by deploy: box (sdbox name), init (host pid of the VM's systemd), R (its root).
box="" init="" R=""
bx() { SDBOX_NAME=${box} bash "${sdbox}" exec "$@"; }
find_vm() {
  local d
  d=$(ls -d "${state}"/vms/vm-* 2>/dev/null | head -n1)
  [ -n "${d}" ] || return 1
  box=$(cat "${d}/box")
  init=$(sed -n 's/^SDBOX_INIT_PID=//p' "${d}/sdbox.env")
  R=/proc/${init}/root
}
agent_log() {  # the agent's own log: runit's svlogd (jammy), the journal (noble)
  if [ "${shape}" = jammy ]; then cat "${R}/var/vcap/bosh/log/current" 2>/dev/null
  else bx journalctl --no-pager -o cat -u bosh-agent 2>/dev/null; fi
}
monit_() { bx /var/vcap/bosh/bin/monit -c /var/vcap/bosh/etc/monitrc "$@"; }
# Files of the VM are read inside it: /var/vcap/{sys,jobs,packages} are absolute
# symlinks, which through /proc/PID/root would resolve on the host.
vm_cat() { bx cat "$@" 2>/dev/null; }
vm_test() { bx test "$@"; }

# bosh_env VERB LOG [ARGS...]: create-env or delete-env of this scenario's manifest,
# in a process group of its own (Ctrl-C: the runner's group is ended by cleanup).
bosh_env() {
  local verb=$1 log=$2; shift 2
  local ops=()
  [ -f "${bdir}/scenarios/${sc}-ops.yml" ] && ops=(-o "${bdir}/scenarios/${sc}-ops.yml")
  bosh_ "${verb}" --tty --no-color "${bdir}/manifest.yml" --state "${sdir}/state.json" --vars-store "${sdir}/creds.yml" \
    -v name="cell-${shape}-${sc}" -v shape="${shape}" \
    -v cellguard_release="${tarball}" -v test_release="${work}/cellguard-test.tgz" -v cpi_release="${work}/nspawn-cpi.tgz" \
    -v stemcell="${stemcell[${shape}]}" -v sdbox="${sdbox}" -v state_dir="${state}" \
    -v mbus_port="${port}" -v box_prefix="${prefix}-${shape}-${sc}" \
    -l "${bdir}/scenarios/defaults.yml" -l "${bdir}/scenarios/${sc}.yml" "${ops[@]}" "$@" >"${log}" 2>&1
}
# bosh_steps LOG: bosh-cli's stage lines (it prints them only with --tty) and its error.
bosh_steps() {
  if grep -qE '^Started (deploying|deleting)' "$1"; then
    sed -n '/^Started deploying\|^Started deleting/,$p' "$1"
  else
    tail -n 15 "$1"
  fi | grep -vE '^\s*$|Cleaning up rendered CPI jobs' | indent
}

# ---- where the containers are ------------------------------------------------------------
SOCK=/var/vcap/sys/run/containerd/containerd.sock
ROOTS="runc:/run/garden-runc containerd:/run/containerd/runc/garden"
ctr_() { bx ctr --address "${SOCK}" --namespace garden "$@"; }
# container_facts TAG: each container's processes and, for every one, each hierarchy's
# actual cgroup next to the one runc's state.json records. Writes ${sdir}/TAG.tsv:
# mode container pid hierarchy actual recorded
# The processes are every one in the container's pid namespace (its init's, from
# state.json), each read from its own /proc/<pid>/cgroup in the VM: not `runc ps`,
# which lists the processes of the recorded devices cgroup (runc 1.1 GetAllPids on
# v1), so a process systemd moved out of devices would be invisible to it.
container_facts() {
  local tag=$1 m root id init pid line h path k expected
  for m in ${ROOTS}; do
    root=${m#*:}
    for id in $(bx runc --root "${root}" list -q 2>/dev/null); do
      init=$(jq -r '.init_process_pid // empty' "${R}${root}/${id}/state.json" 2>/dev/null)
      [ -n "${init}" ] || continue
      # One shell in the VM per container: "PID<TAB>a /proc/PID/cgroup line" for
      # every process whose pid namespace is the init's.
      bx sh -c 'ns=$(readlink "/proc/$1/ns/pid") || exit 0
        for d in /proc/[0-9]*; do
          [ "$(readlink "$d/ns/pid" 2>/dev/null)" = "${ns}" ] || continue
          while IFS= read -r l; do printf "%s\t%s\n" "${d#/proc/}" "$l"; done <"$d/cgroup" 2>/dev/null
        done' sh "${init}" 2>/dev/null |
      while IFS=$'\t' read -r pid line; do
        h=${line#*:}; path=${h#*:}; h=${h%%:*}
        k=${h%%,*}
        expected=$(jq -r --arg k "${k}" '.cgroup_paths[$k] // empty' "${R}${root}/${id}/state.json" | sed 's|^/sys/fs/cgroup/[^/]*||')
        [ -n "${expected}" ] || continue
        [ -n "${h}" ] || h=unified
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${m%%:*}" "${id}" "${pid}" "${h}" "${path}" "${expected:-/}"
      done
    done
  done >"${sdir}/${tag}.tsv"
}
print_placement() {  # one line per pid
  awk -F'\t' '{k=$1" "$2" pid "$3; if (!(k in seen)) {order[++n]=k; seen[k]=1}
               if ($5 == $6) ok[k]++; else bad[k]=bad[k] " " $4 ":" $5 " (state: " $6 ")"; tot[k]++}
    END {for (i=1;i<=n;i++) {k=order[i]; if (bad[k]=="") print k ": in its recorded cgroup in all " tot[k] " hierarchies";
         else print k ": OUTSIDE its recorded cgroup in" bad[k]}}' "${sdir}/$1.tsv" | indent
}
escaped_json() {  # escaped_json TAG: the (pid, hierarchy) pairs outside their recorded cgroup
  awk -F'\t' '$5 != $6' "${sdir}/$1.tsv" |
    jq -Rs 'split("\n") | map(select(. != "") | split("\t") | {runtime: .[0], container: .[1], pid: (.[2] | tonumber), hierarchy: .[3], actual: .[4], recorded: .[5]})'
}

# ---- the steps a scenario is made of -----------------------------------------------------
# Each step_X reads the scenario's settings (shape, sc, sdir, state, port) and records
# its expectations; a scenario is a list of steps (scenario_steps). Later work (the
# drain contract, cellguard watch) adds steps and expectations here.

step_deploy() {
  step "bosh create-env (${sc}): VM, the agent compiles the packages, job applied, pre-start, monit start"
  local rc=0 t0=${SECONDS}
  bosh_env create-env "${sdir}/create-env.log" || rc=$?
  fact create_env_exit "${rc}"
  fact create_env_seconds "$((SECONDS - t0))"
  say "   bosh-cli's steps (create-env exited ${rc} after $((SECONDS - t0))s; log ${sdir}/create-env.log):"
  bosh_steps "${sdir}/create-env.log"
  find_vm || { expect vm-created false "create-env left no VM: $(tail -n 3 "${sdir}/create-env.log" | tr '\n' ' ')"; return 1; }
  say "   CPI calls (nspawn CPI, ${state}/calls.log): $(awk '{print $2}' "${state}/calls.log" | uniq | tr '\n' ' ')"
  fact cpi_methods "$(awk '{print $2}' "${state}/calls.log" | sort -u | jq -Rsc 'split("\n") | map(select(. != ""))')"
  evidence
  if [ "${sc}" = seed001 ]; then
    expect create-env-fails-at-pre-start "$(tf grep -q "Running the pre-start script" "${sdir}/create-env.log")" \
      "create-env exited ${rc}: $(grep -m1 -A2 -i 'error' "${sdir}/create-env.log" | tr -s ' \n' ' ' | cut -c1-200)"
    return 0
  fi
  expect create-env-succeeds "$(tf [ "${rc}" = 0 ])" "bosh create-env exited ${rc}"
  expect agent-compiled-packages "$(tf grep -q "Compiling package 'cellguard/.*Finished" "${sdir}/create-env.log")" \
    "the agent compiled: $(grep -o "Compiling package '[a-z0-9-]*/" "${sdir}/create-env.log" | sed "s/Compiling package '//; s|/||" | tr '\n' ' ')"
  [ "${rc}" = 0 ] || return 1
  local st
  for _ in $(seq 1 60); do vm_test -e /var/vcap/sys/run/garden/ready && break; sleep 1; done
  st=$(garden_status)
  say "   monit summary: garden is '${st}'; the stand-in's log:"
  vm_cat /var/vcap/sys/log/garden/garden.stdout.log | grep 'garden-standin' | sed 's/^[^ ]* //' | indent
  expect garden-running "$(tf vm_test -e /var/vcap/sys/run/garden/ready)" "the Garden stand-in made its containers and monit reports it '${st}'"
}

# garden_status: monit's word for the garden process (5.2.5: "Process 'garden'  running";
# 5.29.0 -B: "garden  OK  Process").
garden_status() {
  { monit_ -B summary 2>/dev/null || monit_ summary 2>/dev/null; } |
    sed -nE "s/^Process 'garden' +(.*[^ ]) *$/\1/p; s/^ *garden +(.*[^ ]) +Process *$/\1/p" | head -n1
}

# evidence: what the components themselves say (agent, monit, the supervisor, pre-start).
evidence() {
  local v mv pid unit
  v=$(bx /var/vcap/bosh/bin/bosh-agent -v 2>/dev/null)
  mv=$(bx /var/vcap/bosh/bin/monit -V 2>/dev/null | head -n1)
  pid=$(bx pgrep -o -f '/var/vcap/bosh/bin/monit(-actual)? -I' 2>/dev/null)
  unit=$(bx cat "/proc/${pid}/cgroup" 2>/dev/null | awk -F: '$2 == "name=systemd" {print $3}')
  fact agent_version "$(js "${v}")"
  fact monit_version "$(js "${mv}")"
  fact monit_cgroup "$(js "${unit}")"
  say "   bosh-agent -v: ${v}; monit -V: ${mv}; monit (pid ${pid}) runs in ${unit}"
  say "   the agent's log, one line per action it was asked for (get_task, ping, get_state left out):"
  agent_log | grep -E 'Received request with action' | grep -vE 'action (get_task|ping|get_state)$' |
    sed -E 's/^[0-9_:.-]+ //' | uniq | indent
  say "   cellguard's pre-start, as the agent ran it (/var/vcap/sys/log/cellguard/pre-start.stdout.log):"
  vm_cat /var/vcap/sys/log/cellguard/pre-start.stdout.log | grep -v '^ *$' | indent
  local err
  err=$(vm_cat /var/vcap/sys/log/cellguard/pre-start.stderr.log | grep -v '^{"timestamp"' | grep -v '^ *$')
  if [ -n "${err}" ]; then
    say "   and its stderr (pre-start.stderr.log, lager lines left out):"
    indent <<<"${err}"
  fi
  # monit 5.2.5 on both shapes (CELLGUARD_NOBLE_MONIT=5.29.0 builds noble with 5.29.0,
  # which bosh-agent v2.759.0 cannot drive: src/tests/bosh/stemcell/build.sh).
  local want=5.2.5 ok=false
  [ "${shape}" = noble ] && want=${CELLGUARD_NOBLE_MONIT:-5.2.5}
  if [ "${v}" = 2.759.0 ] && [[ ${mv} == *"version ${want}"* ]]; then ok=true; fi
  expect real-agent-and-monit "${ok}" "bosh-agent ${v:-?}, ${mv:-no monit}"
  local sup; sup=$([ "${shape}" = jammy ] && echo runit.service || echo monit.service)
  expect monit-under-${sup%.service} "$(tf [ "${unit}" = "/system.slice/${sup}" ])" "monit runs in ${unit:-?} (the ${shape} shape's supervisor unit)"
}

step_placement() {
  step "where the containers are (each pid, every hierarchy, against runc's state.json)"
  local unitcg pid
  pid=$(vm_cat /var/vcap/sys/run/garden/garden.pid)
  unitcg=$(bx cat "/proc/${pid}/cgroup" 2>/dev/null | awk -F: '$2 == "name=systemd" {print $3}')
  fact garden_cgroup "$(js "${unitcg}")"
  say "   the Garden stand-in (pid ${pid}) runs in ${unitcg}"
  say "   runc --root /run/garden-runc list; ctr -n garden task ls:"
  { bx runc --root /run/garden-runc list; ctr_ task ls; } 2>&1 | indent
  if [ "${sc}" = start ]; then
    local u=/etc/systemd/system/cellguard-garden.service
    say "   cellguard-garden.service (pre-start): $(grep -hE '^(Delegate|KillMode|TasksMax|Type)=' "${R}${u}" 2>/dev/null | tr '\n' ' ')"
    expect garden-in-delegated-unit "$(tf [ "${unitcg}" = /system.slice/cellguard-garden.service ])" "the Garden stand-in runs in ${unitcg}"
  else
    local sup; sup=$([ "${shape}" = jammy ] && echo runit.service || echo monit.service)
    local ok=false
    if [[ ${unitcg} == /system.slice/${sup}* ]]; then ok=true; fi
    expect garden-under-supervisor "${ok}" "the Garden stand-in runs in ${unitcg} (below the unit that holds monit)"
  fi
  container_facts before
  print_placement before
  local nbad nc np
  nbad=$(awk -F'\t' '$5 != $6' "${sdir}/before.tsv" | wc -l)
  nc=$(cut -f1,2 "${sdir}/before.tsv" | sort -u | wc -l); np=$(cut -f3 "${sdir}/before.tsv" | sort -u | wc -l)
  fact containers "$(cut -f1,2 "${sdir}/before.tsv" | sort -u | jq -Rsc 'split("\n") | map(select(. != "") | split("\t") | {runtime: .[0], id: .[1]})')"
  local placed=false
  if [ "${nc}" = 2 ] && [ "${nbad}" = 0 ]; then placed=true; fi
  expect containers-placed "${placed}" \
    "${nc} containers (runc itself and containerd's runc shim), ${np} processes, all in garden/<id> as state.json records"
}

# ---- cellguard watch in the VM (the cellguard job's monit process) ----------------------
WATCH_LOG=/var/vcap/sys/log/cellguard/watch.log
# metric NAME: NAME summed over its series on watch's /metrics (127.0.0.1:14875 in the
# VM's network namespace, the job's default listen); empty when it cannot be read.
metric() {
  nsenter -t "${init}" -n curl -sf --max-time 2 http://127.0.0.1:14875/metrics 2>/dev/null |
    awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $NF; f = 1} END {if (f) printf "%d\n", s}'
}
# watch_lines MSG: watch's log lines with message cellguard.watch.MSG after the first
# ${watch_offset} lines, one JSON object a line.
watch_offset=0
watch_lines() {
  vm_cat "${WATCH_LOG}" | tail -n +"$((watch_offset + 1))" |
    jq -c --arg m "cellguard.watch.$1" 'select(.message == $m)' 2>/dev/null
}
# watch_ready: watch runs, has scanned once and counts no escape; remembers where its
# log ends so the trigger's lines are the ones after.
watch_ready() {
  local n=""
  for _ in $(seq 1 60); do
    n=$(metric cellguard_escaped_processes)
    [ "${n}" = 0 ] && [ -n "$(metric cellguard_scans_total)" ] && break
    sleep 0.5
  done
  watch_offset=$(vm_cat "${WATCH_LOG}" | wc -l)
  say "   cellguard watch (monit: cellguard-watch $(monit_ summary 2>/dev/null | sed -nE "s/^Process 'cellguard-watch' +(.*[^ ]) *$/\1/p")): cellguard_escaped_processes ${n:-unreadable}, $(metric cellguard_scans_total) scans so far, heal $(vm_cat /var/vcap/jobs/cellguard/config/cellguard.json | jq -r '.watch.heal // false')"
  [ "${n}" = 0 ]
}
now() { date +%s.%N; }
# poll_metric NAME FILE: from now on, every 50 ms, "UNIXTIME VALUE" of NAME appended to
# FILE, in the background (poll_stop ends it): the moment the value changed is read
# from there, not from a step's own slower calls.
poll_pid=""
poll_metric() {
  # the time is taken when the answer is in: an upper bound on when it changed
  ( while :; do v=$(metric "$1"); echo "$(now) ${v}"; sleep 0.05; done ) >"$2" 2>/dev/null &
  poll_pid=$!
}
poll_stop() { [ -n "${poll_pid}" ] && kill "${poll_pid}" 2>/dev/null; wait "${poll_pid}" 2>/dev/null; poll_pid=""; }
# first_above FILE: the first "UNIXTIME VALUE" line of a poll whose value is above 0.
first_above() { awk '$2 != "" && $2 > 0 {print; exit}' "$1"; }
epoch() { [ -n "$1" ] && [ "$1" != null ] && date -d "$1" +%s.%N; }   # an rfc3339 log time as unix seconds
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b - a}'; }   # secs FROM TO

step_trigger() {
  step "the seed-000 event: a new unit in system.slice with CPU, IO, memory, tasks and device settings starts"
  local ready=true
  watch_ready || ready=false   # not in $(): it sets watch_offset
  expect watch-running "${ready}" "cellguard watch runs under monit and serves /metrics with cellguard_escaped_processes 0 before the trigger"
  install -D -m 0644 "${bdir}/seed000-trigger.service" "${R}/etc/systemd/system/seed000-trigger.service"
  bx systemctl daemon-reload
  local jobs0 t0
  jobs0=$(metric cellguard_scans_total)
  case ${sc} in
    without) poll_metric cellguard_escaped_processes "${sdir}/poll.log" ;;
    heal) poll_metric cellguard_healed_processes_total "${sdir}/poll.log" ;;
  esac
  bx systemctl start seed000-trigger.service
  # The trigger's job finished when the unit became active: systemd's own clock
  # (the VM shares the host's), so watch's delays below are from that moment.
  t0=$(date -d "$(bx systemctl show -P ActiveEnterTimestamp --timestamp=us+utc seed000-trigger.service)" +%s.%N)
  say "   systemctl start seed000-trigger.service: $(bx systemctl is-active seed000-trigger.service), active at $(date -u -d "@${t0}" +%H:%M:%S.%N | cut -c1-12)"
  case ${sc} in
    without) watch_sees_escape "${t0}" ;;
    heal) watch_heals "${t0}"; return ;;
    *) watch_quiet "${jobs0}" ;;
  esac
  container_facts after
  print_placement after
  local esc moved
  esc=$(escaped_json after)
  moved=$(jq -c '[.[].hierarchy] | unique' <<<"${esc}")
  fact escaped "${esc}"
  fact moved_hierarchies "${moved}"
  say "   hierarchies systemd moved container processes in: $(jq -r 'join(", ") | if . == "" then "none" else . end' <<<"${moved}")"
  if [ "${sc}" = without ]; then
    expect seed000-reproduced "$(tf [ "$(jq length <<<"${esc}")" -gt 0 ])" \
      "$(jq length <<<"${esc}") (pid, hierarchy) pairs outside their recorded cgroups, in $(jq -r 'join(" ")' <<<"${moved}")"
    # watch counts processes; cell.sh's own read, made after watch's, names the same.
    local pids
    pids=$(jq '[.[].pid] | unique | length' <<<"${esc}")
    expect watch-metric-matches "$(tf [ "${watch_escaped:-x}" = "${pids}" ])" \
      "cellguard_escaped_processes ${watch_escaped:-unread}; processes cell.sh finds outside their recorded cgroups: ${pids}"
  else
    expect nothing-moved "$(tf [ "$(jq length <<<"${esc}")" = 0 ])" "after the trigger every container process is still in the cgroups state.json records"
  fi
}

# watch_sees_escape T0 (healing off): the gauge goes from 0 to the number of escaped
# processes, and the log says which, once per process and hierarchy. Times are from
# T0, when the trigger unit became active; the gauge's is when the host's poll (every
# 50 ms, nsenter + curl, started before the trigger) first read it.
watch_sees_escape() {
  local t0=$1 n="" tm="" lines first tl
  for _ in $(seq 1 150); do
    [ -n "$(first_above "${sdir}/poll.log")" ] && break; sleep 0.1
  done
  sleep 0.5; poll_stop
  read -r tm _ <<<"$(first_above "${sdir}/poll.log")"
  n=$(metric cellguard_escaped_processes)
  watch_escaped=${n}
  for _ in $(seq 1 20); do
    lines=$(watch_lines finding | jq -c 'select(.data.check == "cgroup-integrity")')
    [ -n "${lines}" ] && break; sleep 0.5
  done
  first=$(head -n1 <<<"${lines}")
  tl=$(epoch "$(jq -r '.timestamp' <<<"${first}" 2>/dev/null)")
  say "   cellguard_escaped_processes: 0 before, ${n:-unreadable} ${tm:+$(secs "${t0}" "${tm}")s after the trigger unit became active (polled from the host)}"
  say "   watch.log (${WATCH_LOG}), cgroup-integrity findings after the trigger:"
  jq -r '"\(.timestamp) \(.message) \(.data.subject): \(.data.detail)"' <<<"${lines}" 2>/dev/null | head -n 6 | indent
  fact watch_escaped_metric "${n:-null}"
  fact watch_metric_seconds "$(if [ -n "${tm}" ]; then secs "${t0}" "${tm}"; else echo null; fi)"
  fact watch_log_seconds "$(if [ -n "${tl}" ]; then secs "${t0}" "${tl}"; else echo null; fi)"
  fact watch_findings "$(jq -sc '[.[] | {subject: .data.subject, status: .data.status, detail: .data.detail}]' <<<"${lines}")"
  expect watch-metric-escaped "$(tf [ -n "${tm}" ])" \
    "cellguard_escaped_processes went from 0 to ${n:-?}${tm:+, read $(secs "${t0}" "${tm}")s after the trigger unit became active}"
  expect watch-logged-escape "$(tf [ -n "${first}" ])" \
    "watch.log: $(jq -r '.data.subject' <<<"${lines}" 2>/dev/null | sort -u | paste -sd' ')${tl:+, first logged $(secs "${t0}" "${tl}")s after the trigger unit became active}"
}

# watch_quiet SCANS0 (protected): watch scans after the trigger's systemd events and
# still counts no escape, logging no cgroup-integrity finding.
watch_quiet() {
  local s0=$1 s n lines
  for _ in $(seq 1 100); do
    s=$(metric cellguard_scans_total)
    [ -n "${s}" ] && [ "${s}" -gt "${s0:-0}" ] && break; sleep 0.1
  done
  sleep 1   # a scan's confirmation rounds take 0.6s
  n=$(metric cellguard_escaped_processes)
  lines=$(watch_lines finding | jq -c 'select(.data.check == "cgroup-integrity")')
  say "   cellguard watch: ${s0:-?} -> ${s:-?} scans over the trigger, cellguard_escaped_processes ${n:-unreadable}, $(grep -c . <<<"${lines}") cgroup-integrity findings logged"
  fact watch_escaped_metric "${n:-null}"
  local ok=false
  if [ "${s:-0}" -gt "${s0:-0}" ] && [ "${n}" = 0 ] && [ -z "${lines}" ]; then ok=true; fi
  expect watch-quiet "${ok}" \
    "watch scanned after the trigger (${s0:-?} -> ${s:-?} scans) and counts ${n:-?} escaped processes, no finding"
}

# watch_heals T0 (cellguard.watch.heal): systemd moves the container processes, watch
# moves each back into its recorded cgroups (a healed line per pid and hierarchy,
# with its scan's number), the heal counter counts them (a process once per scan
# that healed it) and the gauge ends at 0; cell.sh then reads every
# container process back where state.json records it.
watch_heals() {
  local t0=$1 h="" th="" lines tl pids heals scans n
  for _ in $(seq 1 150); do
    [ -n "$(first_above "${sdir}/poll.log")" ] && break; sleep 0.1
  done
  sleep 2; poll_stop   # heals of one scan come together; 2s more for any straggler
  read -r th _ <<<"$(first_above "${sdir}/poll.log")"
  h=$(metric cellguard_healed_processes_total)
  lines=$(watch_lines healed)
  tl=$(epoch "$(head -n1 <<<"${lines}" | jq -r '.timestamp' 2>/dev/null)")
  pids=$(jq -r '"\(.data.subject)/\(.data.data.pid)"' <<<"${lines}" 2>/dev/null | sort -u | grep -c .)
  # The counter counts a process once per scan that healed it (in one
  # hierarchy or several): systemd may move a process again after a heal.
  heals=$(jq -r '"\(.data.scan) \(.data.subject)/\(.data.data.pid)"' <<<"${lines}" 2>/dev/null | sort -u | grep -c .)
  scans=$(jq -r '.data.scan' <<<"${lines}" 2>/dev/null | sort -u | grep -c .)
  n=$(metric cellguard_escaped_processes)
  say "   cellguard_healed_processes_total: 0 before, ${h:-unreadable} after${th:+ (read $(secs "${t0}" "${th}")s after the trigger unit became active)}; cellguard_escaped_processes ${n:-unreadable}"
  say "   watch.log (${WATCH_LOG}), healed after the trigger:"
  jq -r '"\(.timestamp) \(.message) scan \(.data.scan) \(.data.subject) pid \(.data.data.pid): \(.data.detail)"' <<<"${lines}" 2>/dev/null | head -n 12 | indent
  fact watch_healed_metric "${h:-null}"
  fact watch_heal_seconds "$(if [ -n "${th}" ]; then secs "${t0}" "${th}"; else echo null; fi)"
  fact watch_healed "$(jq -sc '[.[] | {subject: .data.subject, pid: .data.data.pid, scan: .data.scan, detail: .data.detail}]' <<<"${lines}")"
  local ok=false
  if [ -n "${lines}" ] && [ "${h:-0}" = "${heals}" ] && [ "${n}" = 0 ]; then ok=true; fi
  expect watch-healed "${ok}" \
    "watch healed ${pids} processes, ${heals} heals in ${scans} scan$([ "${scans}" = 1 ] || echo s) (cellguard_healed_processes_total ${h:-?}, escaped now ${n:-?})${tl:+, the first logged $(secs "${t0}" "${tl}")s after the trigger unit became active}"
  container_facts healed
  print_placement healed
  local esc
  esc=$(escaped_json healed)
  fact escaped "${esc}"
  expect healed-in-place "$(tf [ "$(jq length <<<"${esc}")" = 0 ])" \
    "after the heal every container process is in the cgroups state.json records ($(jq length <<<"${esc}") pairs outside)"
}

# drain_log JOB [KEPT]: JOB's drain log, from the running VM or, with KEPT, from the
# logs the CPI kept when it deleted the VM.
drain_log() {
  if [ -n "${2:-}" ]; then cat "$2/$1/drain.log" 2>/dev/null; else vm_cat "/var/vcap/sys/log/$1/drain.log"; fi
}
# show_drains [KEPT]: what each job's drain was given (the Garden stand-in's recorder)
# and what cellguard's drain logged.
show_drains() {
  say "   the agent ran each job's drain; the Garden stand-in's recorder (garden/drain.log) saw:"
  drain_log garden "${1:-}" | tail -n 4 | indent
  say "   cellguard's drain (cellguard/drain.log, lager lines left out):"
  drain_log cellguard "${1:-}" | grep -v '^{"timestamp"' |
    grep -E '^[0-9T:-]+Z (drain |bin/drain: )|^cellguard drain |^cellguard: (error|hint): |validate --phase drain|BLOCKED|escaped in' | tail -n 14 | indent
  local failed
  failed=$(agent_log_of "${1:-}" | grep -E "drain.*script has failed with error" | tail -n 1 | sed -E 's/^[0-9_:.-]+ //')
  if [ -n "${failed}" ]; then
    say "   the agent's log:"
    indent <<<"${failed}"
  fi
}
# agent_log_of [KEPT]: the agent's log from the running VM, or as the CPI kept it.
agent_log_of() {
  if [ -z "${1:-}" ]; then agent_log; return; fi
  cat "$1/../bosh-log/current" "$1/../bosh-agent.journal" 2>/dev/null
}

# agent_update LOG ARGS...: spec/cmd/agent-update against this scenario's VM (the
# agent's HTTPS API, with the mbus password and CA create-env generated).
agent_update() {
  local log=$1 ca=${sdir}/ca.pem pw; shift
  bosh_ interpolate "${sdir}/creds.yml" --path /mbus_bootstrap_ssl/ca >"${ca}"
  pw=$(bosh_ interpolate "${sdir}/creds.yml" --path /mbus_bootstrap_password)
  "${work}/agent-update" -mbus "https://mbus:${pw}@127.0.0.1:${port}" -ca "${ca}" "$@" >"${log}" 2>&1
}
# agent_update_manifest LOG: the update (update-ops.yml over the scenario's manifest),
# as the director drives it: drain, stop, apply, pre-start, start.
agent_update_manifest() {
  local log=$1 new=${sdir}/update-manifest.yml
  if [ ! -s "${new}" ]; then
    bosh_ interpolate "${bdir}/manifest.yml" --vars-store "${sdir}/creds.yml" \
      -v name="cell-${shape}-${sc}" -v shape="${shape}" -v cellguard_release="${tarball}" -v test_release="${work}/cellguard-test.tgz" \
      -v cpi_release="${work}/nspawn-cpi.tgz" -v stemcell="${stemcell[${shape}]}" -v sdbox="${sdbox}" -v state_dir="${state}" \
      -v mbus_port="${port}" -v box_prefix="${prefix}-${shape}-${sc}" \
      -l "${bdir}/scenarios/defaults.yml" -l "${bdir}/scenarios/${sc}.yml" -o "${bdir}/scenarios/update-ops.yml" >"${new}" 2>"${sdir}/interpolate.log" ||
      { echo "bosh interpolate failed: $(tail -n 2 "${sdir}/interpolate.log")" >"${log}"; return 2; }
  fi
  agent_update "${log}" -manifest "${new}" -group cell \
    -release cellguard="${tarball}" -release cellguard-test="${work}/cellguard-test.tgz" -log "${log%.log}.debug.log"
}

step_update() {
  step "an update with a changed property (cellguard.log.level: debug), driven as the director does over the agent's HTTPS API"
  local rc=0 gpid_before gpid_after alive=""
  gpid_before=$(vm_cat /var/vcap/sys/run/garden/garden.pid)
  agent_update_manifest "${sdir}/agent-update.log" || rc=$?
  fact update_exit "${rc}"
  say "   agent-update (exit ${rc}):"
  indent <"${sdir}/agent-update.log"
  # What the update did to Garden and its containers (the agent restarts monit
  # on every apply: sv kill on jammy, systemctl kill on noble).
  for _ in $(seq 1 30); do vm_test -e /var/vcap/sys/run/garden/ready && break; sleep 1; done
  gpid_after=$(vm_cat /var/vcap/sys/run/garden/garden.pid)
  for p in $(cut -f3 "${sdir}/before.tsv" | sort -un); do [ -d "${R}/proc/${p}" ] && alive+=" ${p}"; done
  fact update_garden_pids "$(jq -nc --arg b "${gpid_before}" --arg a "${gpid_after}" '{before: $b, after: $a}')"
  fact update_container_pids_alive "$(jq -Rnc --arg a "${alive# }" '$a | split(" ") | map(select(. != "") | tonumber)')"
  say "   the Garden stand-in: pid ${gpid_before:-none} before the update, ${gpid_after:-none} after; container processes alive after it:${alive:- none} (of $(cut -f3 "${sdir}/before.tsv" | sort -un | tr '\n' ' '))"
  say "   the agent's log for the update:"
  agent_log | grep -E 'Received request with action (drain|stop|apply|run_script|start)$' | sed -E 's/^[0-9_:.-]+ //' | tail -n 6 | indent
  show_drains
  local g args next
  g=$(drain_log garden)
  args=$(grep '^args: ' <<<"${g}" | tail -n1 | sed 's/^args: //')
  next=$(grep '^BOSH_JOB_NEXT_STATE: ' <<<"${g}" | tail -n1 | sed 's/^BOSH_JOB_NEXT_STATE: //')
  fact update_drain_args "$(js "${args}")"
  fact update_drain_next_state "$(js "${next}")"
  expect update-drain-args "$(tf [ "${args}" = "job_changed hash_changed" ])" \
    "the agent passed the drains '${args}' and BOSH_JOB_NEXT_STATE=${next}"
  if [ "${sc}" = without ]; then
    # The drain contract (docs/lifecycle.md): an update with escapes fails the drain
    # step with the agent's error, and cellguard's drain.log names every pid.
    local err dl p missing="" n=0
    err=$(grep -m1 'FAILED at drain' "${sdir}/agent-update.log" | sed 's/^agent-update: //')
    fact update_error "$(js "${err}")"
    fact agent_drain_error "$(js "$(agent_log | grep -E "cellguard/bin/drain' script has failed with error" | tail -n1 | sed -E 's/^[0-9_:.-]+ //')")"
    expect update-blocked-at-drain "$(tf grep -qE 'FAILED at drain: .*drain scripts failed\. Failed Jobs: cellguard' "${sdir}/agent-update.log")" "${err:0:240}"
    dl=$(drain_log cellguard)
    for p in $(escaped_json after | jq -r '.[].pid' | sort -un); do
      n=$((n + 1)); grep -q "pid ${p} (" <<<"${dl}" || missing+=" ${p}"
    done
    local named=false
    if [ "${n}" -gt 0 ] && [ -z "${missing}" ]; then named=true; fi
    expect update-drain-log-names-pids "${named}" \
      "cellguard/drain.log names each of the ${n} escaped pids$([ -n "${missing}" ] && echo "; missing:${missing}")"
  else
    expect update-completes "$(tf [ "${rc}" = 0 ])" "drain, stop, apply, pre-start, start, running: $(tail -n1 "${sdir}/agent-update.log")"
    expect update-applied "$(tf grep -q '"level": *"debug"' <(vm_cat /var/vcap/jobs/cellguard/config/cellguard.json))" \
      "the re-rendered cellguard.json on the VM has log level debug"
  fi
}

# step_destroy: Garden's destroy of its containers. In `without` only the containerd-mode
# container (Garden's containerd mode, where seed 000 hit) is destroyed, while the update
# is blocked and Garden still runs: the runc-mode one stays escaped for the lift and for
# delete-env's job_shutdown drain.
step_destroy() {
  local modes="runc containerd"
  [ "${sc}" = without ] && modes=containerd
  local how="runc mode: runc kill --all, delete; containerd mode: ctr task kill --all, wait, delete --force"
  [ "${modes}" = containerd ] && how=${how#*; }
  step "Garden destroys its containers (${how})"
  local ok=true id pids alive rc out st t0
  for id in $(awk -F'\t' -v m="${modes}" '$1 == "runc" && m ~ /runc/ {print $2}' "${sdir}/before.tsv" | sort -u); do
    pids=$(awk -F'\t' -v c="${id}" '$2 == c {print $3}' "${sdir}/before.tsv" | sort -un | tr '\n' ' ')
    out=$(bx runc --root /run/garden-runc kill --all "${id}" KILL 2>&1); rc=$?
    for _ in $(seq 1 50); do
      alive=""; for p in ${pids}; do [ -d "${R}/proc/${p}" ] && alive+=" ${p}"; done
      [ -z "${alive}" ] && break; sleep 0.1
    done
    say "   runc kill --all ${id} KILL: exit ${rc}${out:+ (${out})}; of pids ${pids% }: ${alive:+still alive:${alive}}${alive:-all gone}"
    fact "runc_kill_${id}" "$(jq -nc --argjson rc "${rc}" --arg a "${alive# }" '{exit: $rc, alive_after: ($a | split(" ") | map(select(. != "") | tonumber))}')"
    [ "${rc}" = 0 ] && [ -z "${alive}" ] || ok=false
    out=$(bx runc --root /run/garden-runc delete "${id}" 2>&1); rc=$?
    say "   runc delete ${id}: exit ${rc}${out:+ (${out})}"
    [ "${rc}" = 0 ] || ok=false
  done
  for id in $(awk -F'\t' '$1 == "containerd" {print $2}' "${sdir}/before.tsv" | sort -u); do
    pids=$(awk -F'\t' -v c="${id}" '$2 == c {print $3}' "${sdir}/before.tsv" | sort -un | tr '\n' ' ')
    out=$(bx timeout 20 ctr --address "${SOCK}" --namespace garden task kill --all --signal SIGKILL "${id}" 2>&1); rc=$?
    for _ in $(seq 1 100); do
      st=$(ctr_ task ls 2>/dev/null | awk -v c="${id}" '$1 == c {print $3}')
      [ "${st}" != RUNNING ] && break; sleep 0.2
    done
    alive=""; for p in ${pids}; do [ -d "${R}/proc/${p}" ] && alive+=" ${p}"; done
    say "   ctr task kill --all --signal SIGKILL ${id}: exit ${rc}${out:+ (${out})}; task ${st:-gone} after 20s at most; of pids ${pids% }: ${alive:+still alive:${alive}}${alive:-all gone}"
    fact "ctr_kill_${id}" "$(jq -nc --argjson rc "${rc}" --arg st "${st}" --arg a "${alive# }" '{exit: $rc, task_status: $st, alive_after: ($a | split(" ") | map(select(. != "") | tonumber))}')"
    [ "${rc}" = 0 ] && [ -z "${alive}" ] || ok=false
    t0=$(date +%s%N)
    out=$(bx timeout 20 ctr --address "${SOCK}" --namespace garden task delete --force "${id}" 2>&1); rc=$?
    say "   ctr task delete --force ${id} (bounded: 20s): exit ${rc} after $(( ($(date +%s%N) - t0) / 1000000 )) ms${out:+ (${out})}"
    [ "${rc}" = 0 ] || ok=false
    out=$(ctr_ container delete "${id}" 2>&1); rc=$?
    say "   ctr container delete ${id}: exit ${rc}${out:+ (${out})}"
    [ "${rc}" = 0 ] || ok=false
  done
  fact destroyed_cleanly "${ok}"
  if [ "${sc}" = without ]; then
    # runc 1.1 lists a container's processes for kill --all in its recorded devices cgroup
    # (libcontainer/cgroups/fs GetAllPids: m.Path("devices")): the destroy goes through
    # exactly when the trigger left devices alone (seed 000's symptom needs devices moved).
    # The prediction is this step's own devices reading of the destroyed containers
    # (after.tsv: every process of their pid namespaces, from /proc/<pid>/cgroup); with
    # no reading there is nothing to predict from, and the expectation fails.
    local dev out_dev want=true
    dev=$(awk -F'\t' -v m=" ${modes} " 'index(m, " " $1 " ") && $4 == "devices"' "${sdir}/after.tsv" 2>/dev/null)
    out_dev=$(awk -F'\t' '$5 != $6' <<<"${dev}" | grep -c .)
    [ "${out_dev}" -gt 0 ] && want=false
    fact destroy_devices_reading "$(jq -nc --argjson n "$(grep -c . <<<"${dev}")" --argjson out "${out_dev}" --argjson want "${want}" '{processes: $n, outside_devices: $out, predicts_clean: $want}')"
    if [ -z "${dev}" ]; then
      expect destroy-as-devices-predicts false "no devices reading of the ${modes}-mode containers after the trigger: nothing to predict the destroy from (destroyed cleanly ${ok})"
    else
      expect destroy-as-devices-predicts "$(tf [ "${ok}" = "${want}" ])" \
        "${out_dev} of $(grep -c . <<<"${dev}") ${modes}-mode container processes outside their recorded devices cgroup, so kill --all should $([ "${want}" = true ] && echo "reach every process" || echo "reach none of those"); destroyed cleanly ${ok}"
    fi
  else
    expect destroyed-cleanly "${ok}" "every container killed with kill --all, every process gone, deleted (runc and containerd)"
  fi
}

step_delete() {
  step "bosh delete-env: drain (job_shutdown), stop, delete the VM"
  local rc=0 cid
  cid=$(basename "$(ls -d "${state}"/vms/vm-* 2>/dev/null | head -n1)")
  bosh_env delete-env "${sdir}/delete-env.log" || rc=$?
  fact delete_env_exit "${rc}"
  say "   bosh-cli's steps (delete-env exited ${rc}; log ${sdir}/delete-env.log):"
  bosh_steps "${sdir}/delete-env.log"
  local kept="" g args next
  [ "${rc}" = 0 ] && kept=${state}/deleted/${cid}/sys-log   # the CPI kept them at delete_vm
  show_drains "${kept}"
  g=$(drain_log garden "${kept}")
  args=$(grep '^args: ' <<<"${g}" | tail -n1 | sed 's/^args: //')
  next=$(grep '^BOSH_JOB_NEXT_STATE: ' <<<"${g}" | tail -n1 | sed 's/^BOSH_JOB_NEXT_STATE: //')
  fact shutdown_drain_args "$(js "${args}")"
  expect shutdown-drain-args "$(tf [ "${args}" = "job_shutdown hash_unchanged" ])" \
    "delete-env's drain: the agent passed '${args}', BOSH_JOB_NEXT_STATE ${next}"
  expect delete-env-succeeds "$(tf [ "${rc}" = 0 ])" "bosh delete-env exited ${rc}"
  local gone=false
  if [ ! -e "${state}/vms/${cid}" ] && ! SDBOX_NAME=${box} bash "${sdbox}" status >/dev/null 2>&1 &&
     ! ss -Htln "sport = :${port}" | grep -q .; then gone=true; fi
  expect vm-gone "${gone}" \
    "the CPI deleted ${cid}: box ${box} is gone, and nothing listens on 127.0.0.1:${port} any more"
  if [ "${sc}" = without ]; then
    # job_shutdown with escapes: drain reports them and lets the VM go.
    local line
    line=$(drain_log cellguard "${kept}" | grep -E '^cellguard drain job_shutdown[^:]*: released_on_shutdown: ' | tail -n1)
    fact shutdown_drain_outcome "$(js "${line}")"
    expect shutdown-drain-released "$(tf [ -n "${line}" ])" "cellguard/drain.log (kept by the CPI): ${line:-no released_on_shutdown line}"
  fi
}

# step_lift: the operator's way past a blocked update without a new manifest
# (docs/lifecycle.md): `cellguard drain lift` on the VM, as over bosh ssh, then the
# same update again. The lift is drain's only: the new job's pre-start validates again.
step_lift() {
  step "cellguard drain lift on the VM (its shell, as bosh ssh gives one), then the same update again"
  local rc=0 out dl line
  out=$(bx /var/vcap/packages/cellguard/bin/cellguard drain lift --by make-cell --for 10m \
    --reason "make cell: the escapes are known; let this update through" 2>&1) || rc=$?
  fact lift_exit "${rc}"
  say "   cellguard drain lift --by make-cell --for 10m --reason ...: exit ${rc}"
  indent <<<"${out}"
  rc=0
  agent_update_manifest "${sdir}/agent-update-lifted.log" || rc=$?
  fact lifted_update_exit "${rc}"
  say "   agent-update, the same update again (exit ${rc}):"
  indent <"${sdir}/agent-update-lifted.log"
  show_drains
  dl=$(drain_log cellguard)
  line=$(grep -E '^cellguard drain job_changed[^:]*: lifted: ' <<<"${dl}" | tail -n1)
  fact lifted_drain_outcome "$(js "${line}")"
  local ok=false
  if grep -q '^agent-update: drain: ok' "${sdir}/agent-update-lifted.log" && [ -n "${line}" ] && grep -q 'drain-block-lifted' <<<"${dl}"; then ok=true; fi
  expect update-lifted-past-drain "${ok}" "the agent's drain returned 0: ${line:-no lifted line in drain.log}"
  if [ "${rc}" != 0 ]; then
    say "   where the update stopped: $(grep -m1 'FAILED' "${sdir}/agent-update-lifted.log" | cut -c1-200)"
    say "   the new job's pre-start (cellguard/pre-start.stdout.log):"
    vm_cat /var/vcap/sys/log/cellguard/pre-start.stdout.log | grep -E 'BLOCKED|^\[FAIL\]|escaped in' | head -n 6 | indent
  fi
}

# seed-001: the verdict on rc93 with the pipe soft limit active (create-env's own
# pre-start) and lifted (pre-start again through the agent, a 0 bound over
# /proc/sys/fs/pipe-user-pages-soft in the VM's mount namespace).
rc93_verdict() {  # rc93_verdict CASE
  local case=$1 f=${sdir}/validate-$1.json rc93 none='{}' st sev holds ev refs others
  bx /var/vcap/packages/cellguard/bin/cellguard validate --phase pre-start --format json \
    --config /var/vcap/jobs/cellguard/config/cellguard.json --log-file /dev/null >"${f}" 2>/dev/null
  rc93=$(jq -c '[.. | objects | select(.data? and .data.advisory? == "runc-rc93-init-hang")] | first // empty' "${f}" 2>/dev/null)
  fact "rc93_finding_${case}" "${rc93:-null}"
  st=$(jq -r '.status // ""' <<<"${rc93:-$none}"); sev=$(jq -r '.data.severity // ""' <<<"${rc93:-$none}")
  holds=$(jq -r '.data.condition_holds // ""' <<<"${rc93:-$none}"); ev=$(jq -r '.data.condition_evidence // ""' <<<"${rc93:-$none}")
  refs=$(jq -r '.data.references // ""' <<<"${rc93:-$none}")
  say "   cellguard's verdict on runc-rc93-init-hang: status ${st:-none}, severity ${sev:-none}, condition pipe_soft_limit_active=${holds:-?} (${ev:-no evidence})"
  local ok=false
  if [ "${case}" = active ]; then
    if [ "${st}" = fail ] && [ "${sev}" = blocking ] && grep -q 'pull/2871' <<<"${refs}" &&
       vm_cat /var/vcap/sys/log/cellguard/pre-start.stdout.log | grep -q 'runc-rc93-init-hang'; then ok=true; fi
    expect rc93-blocks-pre-start "${ok}" \
      "the agent's pre-start failed; its report cites runc-rc93-init-hang (blocking, ${ev}; references runc PR #2871)"
  else
    if [ "${st}" = warn ] && [ "${sev}" = warning ] && [ "${holds}" = false ]; then ok=true; fi
    expect rc93-warns-when-limit-lifted "${ok}" \
      "runc-rc93-init-hang is a ${sev:-missing} (${ev}) once the limit is lifted"
    others=$(jq -r '[.. | objects | select(.data? and .data.advisory? and .data.advisory != "runc-rc93-init-hang" and .status? == "fail") | .data.advisory] | unique | join(", ")' "${f}" 2>/dev/null)
    [ -n "${others}" ] && say "   pre-start still fails: rc93 also predates the fixes for ${others}, which block on their own"
    fact still_blocking_lifted "$(jq -Rn --arg s "${others}" '$s | split(", ") | map(select(. != ""))')"
  fi
}

step_seed001() {
  step "seed-001: fs.pipe-user-pages-soft as the VM sees it: $(bx cat /proc/sys/fs/pipe-user-pages-soft) (active)"
  say "   $(bx /var/vcap/packages/runc-rc93/bin/runc --version | head -n1) at /var/vcap/packages/runc-rc93/bin/runc (a stand-in that answers --version as rc93 did)"
  say "   the agent's pre-start (cellguard/pre-start.stdout.log):"
  vm_cat /var/vcap/sys/log/cellguard/pre-start.stdout.log | grep -E 'runc-rc93|BLOCKED|blocked' | head -n 6 | indent
  rc93_verdict active
  step "seed-001: the limit lifted (0 bound over /proc/sys/fs/pipe-user-pages-soft in the VM's mount namespace; the host keeps $(cat /proc/sys/fs/pipe-user-pages-soft)), pre-start again through the agent"
  echo 0 >"${R}/run/cell-pipe-soft-0"
  nsenter -t "${init}" -m -- mount --bind /run/cell-pipe-soft-0 /proc/sys/fs/pipe-user-pages-soft
  say "   the VM now reads fs.pipe-user-pages-soft = $(bx cat /proc/sys/fs/pipe-user-pages-soft)"
  local rc=0
  agent_update "${sdir}/pre-start-again.log" -script pre-start || rc=$?
  say "   run_script pre-start through the agent: exit ${rc}: $(tail -n1 "${sdir}/pre-start-again.log" | cut -c1-200)"
  rc93_verdict lifted
}

scenario_steps() {
  case $1 in
    without) echo "deploy placement trigger update destroy lift delete" ;;
    protect|start) echo "deploy placement trigger update destroy delete" ;;
    heal) echo "deploy placement trigger destroy delete" ;;
    seed001) echo "deploy seed001 delete" ;;
  esac
}
scenario_title() {
  case $1 in
    without) echo "Garden's monit file as shipped, cellguard only validates" ;;
    protect) echo "Garden's monit file as shipped, cellguard protects the unit that holds monit" ;;
    start) echo "Garden's monit file calls cellguard start|stop garden" ;;
    heal) echo "Garden's monit file as shipped, nothing protected, cellguard watch heals" ;;
    seed001) echo "seed-001: runc 1.0.0-rc93 and the pipe soft limit" ;;
  esac
}

# run_scenario: one create-env ... delete-env, its steps in order; a step that fails
# to set up what the next ones need ends the scenario (its VM is deleted at the end).
run_scenario() {
  heading "${shape}: $(scenario_title "${sc}")"
  key=${shape}/${sc}
  sdir=${work}/${shape}-${sc}
  state=${sdir}/cpi
  mkdir -p "${state}"
  : >"${work}/summary/${shape}-${sc}.expect.jsonl"; : >"${work}/summary/${shape}-${sc}.facts.jsonl"
  box="" init="" R=""
  local s
  for s in $(scenario_steps "${sc}"); do
    "step_${s}" || { say "   (step ${s} could not complete: the scenario ends here)"; break; }
  done
  cpi_cleanup "${state}"
}

# run_shape SHAPE PORT: every scenario on one shape, one after the other (--serial).
run_shape() {
  shape=$1 port=$2 tag=$1
  for sc in "${want_scenarios[@]}"; do run_scenario; done
}
# run_one SHAPE SCENARIO PORT: one scenario, beside the others.
run_one() {
  shape=$1 sc=$2 port=$3 tag=$1/$2
  run_scenario
}

# A free 127.0.0.1 port for each shape's mbus forwarder.
free_port() {
  local p=$1
  while ss -Htln "sport = :${p}" | grep -q . || grep -qx "${p}" "${work}/ports" 2>/dev/null; do p=$((p + 1)); done
  echo "${p}" | tee -a "${work}/ports"
}

# Each runner in a process group of its own (job control), so cleanup can end it and
# everything it started at once. By default every scenario of every shape runs at once
# (each its own VM, state, port and box names): most of a scenario is waiting on the
# agent, monit and systemd, and the agent's compile dominates the rest; --serial runs
# a shape's scenarios one after another.
base=$((20000 + $$ % 20000))
set -m
for s in "${want_shapes[@]}"; do
  if [ "${serial}" = 1 ]; then
    p=$(free_port "${base}")
    run_shape "${s}" "${p}" &
    runners+=($!)
    continue
  fi
  for c in "${want_scenarios[@]}"; do
    p=$(free_port "${base}")
    run_one "${s}" "${c}" "${p}" &
    runners+=($!)
  done
done
set +m
for pg in "${runners[@]}"; do wait "${pg}"; done
runners=()

# ---- summary -------------------------------------------------------------------------------
heading "Summary ($(elapsed))"
summary=$(
  for s in "${want_shapes[@]}"; do
    for sc in "${want_scenarios[@]}"; do
      f=${work}/summary/${s}-${sc}
      jq -s --arg name "${s}/${sc}" --arg shape "${s}" --arg sc "${sc}" --slurpfile declared "${work}/expectations.json" \
        -f "${work}/summary.jq" "${f}.expect.jsonl" >"${f}.e.json"
      jq -s 'add // {}' "${f}.facts.jsonl" >"${f}.f.json"
      jq -s '.[0] + {facts: .[1]}' "${f}.e.json" "${f}.f.json"
    done
  done | jq -s --arg tarball "${tarball}" --arg version "${rel_version}" --argjson secs "$((SECONDS - T0))" \
    '{ok: (all(.[]; .ok) and length > 0), release_tarball: $tarball, cellguard_release_version: $version, duration_seconds: $secs, scenarios: .}'
)
jq -r '.scenarios[] | .name as $n | .expectations[] | "  \(if .ok then "ok    " else "FAILED" end) \($n)/\(.id): \(.detail)"' <<<"${summary}" | cut -c1-240 >&3
if [ "${json}" = 1 ]; then
  printf '%s\n' "${summary}"
fi
if [ -n "${json_out}" ]; then
  printf '%s\n' "${summary}" >"${json_out}" && say "summary: ${json_out}"
fi
if [ "$(jq -r .ok <<<"${summary}")" = true ]; then
  say "all expectations held"
  exit 0
fi
say "some expectations FAILED"
exit 1
}
