# cellguard: every CI task calls only these targets.
SHELL      := /bin/bash
GO         ?= go
BIN        := bin/cellguard
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -X github.com/cloudfoundry/cellguard/src/internal/cli.Version=$(VERSION)
# The tests build with safefile's crash hook (cellguard_crashtest); build,
# release and packaging never set the tag. src/tests/fleet deploys the
# release as an addon on a real director, jammy and xenial at once (make
# cell: all three shapes); times in src/tests/fleet/README.md.
CRASHTAG   := cellguard_crashtest
GOTESTFLAGS ?= -count=1 -timeout 90m -tags $(CRASHTAG)

.PHONY: all build deps test gotest unittest spec spec-and-release-e2e lint bench fuzz release cell clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./src/cmd/cellguard

# Installs what the tests need (Debian packages, Go modules, the pinned upstream
# files of ci/upstream-sources.lock in ../shared, fetched by commit where missing); idempotent.
deps:
	bash ci/scripts/install-deps.sh

# The README's test command: everything, on a fresh Debian machine as root.
test: deps build lint gotest spec-and-release-e2e

# spec and release-e2e at once, each target's output printed whole when it
# ends: spec's tests keep about one core busy (175 s of CPU in 140 s, one
# test after another), release-e2e compiles on both for under a minute, and
# one after the other they were make test's last 4 minutes (CI-U, CI-V).
spec-and-release-e2e:
	$(MAKE) --no-print-directory -j2 --output-sync=target spec release-e2e

gotest:
	$(GO) test $(GOTESTFLAGS) -p 2 ./...

# gofmt, go vet and staticcheck (pinned; built from the module proxy), on
# both modules: the product's and spec/ (the template tests and BOSH tools).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out=$$(git ls-files '*.go' ':!:src/vendor' | xargs gofmt -l); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags $(CRASHTAG) ./src/internal/safefile/...
	$(GO) run $(STATICCHECK) ./...
	cd spec && $(GO) vet -mod=mod ./... && $(GO) run $(STATICCHECK) ./...

# Pure tests only: no root, no systemd container.
unittest:
	CELLGUARD_SKIP_INTEGRATION=1 $(GO) test $(GOTESTFLAGS) ./...

# Every Go fuzz target for FUZZTIME each (default 30s), one after the other.
# CI's short pass: ci/scripts/fuzz-short.sh (5s each).
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) bash ci/scripts/fuzz.sh

.PHONY: vendor release-e2e final-release golang-blob generate

# Rewrite the files generated from jobs/: the alert rules rendered with the
# cellguard-alerts job's defaults (manifests/prometheus/*.alerts.yml) and
# docs/properties.md. make spec fails while they are stale.
generate:
	cd spec && $(GO) test -mod=mod -count=1 -run 'TestAlertsJobRendersTheShippedRules|TestPropertiesDoc' ./jobs -update

# BOSH job templates rendered by bosh-cli's own ERB renderer, the release's
# YAML, the CI pipeline (spec/ is a module of its own: bosh-cli stays out of
# the main go.mod).
spec:
	cd spec && $(GO) vet -mod=mod ./... && $(GO) test -mod=mod -count=1 -timeout 30m ./...

# A dev release tarball, built offline: dev_releases/cellguard-dev.tgz.
release:
	bash ci/scripts/create-release.sh

# A final release from the last commit (docs/releasing.md): writes
# releases/cellguard/cellguard-$(VERSION).yml, releases/cellguard/index.yml,
# .final_builds/ and releases/cellguard/cellguard-$(VERSION).tgz, prints the
# tarball's sha1, commits nothing. FINAL_BLOBSTORE_DIR=DIR uploads to a local
# directory instead of config/final.yml's blobstore (development only).
final-release:
	bash ci/scripts/final-release.sh $(VERSION)

# Write src/vendor (packages/cellguard's dependencies, committed) from
# go.mod and go.sum: run it after every dependency change.
vendor:
	bash ci/scripts/vendor.sh

# create-release, then compile every package from the tarball as a compile VM would.
release-e2e:
	bash ci/scripts/release-e2e.sh

# The README's first command: the fleet (src/tests/fleet/README.md). A real
# BOSH director (cloudfoundry/bosh v283.0.0) deploys 3 cells and 1 other VM
# with cellguard as a runtime-config addon, on each stemcell shape at once
# (xenial: systemd 229, the seed's; jammy: 249; noble: 255, QEMU VMs on
# Ubuntu's kernel, 2 cells, where make test runs the deploy and seed 001): blocked
# rollouts at a later cell and at the canary, the way out over bosh ssh, the
# errand's fleet summary, seed 001, leaving, heal, protect and start; then
# each shape's real Garden: seed 000 as it happened on xenial (the
# 2020-01 Garden started by monit), today's Garden with seed 002 on jammy and
# noble. Each shape's last line says "all expectations held".
# Every scenario is a subtest, TestFleet/<shape>/<scenario>, and a run brings
# up only what the scenarios it picks need: CELL_RUN is go test's -run
# (CELL_RUN=TestFleet/jammy one shape, CELL_RUN=TestFleet/jammy/watch_heals
# one scenario), CELL_SKIP its -skip (CELL_SKIP='TestFleet/.*/garden' leaves
# real Garden out). CELLGUARD_FLEET_SCENARIOS=all adds make cell's shape and
# lanes to what make test runs.
# The shapes run at once whatever go test's -parallel (TestFleet starts
# each in a goroutine of its own).
CELL_RUN ?= ^TestFleet$$
CELL_SKIP ?=
cell: deps
	CELLGUARD_FLEET_SCENARIOS=all $(GO) test -count=1 -timeout 100m -tags $(CRASHTAG) \
	  -run '$(CELL_RUN)' $(if $(CELL_SKIP),-skip '$(CELL_SKIP)') -v ./src/tests/fleet/

# A real BOSH director (v283.0.0) in a lab network namespace, for the fleet
# (src/tests/director/README.md): DIRECTOR_STATE holds everything, DIRECTOR_CPI
# is the CPI executable the director calls (needed by the first up).
.PHONY: director-up director-down
DIRECTOR_STATE ?= /var/tmp/cellguard-director-lab
DIRECTOR_CPI ?=
director-up:
	bash src/tests/director/director.sh up $(DIRECTOR_STATE) $(if $(DIRECTOR_CPI),--cpi $(DIRECTOR_CPI))
director-down:
	bash src/tests/director/director.sh down $(DIRECTOR_STATE)

# Put the Go toolchain blob (config/blobs.yml) in the local blobstore.
golang-blob:
	bash ci/scripts/golang-blob.sh

# Benchmarks, not tests (docs/performance.md): cellguard validate against an
# operator's jq+cat shell loop on synthetic cells of 1x, 10x and 100x
# (250x20 containers + 1,000 host processes), each in a tmpfs of a private
# mount namespace; then the Go benchmarks of the hot paths, and leaked-netns's scan on
# this host with 1,000 and 5,000 extra sockets (root: it duplicates their fds); then
# start/stop latency and cellguard watch (detection, heal, idle, storm) on a real systemd.
# cellbench runs the cellguard of BASELINE (the previous release's commit, built
# from a git worktree of this repository) in turn with $(BIN) on the same cells
# and prints them side by side. BENCHFLAGS="--scales 1,10 --runs 5" for a quick run.
# The same on a live cell of LIVESCALES (60,000 real processes at 10x, in cgroups
# and pid namespaces of their own; root and a C compiler), validated on the live
# root: the code paths a cell runs, which a fixture tree's files cannot show. Its
# cells also run $(BIN) with both BPF iterators on (bpf-iterators.json), as the
# trees from 2026-12-03 until issue 40 (88f9e12 among them) ran by default: what
# the defaults cost apart from the code (0f6ea25 had neither iterator nor
# leaked-netns). Last, because 60,000 exiting processes leave minutes of load.
# Before it, a live cell of 250 containers in a noble QEMU VM (cgroup v2,
# Ubuntu's kernel; TCG here) and on this host, in one run (BenchmarkNobleLiveCell).
BENCHFLAGS ?=
BASELINE ?= 0f6ea25
LIVESCALES ?= 10
LIVEBENCHFLAGS ?= --runs 7
bench: build
	$(GO) build -o bin/cellbench ./src/cmd/cellbench
	GO=$(GO) unshare --mount --propagation private bin/cellbench run --tmpfs --bin $(BIN) --baseline $(BASELINE) $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench . -benchmem ./src/internal/procfs ./src/internal/cgroup ./src/internal/runcstate ./src/internal/checks
	$(GO) test -run '^$$' -bench ScanLive -benchtime 10x ./src/internal/netns
	$(GO) test -run '^$$' -bench 'StartStop|Watch' -benchtime 1x -timeout 60m ./src/tests/perf
	$(GO) test -run '^$$' -bench NobleLiveCell -benchtime 1x -timeout 90m -tags $(CRASHTAG) ./src/tests/qemu
	GO=$(GO) bin/cellbench run --live --bin $(BIN) --baseline $(BASELINE) --also-config src/cmd/cellbench/bpf-iterators.json --scales $(LIVESCALES) $(LIVEBENCHFLAGS)

# Every build output: binaries, release tarballs and bosh's dev index,
# a half-written vendor tree, test and profile files.
clean:
	rm -rf bin dev_releases .dev_builds src/.vendor.* cellguard
	find . -path ./.git -prune -o \( -name '*.test' -o -name '*.prof' \) -type f -print0 | xargs -0 rm -f
