# cellguard: every CI task calls only these targets.
SHELL      := /bin/bash
GO         ?= go
BIN        := bin/cellguard
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -X github.com/cloudfoundry/cellguard/src/internal/cli.Version=$(VERSION)
GOTESTFLAGS ?= -count=1 -timeout 30m

.PHONY: all build deps test unittest integration spec lint bench fuzz release cell clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./src/cmd/cellguard

# Installs what the tests need (Debian packages, Go modules); idempotent.
deps:
	bash ci/scripts/install-deps.sh

# The README's test command: everything, on a fresh Debian machine as root.
test: deps build
	$(GO) vet ./...
	$(GO) test $(GOTESTFLAGS) -p 2 ./...

# Pure tests only: no root, no systemd container.
unittest:
	CELLGUARD_SKIP_INTEGRATION=1 $(GO) test $(GOTESTFLAGS) ./...

clean:
	rm -rf bin
