#!/usr/bin/env bash
# Builds real Garden from the pinned guardian sources in ../shared/sources
# (checked against SHA256SUMS) and prints the directory that holds gdn, dadoo,
# init, nstar and gclient (cellguard's own client, gclient/main.go, built
# against the same tree's vendored garden client).
#
#   src/tests/garden/build.sh v1.58.0|2020-01|2026-08
#
# The result is cached under $GARDEN_CACHE (default /var/tmp/cellguard-garden)
# in a directory named by a hash of everything that goes into it: the
# tarball, the client's source, this script, the Go and gcc versions. A build
# goes to a temporary name and is renamed into place, so engineers and CI
# jobs sharing the cache never see half a build; a lock per key keeps two of
# them from compiling the same thing at once.
#
# Cost, measured on this project's 2-core machines: gdn of v1.58.0 takes
# 2.5-4.5 min, of 2020-01 about 2.5 min; the rest seconds; a cache hit is
# instant. Every Go binary is CGO_ENABLED=0, so one build runs on bookworm's
# glibc and on xenial's (2.23) alike; init and nstar are gcc -static, as
# guardian's own Makefiles build them.
#
# 2026-08 (guardian c2d9348, what noble cells run) also builds the runtime
# its go.mod pins, read from that go.mod: runc (v1.5.1) and containerd,
# containerd-shim-runc-v2 and ctr (v2.3.4), from the Go module proxy (sums
# checked against sum.golang.org by the go command), into runtime/. runc is
# cgo, static, with seccomp (libseccomp-dev's libseccomp.a): Garden gives
# unprivileged containers a seccomp profile. containerd is CGO_ENABLED=0
# without btrfs, devmapper or zfs, as a Garden cell uses none. Measured
# here on 2026-12-06: runc 3.8 min cold (load 25), containerd with its shim
# and ctr 22 min cold (load 30-64, modules fetched and about 900 packages
# compiled); the whole 2026-08 build again over a warm Go cache 2 min.
set -euo pipefail

variant=${1:-}
case "$variant" in
v1.58.0) tarball=guardian-v1.58.0-d21cb5a.tar.gz ;;
2020-01) tarball=guardian-2020-01-28ddcdfa.tar.gz ;;
2026-08) tarball=guardian-2026-08-c2d9348.tar.gz ;; # noble cells today: cgroup v2
*)
	echo "usage: $0 v1.58.0|2020-01|2026-08" >&2
	exit 2
	;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
sources=${CELLGUARD_SOURCES:-$root/../shared/sources}
cache=${GARDEN_CACHE:-/var/tmp/cellguard-garden}
log() { printf '[garden-build %s] %s\n' "$variant" "$*" >&2; }

# the tarball, checked against the pinned sum before anything reads it
want=$(awk -v f="$tarball" '$2 == f { print $1 }' "$sources/SHA256SUMS")
if [ -z "$want" ]; then
	echo "garden-build: error: $tarball is not in $sources/SHA256SUMS" >&2
	exit 1
fi
got=$(sha256sum "$sources/$tarball" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "garden-build: error: $sources/$tarball has sha256 $got, SHA256SUMS says $want" >&2
	exit 1
fi

key=$( {
	echo "$want"
	sha256sum "$here/gclient/main.go" "${BASH_SOURCE[0]}" | cut -d' ' -f1
	go version
	gcc --version | head -1
} | sha256sum | cut -c1-16)
out="$cache/$variant-$key"
if [ -x "$out/gdn" ] && [ -x "$out/gclient" ]; then
	log "cached: $out"
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock-$variant-$key"
flock 9
if [ -x "$out/gdn" ] && [ -x "$out/gclient" ]; then # built while we waited
	log "cached (built by another run while we waited): $out"
	echo "$out"
	exit 0
fi

work=$(mktemp -d "$cache/.build-$variant-XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$sources/$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
bin="$work/bin"
mkdir -p "$bin" "$src/cmd/cellguard-gclient"
cp "$here/gclient/main.go" "$src/cmd/cellguard-gclient/main.go"

goproxy=$(go env GOPROXY) # the runtime of 2026-08 comes from it; guardian builds offline
export GOFLAGS="-mod=vendor -trimpath -buildvcs=false" GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0
started=$SECONDS
(
	cd "$src"
	log "go build gdn (-tags daemon): minutes"
	nice -n 10 go build -tags daemon -o "$bin/gdn" ./cmd/gdn
	log "gdn built in $((SECONDS - started)) s"
	nice -n 10 go build -o "$bin/dadoo" ./cmd/dadoo
	nice -n 10 go build -o "$bin/gclient" ./cmd/cellguard-gclient/main.go
	nice -n 10 gcc -static -O2 -o "$bin/init" cmd/init/init.c cmd/init/ignore_sigchild.c
	nice -n 10 gcc -static -O2 -o "$bin/nstar" rundmc/nstar/nstar.c rundmc/nstar/pwd.c
)
if [ "$variant" = 2026-08 ]; then
	pin() { awk -v m="$1" '$1 == m { print $2; exit }' "$src/go.mod"; }
	runc_v=$(pin github.com/opencontainers/runc)
	containerd_v=$(pin github.com/containerd/containerd/v2)
	[ -n "$runc_v" ] && [ -n "$containerd_v" ] || {
		echo "garden-build: error: no runc or containerd pin in $src/go.mod" >&2
		exit 1
	}
	mkdir -p "$bin/runtime"
	(
		export GOFLAGS="-mod=mod -trimpath -buildvcs=false" GOPROXY="$goproxy"
		log "runc $runc_v, containerd $containerd_v from the Go module proxy"
		go mod download github.com/opencontainers/runc@"$runc_v" github.com/containerd/containerd/v2@"$containerd_v"
		cd "$(go mod download -json github.com/opencontainers/runc@"$runc_v" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
		CGO_ENABLED=1 nice -n 10 go build -tags "seccomp urfave_cli_no_docs netgo osusergo" \
			-ldflags "-X main.version=${runc_v#v} -extldflags -static" -o "$bin/runtime/runc" .
		cd "$(go mod download -json github.com/containerd/containerd/v2@"$containerd_v" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
		CGO_ENABLED=0 nice -n 10 go build -tags "no_btrfs no_devmapper no_zfs" \
			-ldflags "-X github.com/containerd/containerd/v2/version.Version=$containerd_v" \
			-o "$bin/runtime/" ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr
	)
	echo "runc=$runc_v containerd=$containerd_v" >"$bin/runtime/VERSIONS"
	log "runtime built: $(cat "$bin/runtime/VERSIONS")"
fi
{
	echo "variant=$variant"
	echo "source=$tarball sha256=$want"
	echo "go=$(go version)"
	[ ! -f "$bin/runtime/VERSIONS" ] || cat "$bin/runtime/VERSIONS"
	echo "built_seconds=$((SECONDS - started))"
} >"$bin/BUILDINFO"
chmod 0755 "$bin"
# rename is atomic; if another build won the race, keep theirs
mv -T "$bin" "$out" 2>/dev/null || log "another build published $out first"
log "built in $((SECONDS - started)) s: $out"
echo "$out"
