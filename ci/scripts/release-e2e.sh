#!/usr/bin/env bash
# The release end to end, as CI and a BOSH director would see it:
#  1. copy the repository's files (tracked and untracked-but-not-ignored,
#     nothing generated) into a scratch dir, so nothing lands in the repo and
#     parallel runs do not share .dev_builds;
#  2. bosh create-release --force --tarball there, in a network namespace with
#     no interfaces (offline): the plain command, nothing generated first
#     (src/vendor is committed; vendor.sh --check says it is current);
#  3. unpack the tarball and compile each package from it alone, in dependency
#     order, as the BOSH agent does: the package's files in
#     BOSH_COMPILE_TARGET, `bash -x packaging`, only its declared
#     dependencies under the packages dir, a clean environment without the
#     host's Go, and no network;
#  4. run the compiled binary;
#  5. check the package carries src/vendor, and that changing a dependency
#     changes the cellguard package's version (the fingerprint trap) and is
#     caught while src/vendor is stale.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
start=${SECONDS}

say() { echo "release-e2e: $*"; }
fail() { echo "release-e2e: FAIL: $*" >&2; exit 1; }

work="$(mktemp -d /var/tmp/cellguard-release-e2e.XXXXXX)"
trap 'rm -rf "${work}"' EXIT

bosh="$("${here}/bosh-cli.sh")"
"${here}/golang-blob.sh"

# compile_order, compile_package, COMPILE_OFFLINE.
source "${here}/lib/bosh-compile.sh"
offline=("${COMPILE_OFFLINE[@]}")
[ ${#offline[@]} -gt 0 ] || say "not root: create-release and packaging run with the network up"

# 1. the release directory, as a fresh checkout would have it. Source
# worktree (default) takes the files as they are; head takes the last commit,
# which is what CI sees and is immune to others' half-written files.
rel="${work}/release"
mkdir -p "${rel}"
case "${CELLGUARD_E2E_SOURCE:-worktree}" in
  head) git -C "${repo}" archive HEAD | tar -xf - -C "${rel}" ;;
  worktree)
    (cd "${repo}" && git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -e "${f}" ] && printf '%s\0' "${f}"; done |
      tar --null -T - -cf -) | tar -xf - -C "${rel}" ;;
  *) fail "CELLGUARD_E2E_SOURCE must be worktree or head" ;;
esac
say "release dir from ${CELLGUARD_E2E_SOURCE:-worktree}: $(find "${rel}" -type f | wc -l) files"
# Final builds (.final_builds) would be fetched from config/final.yml's
# bucket for every package whose fingerprint a final release has: this
# builds every package from its sources instead, offline, which is what
# step 3 compiles. releases/ goes too: a dev release needs none of it.
rm -rf "${rel}/.final_builds" "${rel}/releases"
mkdir -p "${rel}/blobs" && cp -a "${repo}/blobs/." "${rel}/blobs/"

# 2. create-release, offline.
"${rel}/ci/scripts/vendor.sh" --check >/dev/null || fail "src/vendor is stale: make vendor"
tarball="${work}/cellguard.tgz"
(cd "${rel}" && "${offline[@]}" "${bosh}" create-release --force --tarball="${tarball}" --non-interactive) \
  >"${work}/create-release.log" 2>&1 || { cat "${work}/create-release.log" >&2; fail "bosh create-release"; }
say "create-release: $(du -h "${tarball}" | cut -f1) tarball ($((SECONDS - start))s so far)"

# 3. compile each package from the tarball alone.
unpacked="${work}/tarball"
mkdir -p "${unpacked}"
tar -xzf "${tarball}" -C "${unpacked}"
order="$(compile_order "${unpacked}/release.MF")"

# As root, each packaging script runs in its own mount and network namespace
# with a scratch directory bound over /var: the real paths
# (/var/vcap/data/compile/NAME, /var/vcap/packages/DEP), no network, nothing
# of the host's /var. Otherwise the same layout lives under the scratch dir
# and BOSH_PACKAGES_DIR (honoured by golang-1-linux's compile.env) points at it
# (CELLGUARD_E2E_RELOCATED=1 forces that). compile_package does both
# (ci/scripts/lib/bosh-compile.sh, shared with the cell's compile cache).
var="${work}/var"
export COMPILE_SCRATCH="${var}" COMPILE_AT_VAR=false
if [ "${CELLGUARD_E2E_RELOCATED:-}" != 1 ] && compile_at_var_possible; then
  COMPILE_AT_VAR=true
fi
installed="${var}/vcap/data/packages"  # compiled packages, on the host side
while read -r name version deps; do
  dep_dirs=()
  for dep in ${deps//,/ }; do
    dep_dirs+=("${dep}=${installed}/${dep}/$(awk -v d="${dep}" '$1 == d {print $2}' <<<"${order}")")
  done
  t0=${SECONDS}
  compile_package "${name}" "${version}" "${unpacked}/packages/${name}.tgz" "${installed}/${name}/${version}" \
    "${work}/compile-${name}.log" "${dep_dirs[@]}" ||
    { tail -n 40 "${work}/compile-${name}.log" >&2; fail "compiling ${name} from the tarball"; }
  say "compiled ${name}/${version} (deps: ${deps:-none}) in $((SECONDS - t0))s$([ "${COMPILE_AT_VAR}" = true ] && echo ', at /var/vcap in a mount namespace, offline')"
done <<<"${order}"

# 4. the binary runs.
cg_version="$(awk '$1 == "cellguard" {print $2}' <<<"${order}")"
cg="${installed}/cellguard/${cg_version}/bin/cellguard"
[ -x "${cg}" ] || fail "no ${cg}"
got="$("${cg}" version)" || fail "cellguard version exited non-zero"
[ "${got}" = "${cg_version}" ] || fail "cellguard version printed ${got}, want the package version ${cg_version}"
"${cg}" --help >"${work}/help.txt" 2>&1 || fail "cellguard --help exited non-zero"
grep -q "validate" "${work}/help.txt" || fail "cellguard --help lists no validate command"
if ldd "${cg}" >/dev/null 2>&1; then fail "${cg} is dynamically linked: CGO_ENABLED=0 did not hold"; fi
# The crash hook (safefile, -tags cellguard_crashtest) is for tests only: no
# environment variable may make the shipped binary kill itself.
if grep -q CELLGUARD_TEST_CRASH_AFTER "${cg}"; then fail "${cg} carries the test crash hook"; fi
say "cellguard version: ${got}; --help ok; statically linked; no crash hook"

# The job from the tarball renders with bosh-cli's renderer, and the compiled
# binary accepts the config it renders.
job="${work}/job/cellguard"
mkdir -p "${job}" && tar -xzf "${unpacked}/jobs/cellguard.tgz" -C "${job}"
for f in job.MF monit properties_schema.json templates/bin/pre-start.erb templates/bin/drain.erb templates/config/cellguard.json.erb; do
  [ -f "${job}/${f}" ] || fail "job tarball lacks ${f}"
done
(cd "${rel}/spec" && go run -mod=mod ./cmd/render-job -job "${job}" -properties "${rel}/spec/jobs/testdata/garden-cell.yml" \
  -o "${work}/rendered") >"${work}/render.log" 2>&1 || { cat "${work}/render.log" >&2; fail "rendering the job from the tarball"; }
# config check stats the runtime binaries the config names: a root that
# holds them, as the cell does once the runtime's release is there.
vm="${work}/vm-root"
for b in $(jq -r '.validator.runtime_binaries // {} | .[]' "${work}/rendered/config/cellguard.json"); do
  install -D -m 0755 /dev/null "${vm}${b}"
done
"${cg}" config check --config "${work}/rendered/config/cellguard.json" --root "${vm}" >/dev/null || fail "the compiled cellguard rejects the rendered config"
for s in pre-start drain; do bash -n "${work}/rendered/bin/${s}" || fail "rendered bin/${s} is not valid bash"; done
say "job cellguard from the tarball renders; the compiled binary accepts its config"

# 5a. the package carries src/vendor, as go mod vendor writes it from the root go.mod.
pkg="${work}/pkg-cellguard"
mkdir -p "${pkg}" && tar -xzf "${unpacked}/packages/cellguard.tgz" -C "${pkg}"
diff -r "${pkg}/vendor" "${rel}/src/vendor" >/dev/null || fail "package vendor/ differs from src/vendor"
if find "${pkg}" -name '*_test.go' | grep -q .; then fail "package ships _test.go files"; fi
if [ -e "${pkg}/tests/testkit" ]; then fail "package ships tests/testkit"; fi
say "package cellguard carries src/vendor ($(grep -c '^# ' "${pkg}/vendor/modules.txt") modules), no tests"

# 5b. a dependency change must change the package version, and a go.mod
# that src/vendor no longer matches must be caught. The probe: a required
# module's version in modules.txt, as a bump leaves it after make vendor.
sed -i -E '0,/^# golang.org\/x\/sys v/s//# golang.org\/x\/sys v0.0.0-probe-/' "${rel}/src/vendor/modules.txt"
! "${rel}/ci/scripts/vendor.sh" --check >/dev/null 2>&1 || fail "vendor.sh --check passed a src/vendor that go.mod does not match"
(cd "${rel}" && "${offline[@]}" "${bosh}" create-release --force --tarball="${work}/probe.tgz" --non-interactive) \
  >"${work}/create-release-probe.log" 2>&1 || { cat "${work}/create-release-probe.log" >&2; fail "bosh create-release (probe)"; }
probe_version="$(tar -xzOf "${work}/probe.tgz" release.MF | ruby -ryaml -e 'puts YAML.load($stdin.read)["packages"].find { |p| p["name"] == "cellguard" }["version"]')"
[ "${probe_version}" != "${cg_version}" ] || fail "changing a dependency left package cellguard at ${cg_version}"
say "dependency change: vendor.sh --check caught it; package cellguard ${cg_version} -> ${probe_version}"

say "PASS in $((SECONDS - start))s"
