#!/usr/bin/env bash
# A short fuzz pass for CI: every fuzz target for 5s (FUZZTIME overrides).
set -euo pipefail
FUZZTIME=${FUZZTIME:-5s} exec bash "$(dirname "$0")/fuzz.sh"
