#!/usr/bin/env bash
# Builds a real runc release with seccomp for the seed 001 test
# (TestNobleSeed001) and prints the directory holding `runc` and BUILDINFO.
#
#   src/tests/qemu/runc.sh rc93|rc94
#
# The source is the module proxy's zip (GOPROXY, default proxy.golang.org),
# checked by `go mod download` against sum.golang.org and by this script
# against runc.sum (the h1 and the zip's sha256). The build is runc's own
# Makefile's `static` target, spelled out (it needs git for COMMIT, which a
# module zip lacks; runc.sum pins the tag's commit instead): cgo with
# libseccomp (tag seccomp: the rc93 hang is in the seccomp filter's export,
# runc PR #2871, so a build without libseccomp cannot show it), netgo and
# osusergo, linked -static against libseccomp.a (libseccomp-dev), so the
# binary needs neither bookworm's nor noble's glibc or libseccomp2.
#
# Cached under $RUNC_CACHE (default /var/tmp/cellguard-runc) by a hash of
# the pin, this script, the Go and gcc versions and libseccomp's; built
# under a temporary name and renamed into place, one build per key at a
# time (a lock), as src/tests/garden/build.sh does. Measured on this
# project's 2-core machine: 2.5 min (rc93, load 4) and 8 min (rc94, load
# 15-20), most of it fetching and compiling the dependencies; a cache hit
# is instant.
set -euo pipefail

name=${1:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pin=$(awk -v n="$name" '$1 == n' "$here/runc.sum")
if [ -z "$name" ] || [ -z "$pin" ]; then
	echo "usage: $0 rc93|rc94 (a name in $here/runc.sum)" >&2
	exit 2
fi
read -r _ modver h1 zipsum commit version <<<"$pin"
cache=${RUNC_CACHE:-/var/tmp/cellguard-runc}
log() { printf '[runc-build %s] %s\n' "$name" "$*" >&2; }

seccomp=$(dpkg-query -W -f '${Version}' libseccomp-dev 2>/dev/null || true)
if [ -z "$seccomp" ] || [ ! -e /usr/lib/x86_64-linux-gnu/libseccomp.a ]; then
	echo "runc-build: error: libseccomp-dev (libseccomp.a) is not installed: apt-get install libseccomp-dev" >&2
	exit 1
fi
key=$( {
	echo "$pin"
	grep -v '^#' "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1 # comments build nothing
	go version
	gcc --version | head -1
	echo "libseccomp-dev $seccomp"
} | sha256sum | cut -c1-16)
out="$cache/$name-$key"
if [ -x "$out/runc" ]; then
	log "cached: $out"
	echo "$out"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock-$name-$key"
flock 9
if [ -x "$out/runc" ]; then
	log "cached (built by another run while we waited): $out"
	echo "$out"
	exit 0
fi
work=$(mktemp -d "$cache/.build-$name-XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# A module cache of our own: what is verified is what is built.
export GOMODCACHE="$work/mod" GOTOOLCHAIN=local GOFLAGS=-mod=mod GONOSUMDB= GONOSUMCHECK= GOPRIVATE= GOINSECURE= GOSUMDB=sum.golang.org
dl=$(cd "$work" && go mod download -json "$modver")
got_h1=$(sed -n 's/^\t"Sum": "\(.*\)",$/\1/p' <<<"$dl")
zip=$(sed -n 's/^\t"Zip": "\(.*\)",$/\1/p' <<<"$dl")
dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$dl")
if [ "$got_h1" != "$h1" ]; then
	echo "runc-build: error: $modver has $got_h1, runc.sum says $h1" >&2
	exit 1
fi
got_zip=$(sha256sum "$zip" | cut -d' ' -f1)
if [ "$got_zip" != "$zipsum" ]; then
	echo "runc-build: error: $zip has sha256 $got_zip, runc.sum says $zipsum" >&2
	exit 1
fi
if [ "$(cat "$dir/VERSION")" != "$version" ]; then
	echo "runc-build: error: $dir/VERSION is $(cat "$dir/VERSION"), runc.sum says $version" >&2
	exit 1
fi
src="$work/src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
# A module zip carries no vendored code (only vendor/modules.txt): the
# dependencies come from the proxy too, each checked against runc's own
# go.sum (-mod=readonly: a go.sum that lacked one would fail the build).
rm -rf "$src/vendor"
bin="$work/bin"
mkdir -p "$bin"
started=$SECONDS
log "go build (cgo, libseccomp $seccomp, static): minutes"
(
	cd "$src"
	GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=1 nice -n 10 go build -trimpath \
		-tags "seccomp netgo osusergo" \
		-ldflags "-w -extldflags -static -X main.gitCommit=$commit -X main.version=$version" \
		-o "$bin/runc" .
)
# What was built must say what it is and carry libseccomp.
ver=$("$bin/runc" --version)
grep -qx "runc version $version" <<<"$ver" && grep -qx "commit: $commit" <<<"$ver" && grep -q '^libseccomp: ' <<<"$ver" || {
	echo "runc-build: error: the build's --version does not name $version, $commit and libseccomp:" >&2
	echo "$ver" >&2
	exit 1
}
if ! file -b "$bin/runc" | grep -q 'statically linked'; then
	echo "runc-build: error: $bin/runc is not statically linked: $(file -b "$bin/runc")" >&2
	exit 1
fi
{
	echo "name=$name"
	echo "module=$modver $h1"
	echo "zip_sha256=$zipsum"
	echo "commit=$commit"
	echo "go=$(go version)"
	echo "libseccomp_dev=$seccomp"
	echo "runc_sha256=$(sha256sum "$bin/runc" | cut -d' ' -f1)"
	echo "built_seconds=$((SECONDS - started))"
	echo "$ver" | sed 's/^/version_output: /'
} >"$bin/BUILDINFO"
chmod 0755 "$bin"
mv -T "$bin" "$out" 2>/dev/null || log "another build published $out first"
log "built in $((SECONDS - started)) s: $out"
echo "$out"
