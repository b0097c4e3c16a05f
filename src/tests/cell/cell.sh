#!/usr/bin/env bash
# cell.sh - a local BOSH-like cell on a real systemd, showing what cellguard is for
# (the README's `make cell`). Needs root, a Debian host with systemd-nspawn (make deps)
# and a release tarball (make release).
#
#   cell.sh [--json] [--json-out FILE] [--tarball PATH] [--scenarios without,with,seed001] [--keep]
#
# For each scenario a fresh systemd box (src/tests/harness/sdbox.sh) becomes a cell:
# /var/vcap laid out as the BOSH agent does, monit under runit.service configured as
# BOSH configures it, the cellguard package compiled from the tarball, the cellguard job
# rendered from the tarball with bosh-cli's renderer (manifest.yml here), and a Garden
# stand-in (assets/garden-standin) that makes real runc containers in garden/<id>.
# Then the agent's lifecycle: pre-start, monit start, the seed-000 event, drain.
#
#   without  Garden's monit file runs its ctl directly, under runit.service:
#            drain must exit non-zero and name every escaped pid and hierarchy.
#   with     Garden's monit file calls `cellguard start|stop garden`: drain prints 0,
#            the containers are where runc put them, runc kill --all + delete work.
#   seed001  a runc reporting 1.0.0-rc93: pre-start blocks while the pipe soft limit
#            is active, and the rc93 advisory turns into a warning once it is lifted.
#
# The story goes to stdout (to stderr with --json, which prints the summary on stdout);
# --json-out FILE also writes the summary to FILE (for make, whose stdout is shared).
# Exit 0 when every expectation held, 1 when one failed, 2 when the cell could not be
# built. Everything made is removed at exit, Ctrl-C included (--keep leaves the boxes).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${here}/../../.." && pwd)
T0=${SECONDS}

json=0 keep=0 json_out=""
tarball=${repo}/dev_releases/cellguard-dev.tgz
scenarios=without,with,seed001
prefix=${CELL_BOX_PREFIX:-cell}
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1 ;;
    --keep) keep=1 ;;
    --json-out) json_out=$2; shift ;;
    --json-out=*) json_out=${1#*=} ;;
    --tarball) tarball=$2; shift ;;
    --tarball=*) tarball=${1#*=} ;;
    --scenarios) scenarios=$2; shift ;;
    --scenarios=*) scenarios=${1#*=} ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "cell.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# The story: stdout, or stderr when stdout carries the JSON summary.
if [ "${json}" = 1 ]; then exec 3>&2; else exec 3>&1; fi
say() { printf '%s\n' "$*" >&3; }
indent() { awk '{ if (length($0) > 200) $0 = substr($0, 1, 197) "..."; print "      " $0 }' >&3; }  # long findings: see the logs
die() { say "cell: ERROR: $*"; exit 2; }

[ "$(id -u)" = 0 ] || die "must run as root (systemd-nspawn, cgroups, mounts)"
for c in jq ruby go systemd-nspawn unshare; do
  command -v "$c" >/dev/null || die "$c is missing: run make deps"
done
[ -f "${tarball}" ] || die "no release tarball at ${tarball}: run make release"
tarball=$(cd "$(dirname "${tarball}")" && pwd)/$(basename "${tarball}")

work=$(mktemp -d /var/tmp/cellguard-cell.XXXXXX)
# If this script is SIGKILLed, the next sdbox.sh start (gc) stops its boxes.
export SDBOX_OWNER_PID=$$
boxes=()
compile_pid=""
cleanup() {
  local rc=$? b
  # Only the main shell cleans up: a subshell that caught the signal just ends.
  [ "${BASHPID}" = "$$" ] || exit "${rc}"
  trap - EXIT INT TERM
  if [ -n "${compile_pid}" ]; then kill -TERM -- "-${compile_pid}" 2>/dev/null; wait "${compile_pid}" 2>/dev/null; fi
  if [ "${keep}" = 1 ] && [ ${#boxes[@]} -gt 0 ]; then
    say "--keep: boxes left running: ${boxes[*]} (stop: SDBOX_NAME=NAME ${sdbox} stop)"
  else
    for b in "${boxes[@]}"; do SDBOX_NAME=${b} bash "${sdbox}" stop >/dev/null 2>&1 || say "cell: could not stop box ${b}"; done
  fi
  rm -rf "${work}"
  exit "${rc}"
}
trap cleanup EXIT
trap '[ "${BASHPID}" = "$$" ] && { say ""; say "cell: interrupted, cleaning up"; }; exit 130' INT TERM

# A private copy of the harness: bash reads a script as it runs, so an edit to the
# shared file during a run must not change what this run executes.
sdbox=${work}/sdbox.sh
cp "${repo}/src/tests/harness/sdbox.sh" "${sdbox}"

# ---- expectations and the summary ------------------------------------------------------
mkdir -p "${work}/summary"
failed=0
# expect SCENARIO ID OK(true|false) DETAIL
expect() {
  local mark=ok
  [ "$3" = true ] || { mark=FAILED; failed=1; }
  say "   => expectation ${2}: ${mark} - ${4}"
  jq -nc --arg id "$2" --argjson ok "$3" --arg detail "$4" '{id: $id, ok: $ok, detail: $detail}' \
    >>"${work}/summary/$1.expect.jsonl"
}
# fact SCENARIO KEY JSON
fact() { jq -nc --arg k "$2" --argjson v "$3" '{($k): $v}' >>"${work}/summary/$1.facts.jsonl"; }
js() { jq -Rn --arg s "$1" '$s'; }   # a shell string as a JSON string

elapsed() { echo "$((SECONDS - T0))s"; }
heading() { say ""; say "━━━ $* ━━━"; }
step() { say ""; say "-- [$(elapsed)] $*"; }

# ---- the release: compile from the tarball, render with bosh-cli's renderer ------------
heading "The release: ${tarball#"${repo}"/}"
mkdir -p "${work}/release"
tar -xzf "${tarball}" -C "${work}/release" || die "unpack ${tarball}"
rel_version=$(ruby -ryaml -e 'puts YAML.load_file(ARGV[0])["version"]' "${work}/release/release.MF")
job_version=$(ruby -ryaml -e 'puts YAML.load_file(ARGV[0])["jobs"].find { |j| j["name"] == "cellguard" }["version"]' "${work}/release/release.MF")
say "release cellguard/${rel_version}; job cellguard/${job_version:0:12}…"

step "compile the packages from the tarball, as a compile VM does (cache: /var/tmp/cellguard-cell/compiled)"
# Minutes when the package changed: run it in its own process group and wait for it,
# so Ctrl-C or SIGTERM reaches the trap at once, which ends that group.
setsid bash "${here}/compile-packages.sh" "${tarball}" /var/tmp/cellguard-cell/compiled \
  >"${work}/compiled.txt" 2>"${work}/compile.log" &
compile_pid=$!
wait "${compile_pid}" || { cat "${work}/compile.log" >&3; die "compiling the release's packages failed"; }
compile_pid=""
compiled=$(cat "${work}/compiled.txt")
sed 's/^compile-packages: /   /' "${work}/compile.log" >&3
cg_version=$(awk '$1 == "cellguard" {print $2}' <<<"${compiled}")
cg_dir=$(awk '$1 == "cellguard" {print $3}' <<<"${compiled}")
[ -x "${cg_dir}/bin/cellguard" ] || die "compiled package cellguard has no bin/cellguard"
say "   cellguard version: $("${cg_dir}/bin/cellguard" version)"

step "build the renderer (spec/cmd/render-job: bosh-cli's own ERB renderer)"
(cd "${repo}/spec" && go build -mod=mod -o "${work}/render-job" ./cmd/render-job) >"${work}/render-build.log" 2>&1 ||
  { cat "${work}/render-build.log" >&3; die "building spec/cmd/render-job failed"; }
mkdir -p "${work}/jobs/cellguard"
tar -xzf "${work}/release/jobs/cellguard.tgz" -C "${work}/jobs/cellguard"
cp "${work}/jobs/cellguard/job.MF" "${work}/jobs/cellguard/spec"   # the job tarball's spec is job.MF
say "   job cellguard from the tarball: $(cd "${work}/jobs/cellguard" && find templates -type f | sort | tr '\n' ' ')"

# render INSTANCE_GROUP OUTDIR: the cellguard job's properties from manifest.yml.
render() {
  ruby -ryaml -e '
    m = YAML.load_file(ARGV[0], aliases: true)
    ig = m["instance_groups"].find { |g| g["name"] == ARGV[1] } or abort "no instance group #{ARGV[1]}"
    job = ig["jobs"].find { |j| j["name"] == "cellguard" } or abort "no cellguard job in #{ARGV[1]}"
    print YAML.dump(job["properties"] || {})' "${here}/manifest.yml" "$1" >"${work}/props-$1.yml" || return 1
  "${work}/render-job" -job "${work}/jobs/cellguard" -properties "${work}/props-$1.yml" -o "$2" >/dev/null
}

# ---- a box becomes a cell ----------------------------------------------------------------
box=""; R=""
bx() { SDBOX_NAME=${box} bash "${sdbox}" exec "$@"; }          # run in the current box
monit_() { bx monit -c /var/vcap/bosh/etc/monitrc "$@"; }
RUNC_ROOT=/run/garden-runc

boot() {  # boot NAME: a fresh box (a stale one of the same name is cleaned up first)
  box=${prefix}-$1
  SDBOX_NAME=${box} bash "${sdbox}" stop >/dev/null 2>&1 || true
  boxes+=("${box}")
  # nspawn's seccomp filter denies the keyring syscalls; runc gives every container a
  # session keyring, as on a real cell, so the box allows them.
  SDBOX_NAME=${box} SDBOX_NSPAWN_ARGS="--system-call-filter=@keyring" bash "${sdbox}" start \
    >"${work}/${box}.env" 2>"${work}/${box}.boot.log" || { cat "${work}/${box}.boot.log" >&3; die "booting box ${box} failed"; }
  R=$(sed -n 's/^SDBOX_ROOT=//p' "${work}/${box}.env")
  say "   box ${box}: $(bx systemctl --version | head -n1) is PID 1 ($(sed -n 's/^SDBOX_CGROUP_MODE=//p' "${work}/${box}.env") cgroups), $(sed -n 's/.*\(booted: .*\)/\1/p' "${work}/${box}.boot.log")"
}

# put SRC DST MODE: copy a host file into the box.
put() { install -D -m "$3" "$1" "${R}$2"; }

# lay_out INSTANCE_GROUP GARDEN_MONIT_FILE: the agent's layout, packages, jobs, monit.
lay_out() {
  local ig=$1 garden_monit=$2 jobdir
  bx mkdir -p /var/vcap/jobs /var/vcap/packages /var/vcap/sys/log /var/vcap/sys/run /var/vcap/data/packages \
    /var/vcap/data/jobs /var/vcap/monit/job /var/vcap/bosh/etc /var/vcap/bosh/bin \
    /var/vcap/sys/log/cellguard /var/vcap/sys/log/garden /var/vcap/sys/run/cellguard /var/vcap/sys/run/garden
  # (Host-side copies below write to the real directories, never through the box's
  # absolute symlinks: through /proc/PID/root those would resolve on the host.)
  # Packages: /var/vcap/data/packages/NAME/VERSION, linked from /var/vcap/packages/NAME.
  mkdir -p "${R}/var/vcap/data/packages/cellguard/${cg_version}"
  cp -a "${cg_dir}/." "${R}/var/vcap/data/packages/cellguard/${cg_version}/"
  rm -f "${R}/var/vcap/data/packages/cellguard/${cg_version}/.compiled"
  ln -sfn "/var/vcap/data/packages/cellguard/${cg_version}" "${R}/var/vcap/packages/cellguard"
  put "${here}/assets/garden-standin" /var/vcap/data/packages/garden-standin/0/bin/garden-standin 0755
  put "${here}/assets/container-config.json" /var/vcap/data/packages/garden-standin/0/container-config.json 0644
  ln -sfn /var/vcap/data/packages/garden-standin/0 "${R}/var/vcap/packages/garden-standin"
  # Jobs: rendered into /var/vcap/data/jobs/NAME/VERSION, linked from /var/vcap/jobs/NAME.
  jobdir=/var/vcap/data/jobs/cellguard/${job_version}
  render "${ig}" "${R}${jobdir}" || die "rendering the cellguard job for ${ig} failed"
  ln -sfn "${jobdir}" "${R}/var/vcap/jobs/cellguard"
  put "${here}/assets/garden_ctl" /var/vcap/data/jobs/garden/0/bin/garden_ctl 0755
  put "${here}/assets/${garden_monit}" /var/vcap/data/jobs/garden/0/monit 0644
  ln -sfn /var/vcap/data/jobs/garden/0 "${R}/var/vcap/jobs/garden"
  # monit as the agent configures it: httpd on 127.0.0.1:2822 with a cleartext user
  # file, control file 0700 (monit refuses a looser one), under runit.service.
  put "${here}/assets/monitrc" /var/vcap/bosh/etc/monitrc 0700
  printf 'vcap:%s\n' "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"${R}/var/vcap/monit/monit.user"
  chmod 0600 "${R}/var/vcap/monit/monit.user"
  put "${here}/assets/runit.service" /etc/systemd/system/runit.service 0644
  bx systemctl daemon-reload
  bx systemctl start runit.service
  local i
  for i in $(seq 1 100); do monit_ summary >/dev/null 2>&1 && break; sleep 0.2; done
  monit_ summary >/dev/null 2>&1 || die "monit's httpd did not answer on 127.0.0.1:2822"
  say "   /var/vcap: jobs/{cellguard,garden} packages/{cellguard,garden-standin} sys/{log,run} data monit/job bosh/etc"
  say "   job cellguard rendered from manifest.yml instance group ${ig}: $(cd "${R}${jobdir}" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')"
  say "   monit $(bx monit -V | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -n1) runs in runit.service (pid $(bx systemctl show -p MainPID --value runit.service)), httpd 127.0.0.1:2822"
}

# add_monit_jobs: each job's monit file becomes /var/vcap/monit/job/NNNN_NAME.monitrc and
# monit reloads. The BOSH agent writes them before pre-start and keeps the jobs "not
# monitored" until its start; Debian's monit 5.33 would start a new job at once, so here
# they are added after pre-start, just before the agent's start. cellguard's pre-start
# reads no monit file, so it sees the same VM.
add_monit_jobs() {
  local i
  cp "${R}/var/vcap/data/jobs/cellguard/${job_version}/monit" "${R}/var/vcap/monit/job/0000_cellguard.monitrc"
  cp "${R}/var/vcap/data/jobs/garden/0/monit" "${R}/var/vcap/monit/job/0001_garden.monitrc"
  monit_ reload >/dev/null 2>&1
  for i in $(seq 1 100); do [ -n "$(garden_status)" ] && break; sleep 0.2; done
  say "   /var/vcap/monit/job: $(cd "${R}/var/vcap/monit/job" && ls | tr '\n' ' ')(monit reload)"
}

# view VALUE CMD...: run CMD in the box; with VALUE, in a private mount namespace where a
# file holding VALUE is bind-mounted over /proc/sys/fs/pipe-user-pages-soft (see seed001).
view() {
  local v=$1; shift
  if [ -z "${v}" ]; then bx "$@"; return; fi
  echo "${v}" >"${R}/run/cell-pipe-soft-${v}"
  bx unshare -m --propagation private sh -c 'mount --bind "$0" /proc/sys/fs/pipe-user-pages-soft && exec "$@"' \
    "/run/cell-pipe-soft-${v}" "$@"
}

# pre_start [VALUE]: the agent runs bin/pre-start, its output going to the job's logs.
pre_start_rc=0
pre_start() {
  view "${1:-}" bash -c '/var/vcap/jobs/cellguard/bin/pre-start >/var/vcap/sys/log/cellguard/pre-start.stdout.log 2>/var/vcap/sys/log/cellguard/pre-start.stderr.log' \
    2>/dev/null
  pre_start_rc=$?
  say "   bin/pre-start exited ${pre_start_rc}; its stdout (/var/vcap/sys/log/cellguard/pre-start.stdout.log):"
  grep -v '^ *$' "${R}/var/vcap/sys/log/cellguard/pre-start.stdout.log" | indent
}

garden_status() { monit_ -B summary 2>/dev/null | sed -n "s/^ *garden  *\(.*[^ ]\)  *Process *$/\1/p"; }

monit_start_garden() {
  local i st
  monit_ start all >/dev/null 2>&1
  for i in $(seq 1 300); do
    st=$(garden_status)
    [ -e "${R}/var/vcap/sys/run/garden/ready" ] && [ "${st}" = OK ] && break
    sleep 0.2
  done
  say "   monit start all: garden is '${st}'"
  [ -e "${R}/var/vcap/sys/run/garden/ready" ]
}

# container_facts SCENARIO TAG: for every container, its pids (runc ps) and for every pid
# each hierarchy's actual cgroup next to the one runc's state.json records.
# Writes ${work}/TAG.tsv: container pid hierarchy actual expected
container_facts() {
  local tag=$2 id pid line h path key expected
  : >"${work}/${tag}.tsv"
  for id in $(bx runc --root "${RUNC_ROOT}" list -q); do
    local state="${R}${RUNC_ROOT}/${id}/state.json"
    for pid in $(bx runc --root "${RUNC_ROOT}" ps --format json "${id}" | jq -r '.[]'); do
      while IFS= read -r line; do
        h=${line#*:}; path=${h#*:}; h=${h%%:*}
        key=${h%%,*}                       # "cpu,cpuacct" -> cpu; "" is the v2 hierarchy
        expected=$(jq -r --arg k "${key}" '.cgroup_paths[$k] // empty' "${state}" | sed 's|^/sys/fs/cgroup/[^/]*||')
        [ -n "${expected}" ] || continue   # a hierarchy runc does not manage
        [ -n "${h}" ] || h=unified
        printf '%s\t%s\t%s\t%s\t%s\n' "${id}" "${pid}" "${h}" "${path}" "${expected:-/}"
      done < <(bx cat "/proc/${pid}/cgroup")
    done
  done >"${work}/${tag}.tsv"
}

print_placement() {  # print_placement TAG: one line per pid
  awk -F'\t' '{k=$1" pid "$2; if (!(k in seen)) {order[++n]=k; seen[k]=1}
               if ($4 == $5) ok[k]++; else bad[k]=bad[k] " " $3 ":" $4 " (state: " $5 ")"; tot[k]++}
    END {for (i=1;i<=n;i++) {k=order[i]; if (bad[k]=="") print "   " k ": in its recorded cgroup in all " tot[k] " hierarchies";
         else print "   " k ": OUTSIDE its recorded cgroup in" bad[k]}}' "${work}/$1.tsv" >&3
}

trigger_seed000() {
  put "${here}/assets/seed000-trigger.service" /etc/systemd/system/seed000-trigger.service 0644
  bx systemctl daemon-reload
  bx systemctl start seed000-trigger.service
  say "   systemctl start seed000-trigger.service (CPUAccounting=yes CPUWeight=50 IOWeight=50): $(bx systemctl is-active seed000-trigger.service)"
}

# drain SCENARIO: the agent runs bin/drain job_changed HASH_CHANGE PACKAGES before an update
# (bosh-agent v2.759.0 NewUpdateParams); stdout is the integer, none when drain blocks.
drain_rc=0 drain_out="" drain_report=""
drain() {
  local log=${R}/var/vcap/sys/log/cellguard/drain.log before=0
  [ -f "${log}" ] && before=$(stat -c %s "${log}")
  drain_out=$(bx env BOSH_JOB_STATE='{}' BOSH_JOB_NEXT_STATE='{}' /var/vcap/jobs/cellguard/bin/drain job_changed hash_unchanged cellguard 2>/dev/null)
  drain_rc=$?
  drain_report=$(tail -c +"$((before + 1))" "${log}" | grep -v '^{"timestamp"')  # the report, without lager lines
  say "   bin/drain exited ${drain_rc}, stdout '${drain_out}'; the report it logged (/var/vcap/sys/log/cellguard/drain.log):"
  grep -v '^ *$' <<<"${drain_report}" | indent
}

garden_unit() {  # the name=systemd cgroup of the Garden stand-in's pid
  local pid
  pid=$(cat "${R}/var/vcap/sys/run/garden/garden.pid" 2>/dev/null) || return 1
  bx cat "/proc/${pid}/cgroup" | awk -F: '$2 == "name=systemd" {print $3}'
}

# ---- scenario A and B --------------------------------------------------------------------
seed000() {  # seed000 without|with
  local sc=$1 ig garden_monit title
  if [ "${sc}" = without ]; then
    ig=cell-without-cellguard garden_monit=garden-direct.monit
    title="A: Garden under monit WITHOUT cellguard's delegated unit"
  else
    ig=cell-with-cellguard garden_monit=garden-cellguard.monit
    title="B: Garden under monit WITH cellguard (monit calls cellguard start|stop garden)"
  fi
  heading "${title}"
  : >"${work}/summary/${sc}.expect.jsonl"; : >"${work}/summary/${sc}.facts.jsonl"

  step "boot a fresh box: a real systemd as PID 1"
  boot "${sc}"
  fact "${sc}" box "$(js "${box}")"

  step "build the cell (the agent's layout, monit, packages, rendered jobs)"
  lay_out "${ig}" "${garden_monit}"
  say "   Garden stand-in's monit file (assets/${garden_monit}):"
  grep -E 'start program|stop program' "${R}/var/vcap/data/jobs/garden/0/monit" | indent

  step "pre-start (cellguard job)"
  pre_start
  fact "${sc}" pre_start_exit "${pre_start_rc}"
  expect "${sc}" pre-start-passes "$([ "${pre_start_rc}" = 0 ] && echo true || echo false)" \
    "bin/pre-start exited ${pre_start_rc} on a fresh cell with no container yet"
  if [ "${sc}" = with ]; then
    local unitfile=${R}/etc/systemd/system/cellguard-garden.service dropin
    dropin=$(ls "${R}"/etc/systemd/system/runit.service.d/*.conf 2>/dev/null | head -n1)
    say "   pre-start installed cellguard-garden.service: $(grep -E '^(Delegate|KillMode|TasksMax)=' "${unitfile}" 2>/dev/null | tr '\n' ' ')"
    say "   and delegated runit.service in place: ${dropin#"${R}"} $(grep -h '^Delegate=' "${dropin}" 2>/dev/null)"
    expect "${sc}" delegated-unit-installed "$(grep -q '^Delegate=.*blkio' "${unitfile}" 2>/dev/null && [ -n "${dropin}" ] && echo true || echo false)" \
      "cellguard-garden.service has Delegate= with blkio; runit.service has a delegation drop-in"
  fi

  step "monit start all (the agent starts the jobs)"
  add_monit_jobs
  if ! monit_start_garden; then
    say "   the Garden stand-in did not become ready; its log:"
    tail -n 20 "${R}/var/vcap/sys/log/garden/garden.stderr.log" "${R}/var/vcap/sys/log/garden/garden.stdout.log" 2>/dev/null | indent
    expect "${sc}" garden-ready false "the Garden stand-in created its containers"
    return
  fi
  grep 'garden-standin' "${R}/var/vcap/sys/log/garden/garden.stdout.log" | sed 's/^[^ ]* //' | indent
  local unitcg; unitcg=$(garden_unit)
  fact "${sc}" garden_cgroup "$(js "${unitcg}")"
  say "   runc --root ${RUNC_ROOT} list:"
  bx runc --root "${RUNC_ROOT}" list | indent
  if [ "${sc}" = without ]; then
    expect "${sc}" garden-under-runit "$([[ ${unitcg} == /system.slice/runit.service* ]] && echo true || echo false)" \
      "the Garden stand-in runs in ${unitcg} (monit's unit, not delegated)"
  else
    expect "${sc}" garden-in-delegated-unit "$([ "${unitcg}" = /system.slice/cellguard-garden.service ] && echo true || echo false)" \
      "the Garden stand-in runs in ${unitcg} (cellguard's delegated unit)"
  fi
  container_facts "${sc}" before
  say "   where runc put the container processes (each pid, every hierarchy vs state.json):"
  print_placement before
  local nbefore; nbefore=$(awk -F'\t' '$4 != $5' "${work}/before.tsv" | wc -l)
  fact "${sc}" container_pids "$(cut -f2 "${work}/before.tsv" | sort -un | jq -Rs 'split("\n") | map(select(. != "") | tonumber)')"
  expect "${sc}" containers-placed "$([ -s "${work}/before.tsv" ] && [ "${nbefore}" = 0 ] && echo true || echo false)" \
    "$(cut -f1 "${work}/before.tsv" | sort -u | wc -l) containers, $(cut -f2 "${work}/before.tsv" | sort -u | wc -l) processes, all in garden/<id> as state.json records"

  step "the seed-000 event: a brand-new unit with CPU and IO accounting starts"
  trigger_seed000
  container_facts "${sc}" after
  print_placement after
  local escaped; escaped=$(awk -F'\t' '$4 != $5' "${work}/after.tsv")
  fact "${sc}" escaped "$(awk -F'\t' '$4 != $5 {printf "%s\t%s\t%s\t%s\t%s\n", $1, $2, $3, $4, $5}' "${work}/after.tsv" |
    jq -Rs 'split("\n") | map(select(. != "") | split("\t") | {container: .[0], pid: (.[1] | tonumber), hierarchy: .[2], actual: .[3], recorded: .[4]})')"

  step "drain (cellguard job), as the agent runs it before stopping or updating the VM"
  drain "${sc}"
  fact "${sc}" drain_exit "${drain_rc}"
  fact "${sc}" drain_stdout "$(js "${drain_out}")"

  if [ "${sc}" = without ]; then
    local n; n=$(grep -c . <<<"${escaped}")
    expect "${sc}" seed000-reproduced "$([ -n "${escaped}" ] && echo true || echo false)" \
      "systemd moved container processes: ${n} (pid, hierarchy) pairs outside their recorded cgroups ($(cut -f3 <<<"${escaped}" | sort -u | tr '\n' ' '| sed 's/ $//'))"
    expect "${sc}" drain-blocks "$([ "${drain_rc}" != 0 ] && echo true || echo false)" \
      "drain exited ${drain_rc} (non-zero fails the deploy before the VM is touched)"
    local missing="" pid h
    while IFS=$'\t' read -r _ pid h _ _; do
      [ -n "${pid}" ] || continue
      grep -E "pid ${pid} \(" <<<"${drain_report}" | grep -qw -- "${h}" || missing+=" pid ${pid}/${h}"
    done <<<"${escaped}"
    expect "${sc}" drain-names-every-escape "$([ -n "${escaped}" ] && [ -z "${missing}" ] && echo true || echo false)" \
      "the drain report names each of the ${n} escaped (pid, hierarchy) pairs${missing:+; missing:${missing}}"
    step "what runc can still do here (observed, not an expectation)"
    runc_kill_delete "${sc}" observe
    say "   (only $(cut -f3 <<<"${escaped}" | sort -u | tr '\n' ' ')moved. runc 1.1 lists and freezes a container's processes through"
    say "   its recorded devices and freezer cgroups, which stayed, so kill --all still reached them; where those"
    say "   move too, kill --all finds nothing. drain blocking is what stops the rollout before Garden gets there.)"
  else
    expect "${sc}" nothing-moved "$([ -z "${escaped}" ] && echo true || echo false)" \
      "after the trigger every container process is still in the cgroups state.json records"
    expect "${sc}" drain-prints-0 "$([ "${drain_rc}" = 0 ] && [ "${drain_out}" = 0 ] && echo true || echo false)" \
      "drain exited ${drain_rc} and printed '${drain_out}' (BOSH: 0 = proceed now)"
    step "runc kill --all + runc delete: the containers are still killable"
    runc_kill_delete "${sc}" expect
  fi
}

# runc_kill_delete SCENARIO expect|observe: kill every container with --all, wait for
# its recorded pids to go, delete it.
runc_kill_delete() {
  local sc=$1 mode=$2 id pids pid alive ok=true out rc
  for id in $(cut -f1 "${work}/before.tsv" | sort -u); do
    pids=$(awk -F'\t' -v c="${id}" '$1 == c {print $2}' "${work}/before.tsv" | sort -un | tr '\n' ' ')
    out=$(bx runc --root "${RUNC_ROOT}" kill --all "${id}" KILL 2>&1); rc=$?
    for _ in $(seq 1 50); do
      alive=""
      for pid in ${pids}; do [ -d "${R}/proc/${pid}" ] && alive+=" ${pid}"; done
      [ -z "${alive}" ] && break
      sleep 0.1
    done
    say "   runc kill --all ${id} KILL: exit ${rc}${out:+ (${out})}; of pids ${pids% }: ${alive:+still alive:${alive}}${alive:-all gone}"
    [ "${rc}" = 0 ] && [ -z "${alive}" ] || ok=false
    out=$(bx runc --root "${RUNC_ROOT}" delete "${id}" 2>&1); rc=$?
    say "   runc delete ${id}: exit ${rc}${out:+ (${out})}"
    [ "${rc}" = 0 ] || ok=false
    fact "${sc}" "runc_${id}" "$(jq -nc --argjson rc "${rc}" --arg alive "${alive# }" '{delete_exit: $rc, alive_after_kill: ($alive | split(" ") | map(select(. != "") | tonumber))}')"
  done
  if [ "${mode}" = expect ]; then
    expect "${sc}" runc-kill-delete "${ok}" "runc kill --all + delete succeeded for every container and every process is gone"
  fi
}

# ---- seed-001 ----------------------------------------------------------------------------
seed001() {
  local sc=seed001 host_soft
  heading "seed-001: runc 1.0.0-rc93 and the pipe soft limit"
  : >"${work}/summary/${sc}.expect.jsonl"; : >"${work}/summary/${sc}.facts.jsonl"
  step "boot a fresh box and build the cell (instance group cell-seed-001)"
  boot "${sc}"
  fact "${sc}" box "$(js "${box}")"
  lay_out cell-seed-001 garden-direct.monit
  put "${here}/assets/runc-rc93" /var/vcap/data/packages/runc/0/bin/runc 0755
  ln -sfn /var/vcap/data/packages/runc/0 "${R}/var/vcap/packages/runc"
  # The release's runc is the one the cell runs; a stemcell has no OS runc. Remove
  # Debian's from this box's throwaway overlay so only the rc93 one is judged.
  bx rm -f /usr/sbin/runc
  say "   /var/vcap/packages/runc/bin/runc --version: $(bx /var/vcap/packages/runc/bin/runc --version | head -n1) (assets/runc-rc93, a stand-in)"

  # Inside nspawn /proc/sys/fs is read-only, so neither cellguard's sysctl apply nor
  # this script can change fs.pipe-user-pages-soft there (and the host's value is left
  # alone). The box shows the host's live value; for the other case a file is
  # bind-mounted over /proc/sys/fs/pipe-user-pages-soft in a private mount namespace
  # that only that pre-start runs in: the real validator, reading the real path.
  host_soft=$(cat /proc/sys/fs/pipe-user-pages-soft)
  fact "${sc}" host_pipe_user_pages_soft "${host_soft}"
  for case in active lifted; do
    local how value mask=""
    if [ "${case}" = active ]; then
      value=${host_soft}; how="the host's live value, read through the box's /proc (nothing masked)"
      if [ "${host_soft}" = 0 ]; then
        value=16384 mask=16384; how="the host has 0, so 16384 (the kernel default) is bind-mounted over /proc/sys/fs/pipe-user-pages-soft for this pre-start only"
      fi
    else
      value=0 mask=0; how="0 bind-mounted over /proc/sys/fs/pipe-user-pages-soft in a private mount namespace for this pre-start only (the host keeps ${host_soft})"
      if [ "${host_soft}" = 0 ]; then mask=""; how="the host's live value (nothing masked)"; fi
    fi
    step "pre-start with the pipe soft limit ${case}: fs.pipe-user-pages-soft = ${value}"
    say "   where the validator reads that value: ${how}"
    fact "${sc}" "pipe_soft_source_${case}" "$(js "${how}")"
    pre_start "${mask}"
    view "${mask}" /var/vcap/packages/cellguard/bin/cellguard validate --phase pre-start --format json \
      --config /var/vcap/jobs/cellguard/config/cellguard.json --log-file /dev/null >"${work}/${case}.json" 2>/dev/null
    fact "${sc}" "pre_start_exit_${case}" "${pre_start_rc}"
    local rc93
    rc93=$(jq -c '[.. | objects | select(.data? and .data.advisory? == "runc-rc93-init-hang")] | first // empty' "${work}/${case}.json" 2>/dev/null)
    fact "${sc}" "rc93_finding_${case}" "${rc93:-null}"
    local st sev holds ev refs none='{}'
    st=$(jq -r '.status // ""' <<<"${rc93:-$none}"); sev=$(jq -r '.data.severity // ""' <<<"${rc93:-$none}")
    holds=$(jq -r '.data.condition_holds // ""' <<<"${rc93:-$none}"); ev=$(jq -r '.data.condition_evidence // ""' <<<"${rc93:-$none}")
    refs=$(jq -r '.data.references // ""' <<<"${rc93:-$none}")
    say "   cellguard's verdict on runc-rc93-init-hang: status ${st:-none}, severity ${sev:-none}, condition pipe_soft_limit_active=${holds:-?} (${ev:-no evidence})"
    say "   references: ${refs:-none}"
    local others
    others=$(jq -r '[.. | objects | select(.data? and .data.advisory? and .data.advisory != "runc-rc93-init-hang" and .status? == "fail") | .data.advisory] | unique | join(", ")' "${work}/${case}.json" 2>/dev/null)
    if [ "${case}" = active ]; then
      expect "${sc}" rc93-blocks-pre-start "$([ "${pre_start_rc}" != 0 ] && [ "${st}" = fail ] && [ "${sev}" = blocking ] &&
        grep -q 'runc-rc93-init-hang' "${R}/var/vcap/sys/log/cellguard/pre-start.stdout.log" &&
        grep -q 'pull/2871' <<<"${refs}" && echo true || echo false)" \
        "pre-start exited ${pre_start_rc}; its report cites runc-rc93-init-hang (blocking, ${ev}; references runc PR #2871)"
    else
      expect "${sc}" rc93-warns-when-limit-lifted "$([ "${st}" = warn ] && [ "${sev}" = warning ] && [ "${holds}" = false ] && echo true || echo false)" \
        "runc-rc93-init-hang is a ${sev:-missing} (${ev}) once the limit is lifted"
      if [ -n "${others}" ]; then
        say "   pre-start still exits ${pre_start_rc}: rc93 also predates the fixes for ${others}, which block on their own"
      fi
      fact "${sc}" still_blocking_lifted "$(jq -Rn --arg s "${others}" '$s | split(", ") | map(select(. != ""))')"
    fi
  done
}

# ---- run ---------------------------------------------------------------------------------
heading "cellguard local cell ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
say "host: $(uname -r), $(stat -fc %T /sys/fs/cgroup | sed 's/tmpfs/cgroup v1 hybrid (tmpfs + v1 controllers)/; s/cgroup2fs/cgroup v2/'), fs.pipe-user-pages-soft=$(cat /proc/sys/fs/pipe-user-pages-soft)"
IFS=, read -r -a want <<<"${scenarios}"
for sc in "${want[@]}"; do
  case ${sc} in
    without|with) seed000 "${sc}" ;;
    seed001) seed001 ;;
    *) die "unknown scenario ${sc}: want without, with, seed001" ;;
  esac
  if [ "${keep}" != 1 ]; then
    SDBOX_NAME=${box} bash "${sdbox}" stop >/dev/null 2>&1 || say "cell: could not stop box ${box}"
  fi
done

# ---- summary ----------------------------------------------------------------------------
heading "Summary ($(elapsed))"
summary=$(
  for sc in "${want[@]}"; do
    jq -s --arg name "${sc}" '{name: $name, ok: (all(.[]; .ok)), expectations: .}' "${work}/summary/${sc}.expect.jsonl" >"${work}/summary/${sc}.e.json"
    jq -s 'add // {}' "${work}/summary/${sc}.facts.jsonl" >"${work}/summary/${sc}.f.json"
    jq -s '.[0] + {facts: .[1]}' "${work}/summary/${sc}.e.json" "${work}/summary/${sc}.f.json"
  done | jq -s --arg tarball "${tarball}" --arg version "${cg_version}" --argjson secs "$((SECONDS - T0))" \
    '{ok: (all(.[]; .ok) and length > 0), release_tarball: $tarball, cellguard_version: $version, duration_seconds: $secs, scenarios: .}'
)
jq -r '.scenarios[] | .name as $n | .expectations[] | "  \(if .ok then "ok    " else "FAILED" end) \($n)/\(.id): \(.detail)"' <<<"${summary}" >&3
if [ "${json}" = 1 ]; then
  printf '%s\n' "${summary}"
fi
if [ -n "${json_out}" ]; then
  printf '%s\n' "${summary}" >"${json_out}" && say "summary: ${json_out}"
fi
if [ "$(jq -r .ok <<<"${summary}")" = true ] && [ "${failed}" = 0 ]; then
  say "all expectations held"
  exit 0
fi
say "some expectations FAILED"
exit 1
