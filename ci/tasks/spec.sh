#!/usr/bin/env bash
# Job templates through bosh-cli's own ERB renderer (needs ruby), release YAML.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CI=true
make deps
make spec
