# common.bash - what the lab's CPIs (nspawn-cpi, qemu-cpi) share: the CPI protocol
# (API version 2: the request on stdin, {result, error, log} on stdout), their call
# log, the director's manual network and the agent's settings. Sourced, not run.
#
#   cpi_name=qemu-cpi; . common.bash; cpi_begin "$@"
#
# cpi_begin reads the request and sets: config, request, method, state (the config's
# state_dir, with stemcells/ and vms/ made), cpilog; T0 times the call.

cpi_begin() {
  config=${1:?usage: ${cpi_name} CONFIG < request.json}
  T0=$(date +%s%N)
  request=$(cat)
  method=$(jq -r '.method // empty' <<<"${request}" 2>/dev/null) || method=""
  state=$(jq -r '.state_dir' "${config}")
  mkdir -p "${state}/stemcells" "${state}/vms"
  cpilog=${state}/cpi.log
}

log() { printf '%s [%s] %s\n' "$(date -u +%H:%M:%S.%3N)" "${method}" "$*" >>"${cpilog}"; }

arg() { jq -c ".arguments[$1]" <<<"${request}"; }
args_summary() { jq -r '[.arguments[] | if type == "string" then . else (tojson | .[:60]) end] | join(" ")' <<<"${request}" | cut -c1-160; }
record() {  # record OUTCOME: one line per call in calls.log
  local ms=$(( ($(date +%s%N) - T0) / 1000000 ))
  printf '%s %s %s -> %s (%d.%03ds)\n' "$(date -u +%H:%M:%S)" "${method}" "$(args_summary)" "$1" $((ms / 1000)) $((ms % 1000)) >>"${state}/calls.log"
}
respond() {  # respond RESULT_JSON [LOG]
  record ok
  jq -cn --argjson r "$1" --arg log "${cpi_name} ${method}: ${2:-ok}" '{result: $r, error: null, log: $log}'
  exit 0
}
fail() {  # fail TYPE MESSAGE
  log "ERROR: $2"
  record "error: $2"
  jq -cn --arg t "$1" --arg m "${cpi_name} ${method}: $2" '{result: null, error: {type: $t, message: $m, ok_to_retry: false}, log: $m}'
  exit 0
}
cloud_error() { fail Bosh::Clouds::CloudError "$*"; }

vmdir() { echo "${state}/vms/$1"; }
valid_cid() { [[ $1 =~ ^(vm|sc)-[0-9a-f]{8}$ ]]; }
new_id() { od -An -N4 -tx1 /dev/urandom | tr -d ' \n'; }

# prefix_len NETMASK: 255.255.255.0 -> 24 (a contiguous mask, as BOSH's subnets have).
prefix_len() {
  local o n=0 b
  IFS=. read -ra o <<<"$1"
  [ "${#o[@]}" = 4 ] || return 1
  for b in "${o[@]}"; do
    case ${b} in 255) n=$((n + 8)) ;; 254) n=$((n + 7)) ;; 252) n=$((n + 6)) ;; 248) n=$((n + 5)) ;;
      240) n=$((n + 4)) ;; 224) n=$((n + 3)) ;; 192) n=$((n + 2)) ;; 128) n=$((n + 1)) ;; 0) ;; *) return 1 ;; esac
  done
  echo "${n}"
}

# read_network NETWORKS: the lab (config network.netns, an nsfs path, and
# network.bridge) and the one manual network the director gave, into lab bridge ip
# mask gw plen. On a refusal, net_error says why and it returns 1.
read_network() {
  local networks=$1
  lab=$(jq -r '.network.netns' "${config}") bridge=$(jq -r '.network.bridge' "${config}")
  [ -e "${lab}" ] || { net_error="the lab's network namespace ${lab} (network.netns) does not exist"; return 1; }
  [[ ${bridge} =~ ^[a-zA-Z0-9_.-]{1,15}$ ]] || { net_error="bad network.bridge '${bridge}'"; return 1; }
  # One manual network with a static IP: the director allocates it from the cloud
  # config's subnet (also for compilation VMs); dynamic networks need an IaaS's DHCP.
  [ "$(jq 'length' <<<"${networks}")" = 1 ] || { net_error="want exactly one network, got $(jq -c 'keys' <<<"${networks}")"; return 1; }
  read -r ip mask gw < <(jq -r 'to_entries[0].value | "\(.ip // "") \(.netmask // "") \(.gateway // "")"' <<<"${networks}")
  [[ ${ip} =~ ^[0-9.]+$ && ${gw} =~ ^[0-9.]+$ ]] || { net_error="the network has no static ip and gateway (type $(jq -r 'to_entries[0].value.type' <<<"${networks}")): want a manual network"; return 1; }
  plen=$(prefix_len "${mask}") || { net_error="bad netmask '${mask}'"; return 1; }
}

# agent_settings AGENT_ID CID NETWORKS ENV: the agent's settings (agent id, the
# config's mbus, blobstore and ntp, NETWORKS as given, the director's env with the
# mbus certificate, no disks).
agent_settings() {
  jq -n --arg agent_id "$1" --arg cid "$2" --argjson networks "$3" \
    --argjson env "$4" --slurpfile cfg "${config}" '{
      agent_id: $agent_id,
      mbus: $cfg[0].agent.mbus,
      blobstore: $cfg[0].agent.blobstore,
      ntp: $cfg[0].agent.ntp,
      networks: $networks,
      env: $env,
      disks: {system: "", ephemeral: "", persistent: {}},
      vm: {name: $cid}
    }'
}

# blobstore_path: the director's local blobstore, which the VMs share at the same
# path ("blobstore_bind": true); empty without blobstore_bind. Returns 1 when it is
# not an existing directory.
blobstore_path() {
  [ "$(jq -r '.blobstore_bind // false' "${config}")" = true ] || return 0
  local p
  p=$(jq -r '.agent.blobstore.options.blobstore_path' "${config}")
  [[ ${p} =~ ^/[a-zA-Z0-9/._-]+$ && -d ${p} ]] || return 1
  echo "${p}"
}
