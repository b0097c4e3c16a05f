#!/usr/bin/env bash
# director.sh up STATE [--cpi PATH] | lab STATE | down STATE | status STATE | ruby STATE ARGS...
#
# A real BOSH director (cloudfoundry/bosh v283.0.0) for tests, in a network
# namespace of its own ("lab") with the bridge cgbr0 at 10.244.0.1/24: PostgreSQL
# 15 (its own cluster in STATE, unix socket only), nats-server with TLS, the
# director (puma, plain http on the lab's loopback), two workers, the local
# blobstore, local users (admin), and director-front (this directory's Go
# command): the API over TLS on 10.244.0.1:25555. Nothing listens in the host's
# network namespace and nothing is routed off the machine. Test tooling; never
# shipped. README.md says which versions differ from the director's Gemfile.lock.
#
# up is idempotent (what runs stays, what is missing starts); a failure or Ctrl-C
# during up runs down. down ends every process by its pid file (after checking
# that the pid still lives in the lab), deletes the lab namespace with its
# bridge, and is safe to run twice. STATE keeps the data (database, blobstore,
# certificates, the admin secret) across down and up; remove it to start afresh.
# For other scripts: STATE/env.json (the lab, the director, NATS, the blobstore,
# the CPI) and STATE/bosh.env (BOSH_ENVIRONMENT, BOSH_CA_CERT, BOSH_CLIENT,
# BOSH_CLIENT_SECRET). Run bosh-cli in the lab: nsenter --net=NETNS bosh ...
# lab makes only the lab (the namespace and its bridge, as up does) and prints the
# namespace's path: the CPI's tests put their VMs on the director's own network.
#
# Inputs: ../shared/sources (the director's source and nine gems, checked
# against SHA256SUMS; CELLGUARD_SOURCES overrides), Debian's ruby-* and
# postgresql-15 (ci/scripts/install-deps.sh), the Go module proxy (nats-server,
# verify-multidigest). Builds are cached by content under
# /var/tmp/cellguard-director (CELLGUARD_DIRECTOR_CACHE).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../../.." && pwd)"
sources="${CELLGUARD_SOURCES:-${repo}/../shared/sources}"
cache="${CELLGUARD_DIRECTOR_CACHE:-/var/tmp/cellguard-director}"

BRIDGE=cgbr0
GATEWAY=10.244.0.1
# The bridge's own MAC, set once: a bridge whose address was never set takes the
# lowest of its ports' (each VM's veth peer), so the gateway's MAC changed whenever
# the CPI added or deleted a VM whose veth was lowest, and every other VM's ARP entry
# for the gateway (NATS, the blobstore, the director) pointed at a MAC no longer
# there until it aged out. Locally administered (02:), the gateway's address after it.
BRIDGE_MAC=02:00:0a:f4:00:01
CIDR=10.244.0.0/24
API_PORT=25555      # director-front, TLS, on the lab address
DIRECTOR_PORT=25556 # puma, plain http, on the lab's loopback (bin/bosh-director binds 127.0.0.1)
NATS_PORT=4222
NATS_VERSION=v2.15.2
BOSH_VERSION=283.0.0
BOSH_COMMIT=e4b7ae38ea7e
# Each worker runs one task at a time; the fleet's lanes deploy at once and
# set more (src/tests/fleet/lanes_test.go).
WORKERS=${CELLGUARD_DIRECTOR_WORKERS:-2}
[[ "${WORKERS}" =~ ^[1-9][0-9]?$ ]] || { echo "director.sh: CELLGUARD_DIRECTOR_WORKERS=${WORKERS}: want 1-99" >&2; exit 2; }
# How long the director waits for a new VM's agent (bosh v283.0.0 Config#agent_wait_timeout,
# 600 s by default): QEMU VMs under TCG on a loaded host take longer to boot.
AGENT_WAIT=${CELLGUARD_DIRECTOR_AGENT_WAIT:-600}
[[ "${AGENT_WAIT}" =~ ^[1-9][0-9]{1,4}$ ]] || { echo "director.sh: CELLGUARD_DIRECTOR_AGENT_WAIT=${AGENT_WAIT}: want seconds, 10-99999" >&2; exit 2; }
PG_BIN=/usr/lib/postgresql/15/bin

# The director's source and the gems Debian lacks (../shared/sources/README.md).
ruby_tarballs=(bosh-v283.0.0-src.tar.gz bosh-cpi-ruby-cfce224.tar.gz cf-uaa-lib-4.0.9.tar.gz
  membrane-1.1.0-1eeadcf.tar.gz nats-pure-2.5.0.tar.gz prometheus-client-ruby-4.2.5.tar.gz
  semi_semantic-1.2.0.tar.gz delayed_job_sequel-4.4.0.tar.gz unix-crypt-1.3.2.tar.gz
  json_schemer-15aca1e.tar.gz)

T0=$(date +%s%N)
log() { printf '[director %5.1fs] %s\n' "$(( ($(date +%s%N) - T0) / 1000000 ))e-3" "$*" >&2; }
die() { echo "director: error: $*" >&2; exit 1; }

usage() { echo "usage: director.sh up STATE [--cpi PATH] | lab STATE | down STATE | status STATE | ruby STATE ARGS..." >&2; exit 2; }

# ---------------------------------------------------------------- the lab
netns_name() { echo "cellguard-lab-$(printf '%s' "${STATE}" | sha256sum | cut -c1-10)"; }
in_lab() { nsenter --net="${NETNS}" -- "$@"; }

# lab_ino: the inode of the lab's network namespace, as up recorded it: a process
# still in the lab after its file went (ip netns del by hand) is still found.
lab_ino() { cat "${STATE}/run/lab.ino" 2>/dev/null || true; }

lab_up() {
  if [ ! -e "${NETNS}" ]; then
    ip netns add "${NAME}" || die "ip netns add ${NAME}"
    log "network namespace ${NAME}"
  fi
  stat -L -c %i "${NETNS}" >"${STATE}/run/lab.ino"
  in_lab ip link set lo up
  if ! in_lab ip link show "${BRIDGE}" >/dev/null 2>&1; then
    in_lab ip link add "${BRIDGE}" address "${BRIDGE_MAC}" type bridge
  fi
  in_lab ip link set dev "${BRIDGE}" address "${BRIDGE_MAC}"
  in_lab ip addr replace "${GATEWAY}/24" dev "${BRIDGE}"
  in_lab ip link set "${BRIDGE}" up
}

# ---------------------------------------------------------------- builds
# cached BIN: a file under the cache, built by the function named in $2 into a
# temporary name and renamed, so engineers sharing the cache never see half a
# build.
cached() {
  local path=$1 build=$2 tmp
  if [ -e "${path}" ]; then echo "${path}"; return 0; fi
  mkdir -p "$(dirname "${path}")"
  # What an interrupted build left: its builder's pid is gone.
  for tmp in "${path}".tmp.*; do
    [ -e "${tmp}" ] && [ ! -d "/proc/${tmp##*.tmp.}" ] && rm -rf "${tmp}"
  done
  tmp="${path}.tmp.$$"
  rm -rf "${tmp}"
  "${build}" "${tmp}" >&2 || { rm -rf "${tmp}"; die "build ${path##*/} (${build})"; }
  mv -T "${tmp}" "${path}" 2>/dev/null || rm -rf "${tmp}"  # another engineer's rename won
  echo "${path}"
}

# ruby_key: the tarballs' checksums, the shim, and build_ruby's own recipe.
ruby_key() {
  { declare -f build_ruby
    for t in "${ruby_tarballs[@]}"; do grep " ${t}\$" "${sources}/SHA256SUMS" || die "${t} not in ${sources}/SHA256SUMS"; done
    cat "${here}/cellguard_director_shim.rb"; } | sha256sum | cut -c1-12
}

# build_ruby DIR: the director's source and the nine gems unpacked, checked
# against SHA256SUMS first; RUBYLIB names their lib directories.
build_ruby() {
  local dir=$1 t
  log "unpacking the director and its gems (once per content) into ${dir}"
  (cd "${sources}" && for t in "${ruby_tarballs[@]}"; do grep " ${t}\$" SHA256SUMS; done | sha256sum --quiet -c -) ||
    die "a tarball in ${sources} does not match SHA256SUMS"
  mkdir -p "${dir}/gems"
  tar -xzf "${sources}/${ruby_tarballs[0]}" -C "${dir}"
  for t in "${ruby_tarballs[@]:1}"; do tar -xzf "${sources}/${t}" -C "${dir}/gems"; done
  # Config.get_revision runs `cat REVISION || git show-ref` in the source's root:
  # without the file it would read whatever git repository is above the cache.
  echo "${BOSH_COMMIT}" >"${dir}/bosh-v${BOSH_VERSION}-src/REVISION"
  mkdir -p "${dir}/shim"
  cp "${here}/cellguard_director_shim.rb" "${dir}/shim/"
}

build_nats() {
  local dir=$1
  log "building nats-server ${NATS_VERSION} from the Go module proxy"
  mkdir -p "${dir}"
  GOBIN="${dir}" GOFLAGS=-mod=mod nice -n 10 go install "github.com/nats-io/nats-server/v2@${NATS_VERSION}"
}

utils_version() { awk '$1 == "github.com/cloudfoundry/bosh-utils" {print $2}' "${repo}/spec/go.mod"; }

# build_multidigest DIR: bosh-utils' main (verify-multidigest) at the version
# spec/go.mod pins for bosh-cli.
build_multidigest() {
  local dir=$1
  log "building verify-multidigest (bosh-utils $(utils_version) main)"
  mkdir -p "${dir}"
  (cd "${repo}/spec" && nice -n 10 go build -mod=mod -o "${dir}/verify-multidigest" github.com/cloudfoundry/bosh-utils/main)
}

front_key() { cat "${repo}/go.mod" "${repo}/go.sum" $(ls "${here}"/*.go | grep -v '_test\.go$') | sha256sum | cut -c1-12; }
build_front() {
  local dir=$1
  log "building director-front"
  mkdir -p "${dir}"
  (cd "${repo}" && CGO_ENABLED=0 go build -trimpath -o "${dir}/director-front" ./src/tests/director)
}

# ---------------------------------------------------------------- certificates
# cert NAME CA SUBJECT EXT: NAME.key and NAME.pem signed by CA (CA "" = self-signed CA).
cert() {
  local name=$1 ca=$2 subj=$3 ext=$4 d="${STATE}/pki"
  [ -s "${d}/${name}.pem" ] && return 0
  openssl genrsa -out "${d}/${name}.key" 2048 2>/dev/null
  if [ -z "${ca}" ]; then
    openssl req -x509 -new -key "${d}/${name}.key" -subj "${subj}" -days 30 -sha256 \
      -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign \
      -out "${d}/${name}.pem" 2>/dev/null
  else
    openssl req -new -key "${d}/${name}.key" -subj "${subj}" 2>/dev/null |
      openssl x509 -req -CA "${d}/${ca}.pem" -CAkey "${d}/${ca}.key" -CAcreateserial -days 30 -sha256 \
        -extfile <(printf '%s\n' "${ext}") -out "${d}/${name}.pem" 2>/dev/null
  fi
  chmod 0600 "${d}/${name}.key"
}

certs() {
  mkdir -p "${STATE}/pki"
  chmod 0700 "${STATE}/pki"
  cert director-ca "" "/C=US/O=cellguard/CN=cellguard test director CA" ""
  cert director director-ca "/C=US/O=cellguard/CN=${GATEWAY}" \
    "subjectAltName=IP:${GATEWAY}
extendedKeyUsage=serverAuth"
  # bosh-agent v2.759.0 accepts a NATS server only with a CN like
  # *.nats.bosh-internal (../shared/bosh-director/README.md); the SAN is what it dials.
  cert nats-ca "" "/C=US/O=cellguard/CN=cellguard test NATS CA" ""
  cert nats-server nats-ca "/C=US/O=cellguard/CN=default.nats.bosh-internal" \
    "subjectAltName=DNS:default.nats.bosh-internal,IP:${GATEWAY}
extendedKeyUsage=serverAuth,clientAuth"
  cert nats-director nats-ca "/C=US/O=cellguard/CN=default.director.bosh-internal" \
    "extendedKeyUsage=clientAuth"
}

# ---------------------------------------------------------------- processes
pidfile() { echo "${STATE}/run/$1.pid"; }

# alive NAME: the pid in NAME's pid file runs, and in the lab (a pid reused by
# another process after a reboot is not ours).
alive() {
  local pid ino
  pid=$(cat "$(pidfile "$1")" 2>/dev/null) || return 1
  [[ ${pid} =~ ^[0-9]+$ ]] || return 1
  ino=$(lab_ino)
  [ -n "${ino}" ] && [ "$(stat -L -c %i "/proc/${pid}/ns/net" 2>/dev/null)" = "${ino}" ]
}

# start NAME CMD...: CMD in the lab, in a session of its own, output to
# STATE/log/NAME.log; its pid to STATE/run/NAME.pid. nsenter and setpriv exec,
# so the pid is CMD's.
start() {
  local name=$1
  shift
  if alive "${name}"; then return 0; fi
  local pid i
  setsid nsenter --net="${NETNS}" -- "$@" </dev/null >>"${STATE}/log/${name}.log" 2>&1 &
  pid=$!
  echo "${pid}" >"$(pidfile "${name}")"
  # alive judges a pid by its network namespace, and until nsenter has
  # entered the lab the new process is still in the host's: wait for that
  # (or for its end) here. Twice under load, a wait_for right after start
  # called a starting daemon dead ("postgres exited", "nats exited"), and
  # the teardown that followed unmounted the lab under the nsenter still on
  # its way in (its log: "reassociate to namespace 'ns/net' failed: Invalid
  # argument").
  for ((i = 0; i < 200; i++)); do
    [ "$(stat -L -c %i "/proc/${pid}/ns/net" 2>/dev/null)" = "$(lab_ino)" ] && break
    running "${pid}" || break
    sleep 0.05
  done
  log "started ${name} (pid ${pid})"
}

# wait_for WHAT SECONDS "NAME..." CMD...: polls CMD until it succeeds; fails
# early when one of the NAMEs' processes died.
wait_for() {
  local what=$1 secs=$2 names=$3 name i
  shift 3
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    for name in ${names}; do
      alive "${name}" || { tail -n 20 "${STATE}/log/${name}.log" >&2; die "${name} exited while waiting for ${what}"; }
    done
    sleep 0.2
  done
  for name in ${names}; do tail -n 5 "${STATE}/log/${name}.log" >&2; done
  die "${what} not ready after ${secs}s (logs: ${STATE}/log)"
}

port_open() { in_lab bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# running PID: PID exists and is not a zombie (up's own children, when its
# trap runs down, stay zombies until this shell reaps them).
running() {
  local st
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }  # after the command name, which may hold spaces and parentheses
  [ "${st:0:1}" != Z ]
}

# group_left PID: PID runs, or a process of the group it leads does (not
# counting zombies).
group_left() {
  local p st
  running "$1" && return 0
  for p in /proc/[0-9]*; do
    read -r st 2>/dev/null <"${p}/stat" || continue
    st=${st##*) }
    # fields after the name: state ppid pgrp ...
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- "$1" ${st}
    [ "$4" = "$1" ] && [ "$2" != Z ] && return 0
  done
  return 1
}

# stop SIGNAL NAME...: ends the NAMEs' processes together (SIGNAL, then SIGKILL
# after 30 s) and removes their pid files. Each with its process group, which
# start() made with setsid (pgid = pid): a worker runs each task in a child it
# forks into its group, and signalled alone, the worker ended while a deploy's
# child went on without a database, holding the deleted lab's network
# namespace (a fleet interrupted mid-deploy).
stop() {
  local sig=$1 name pid i left
  shift
  local -A pids=()
  for name in "$@"; do
    pid=$(cat "$(pidfile "${name}")" 2>/dev/null) || continue
    if alive "${name}"; then
      kill "-${sig}" -- "-${pid}" 2>/dev/null || kill "-${sig}" "${pid}" 2>/dev/null || true
      pids[${name}]=${pid}
    fi
  done
  for ((i = 0; i < 150; i++)); do
    left=0
    for pid in "${pids[@]}"; do group_left "${pid}" && left=1; done
    [ "${left}" = 1 ] || break
    sleep 0.2
  done
  for name in "${!pids[@]}"; do
    pid=${pids[${name}]}
    if group_left "${pid}"; then
      log "${name} (pid ${pid}) or its group still runs 30 s after SIG${sig}: SIGKILL"
      kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
      while group_left "${pid}"; do sleep 0.1; done
    fi
    log "stopped ${name} (pid ${pid})"
  done
  for name in "$@"; do rm -f "$(pidfile "${name}")"; done
}

# ---------------------------------------------------------------- components
postgres_up() {
  local pg="${STATE}/pg"
  # PostgreSQL refuses to run as root: its files belong to Debian's postgres user,
  # who must reach them (up made STATE 0711).
  id postgres >/dev/null 2>&1 || die "no postgres user: install postgresql-15 (make deps)"
  [ -x "${PG_BIN}/postgres" ] || die "${PG_BIN}/postgres missing: install postgresql-15 (make deps)"
  mkdir -p "${pg}/run"
  chown postgres:postgres "${pg}" "${pg}/run"
  chmod 0700 "${pg}/run"
  setpriv --reuid=postgres --regid=postgres --init-groups test -x "${pg}/run" ||
    die "user postgres cannot reach ${pg}: every directory above STATE needs o+x"
  if [ ! -s "${pg}/data/PG_VERSION" ]; then
    rm -rf "${pg}/data" "${pg}/migrated"
    log "initdb ${pg}/data"
    setpriv --reuid=postgres --regid=postgres --init-groups "${PG_BIN}/initdb" -D "${pg}/data" -U postgres \
      --auth-local=trust --auth-host=reject -E UTF8 --locale=C.UTF-8 --no-sync >"${STATE}/log/initdb.log" 2>&1 ||
      { cat "${STATE}/log/initdb.log" >&2; die "initdb"; }
  fi
  # No TCP (listen_addresses ''), a socket only its owner and root reach (0700 dir).
  start postgres setpriv --reuid=postgres --regid=postgres --init-groups "${PG_BIN}/postgres" -D "${pg}/data" \
    -c listen_addresses= -c "unix_socket_directories=${pg}/run" -c unix_socket_permissions=0700 \
    -c port=5432 -c max_connections=200 -c fsync=off -c full_page_writes=off -c synchronous_commit=off
  wait_for "postgres's socket" 60 postgres in_lab "${PG_BIN}/pg_isready" -q -h "${pg}/run" -p 5432
  if ! in_lab "${PG_BIN}/psql" -h "${pg}/run" -U postgres -Atqc "select 1 from pg_database where datname='bosh'" | grep -q 1; then
    in_lab "${PG_BIN}/createdb" -h "${pg}/run" -U postgres bosh
  fi
}

nats_up() {
  local d="${STATE}/nats"
  mkdir -p "${d}"
  cat >"${d}/nats.conf" <<EOF
listen: ${GATEWAY}:${NATS_PORT}
pid_file: ${d}/nats-server.pid
tls {
  cert_file: "${STATE}/pki/nats-server.pem"
  key_file: "${STATE}/pki/nats-server.key"
  ca_file: "${STATE}/pki/nats-ca.pem"
  verify: true
  timeout: 5
}
EOF
  start nats "${NATS_BIN}" -c "${d}/nats.conf"
  wait_for "nats on ${GATEWAY}:${NATS_PORT}" 30 nats port_open "${GATEWAY}" "${NATS_PORT}"
}

director_config() {
  local d="${STATE}/director"
  mkdir -p "${d}/dir" "${d}/tmp" "${STATE}/blobstore" "${STATE}/front/uploads"
  cat >"${d}/director.yml.new" <<EOF
---
name: cellguard-lab
version: '${BOSH_VERSION}'
port: ${DIRECTOR_PORT}
puma_workers: 1
dir: ${d}/dir
logging:
  level: debug
audit_log_path: ${STATE}/log
db:
  adapter: postgres
  host: ${STATE}/pg/run
  port: 5432
  user: postgres
  database: bosh
  connection_options:
    max_connections: 32
    pool_timeout: 10
mbus: nats://${GATEWAY}:${NATS_PORT}
nats:
  server_ca_path: ${STATE}/pki/nats-ca.pem
  client_certificate_path: ${STATE}/pki/nats-director.pem
  client_private_key_path: ${STATE}/pki/nats-director.key
  client_ca_certificate_path: ${STATE}/pki/nats-ca.pem
  client_ca_private_key_path: ${STATE}/pki/nats-ca.key
blobstore:
  provider: local
  options:
    blobstore_path: ${STATE}/blobstore
agent:
  agent_wait_timeout: ${AGENT_WAIT}
  env:
    bosh:
      blobstores:
      - provider: local
        options:
          blobstore_path: ${STATE}/blobstore
user_management:
  provider: local
  local:
    users:
    - name: admin
      password: '${SECRET}'
cloud:
  provider:
    name: lab
    path: ${CPI}
  properties: {}
cpi:
  max_supported_api_version: 2
  preferred_api_version: 2
config_server:
  enabled: false
local_dns:
  enabled: false
scheduled_jobs: []
record_events: true
verify_multidigest_path: ${MULTIDIGEST_BIN}
EOF
  chmod 0600 "${d}/director.yml.new"
  # A changed config (another --cpi) reaches a running director by a restart.
  if ! cmp -s "${d}/director.yml.new" "${d}/director.yml" && alive director; then
    log "director.yml changed: restarting the director and its workers"
    # shellcheck disable=SC2046 # worker names have no spaces
    stop TERM front director $(cd "${STATE}/run" && ls worker_*.pid 2>/dev/null | sed 's/\.pid$//')
  fi
  mv "${d}/director.yml.new" "${d}/director.yml"
}

# ruby_env: Debian's ruby with the unpacked gems first on RUBYLIB, and the one
# shim (README.md) loaded before the director.
ruby_env() {
  local rl="${RUBY_TREE}/shim:${RUBY_TREE}/bosh-v${BOSH_VERSION}-src/src/bosh-director/lib:${RUBY_TREE}/bosh-v${BOSH_VERSION}-src/src/bosh-common/lib" g
  for g in "${RUBY_TREE}"/gems/*/lib; do rl="${rl}:${g}"; done
  echo env "RUBYLIB=${rl}" RUBYOPT=-rcellguard_director_shim "TMPDIR=${STATE}/director/tmp"
}

director_up() {
  local bin="${RUBY_TREE}/bosh-v${BOSH_VERSION}-src/src/bosh-director/bin" renv i
  read -ra renv <<<"$(ruby_env)"
  director_config
  # The migrations belong to the director's source: once per source tree.
  if [ "$(cat "${STATE}/pg/migrated" 2>/dev/null)" != "${RUBY_TREE}" ]; then
    log "migrating the database"
    in_lab "${renv[@]}" ruby "${bin}/bosh-director-migrate" -c "${STATE}/director/director.yml" >>"${STATE}/log/migrate.log" 2>&1 ||
      { tail -n 30 "${STATE}/log/migrate.log" >&2; die "bosh-director-migrate (log: ${STATE}/log/migrate.log)"; }
    echo "${RUBY_TREE}" >"${STATE}/pg/migrated"
  fi
  start director "${renv[@]}" "BOSH_DIRECTOR_LOG_FILE=${STATE}/log/director.debug.log" \
    ruby "${bin}/bosh-director" -c "${STATE}/director/director.yml"
  for ((i = 1; i <= WORKERS; i++)); do
    start "worker_${i}" "${renv[@]}" "BOSH_DIRECTOR_LOG_FILE=${STATE}/log/worker_${i}.debug.log" \
      ruby "${bin}/bosh-director-worker" -c "${STATE}/director/director.yml" -n "worker_${i}"
  done
  start front "${FRONT_BIN}" -listen "${GATEWAY}:${API_PORT}" -cert "${STATE}/pki/director.pem" \
    -key "${STATE}/pki/director.key" -backend "http://127.0.0.1:${DIRECTOR_PORT}" -spool "${STATE}/front/uploads" \
    -accel-root "${STATE}/director/tmp"
  wait_for "the director's /info through the front" 120 "director front" \
    in_lab curl -fsS --cacert "${STATE}/pki/director-ca.pem" "https://${GATEWAY}:${API_PORT}/info"
}

write_env() {
  jq -n --arg netns "${NETNS}" --arg bridge "${BRIDGE}" --arg gw "${GATEWAY}" --arg cidr "${CIDR}" \
    --arg url "https://${GATEWAY}:${API_PORT}" --arg ca "${STATE}/pki/director-ca.pem" \
    --arg secret "${SECRET}" --arg nats "nats://${GATEWAY}:${NATS_PORT}" --arg natsca "${STATE}/pki/nats-ca.pem" \
    --arg blob "${STATE}/blobstore" --arg cpi "${CPI}" --arg state "${STATE}" \
    '{netns: $netns, bridge: $bridge, gateway: $gw, cidr: $cidr, director_url: $url, ca_cert: $ca,
      client: "admin", client_secret: $secret, nats_url: $nats, nats_ca: $natsca,
      blobstore_path: $blob, cpi_path: $cpi, state_dir: $state}' >"${STATE}/env.json.tmp"
  mv "${STATE}/env.json.tmp" "${STATE}/env.json"
  cat >"${STATE}/bosh.env.tmp" <<EOF
export BOSH_ENVIRONMENT=https://${GATEWAY}:${API_PORT}
export BOSH_CA_CERT=${STATE}/pki/director-ca.pem
export BOSH_CLIENT=admin
export BOSH_CLIENT_SECRET=${SECRET}
EOF
  chmod 0600 "${STATE}/env.json" "${STATE}/bosh.env.tmp"
  mv "${STATE}/bosh.env.tmp" "${STATE}/bosh.env"
}

# ---------------------------------------------------------------- commands
up() {
  local t
  [ "$(id -u)" = 0 ] || die "needs root (network namespace, PostgreSQL as its user)"
  for t in ruby jq openssl curl go ip nsenter setpriv; do
    command -v "${t}" >/dev/null || die "${t} not found; run make deps"
  done
  mkdir -p "${STATE}/run" "${STATE}/log"
  chmod 0711 "${STATE}"
  if [ -n "${CPI}" ]; then
    [ -x "${CPI}" ] || die "--cpi ${CPI} is not an executable"
    echo "${CPI}" >"${STATE}/cpi_path"
  else
    CPI=$(cat "${STATE}/cpi_path" 2>/dev/null) || die "no --cpi PATH given and none from an earlier up"
  fi
  up_done=0
  trap 'if [ "${up_done}" != 1 ]; then echo "director: up failed or was interrupted; taking it down" >&2; down; fi' EXIT
  trap 'exit 130' INT TERM

  RUBY_TREE=$(cached "${cache}/ruby-$(ruby_key)" build_ruby)
  NATS_BIN=$(cached "${cache}/nats-server-${NATS_VERSION}" build_nats)/nats-server
  MULTIDIGEST_BIN=$(cached "${cache}/verify-multidigest-$(utils_version)" build_multidigest)/verify-multidigest
  FRONT_BIN=$(cached "${cache}/front-$(front_key)" build_front)/director-front
  [ -s "${STATE}/admin_secret" ] || (umask 077 && openssl rand -hex 16 >"${STATE}/admin_secret")
  SECRET=$(cat "${STATE}/admin_secret")

  lab_up
  certs
  postgres_up
  nats_up
  director_up
  write_env
  up_done=1
  log "up: https://${GATEWAY}:${API_PORT} in ${NETNS} (source ${STATE}/bosh.env; run bosh with nsenter --net=${NETNS})"
}

# lab: the lab alone (no process), for a test that brings its own NATS; down removes it.
lab() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespace)"
  mkdir -p "${STATE}/run" "${STATE}/log"
  lab_up
  echo "${NETNS}"
}

# others_in_lab: processes still in the lab that down did not start (a CPI call
# a killed worker left, a VM's process). Named, not ended: their owner ends them.
others_in_lab() {
  local ino p
  ino=$(lab_ino)
  [ -n "${ino}" ] || return 0
  for p in $(find /proc/[0-9]*/ns/net -maxdepth 0 -lname "net:\[${ino}\]" 2>/dev/null); do
    p=${p%/ns/net}
    echo "director: warning: still in the lab: pid ${p#/proc/} $(tr '\0' ' ' <"${p}/cmdline" 2>/dev/null | cut -c1-120)" >&2
  done
}

down() {
  # The front first (no new requests), the workers and the director, then what
  # they use. postgres: SIGINT is its fast shutdown (SIGTERM waits for clients).
  stop TERM front
  # shellcheck disable=SC2046 # worker names have no spaces
  stop TERM director $(cd "${STATE}/run" 2>/dev/null && ls worker_*.pid 2>/dev/null | sed 's/\.pid$//')
  stop TERM nats
  stop INT postgres
  if [ -e "${NETNS}" ]; then
    # A second down running at once (Ctrl-C reaches up's trap and the caller's) may win.
    ip netns del "${NAME}" 2>/dev/null || [ ! -e "${NETNS}" ] || die "ip netns del ${NAME}"
    log "removed network namespace ${NAME} (and ${BRIDGE} in it)"
  fi
  others_in_lab
  rm -f "${STATE}/env.json" "${STATE}/bosh.env" "${STATE}/run/lab.ino"
  # A spooled upload the director never took.
  rm -f "${STATE}/front/uploads/"upload-* 2>/dev/null || true
}

# ruby_cmd ARGS...: Debian's ruby with the director's code and gems, as the
# director runs (e.g. to call one of its classes, or bosh-director-console).
ruby_cmd() {
  local renv
  RUBY_TREE=$(cached "${cache}/ruby-$(ruby_key)" build_ruby)
  read -ra renv <<<"$(ruby_env)"
  exec "${renv[@]}" ruby "$@"
}

status() {
  local name rc=0
  for name in postgres nats director $(cd "${STATE}/run" 2>/dev/null && ls worker_*.pid 2>/dev/null | sed 's/\.pid$//') front; do
    if alive "${name}"; then echo "${name}: running (pid $(cat "$(pidfile "${name}")"))"; else echo "${name}: not running"; rc=1; fi
  done
  return "${rc}"
}

cmd=${1:-}
[ $# -ge 2 ] || usage
STATE=$2
shift 2
CPI=""
while [ "${cmd}" != ruby ] && [ $# -gt 0 ]; do
  case $1 in
    --cpi) [ $# -ge 2 ] || usage; CPI=$(realpath "$2"); shift 2 ;;
    *) usage ;;
  esac
done
case ${cmd} in up|lab) mkdir -p "${STATE}" ;; esac
[ -d "${STATE}" ] || { echo "director: ${STATE}: no such directory; nothing to do" >&2; exit 0; }
STATE=$(realpath "${STATE}")
NAME=$(netns_name)
NETNS=/run/netns/${NAME}
case ${cmd} in
  up) up ;;
  lab) lab ;;
  down) down ;;
  status) status ;;
  ruby) ruby_cmd "$@" ;;
  *) usage ;;
esac
