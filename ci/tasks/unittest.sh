#!/usr/bin/env bash
# Pure tests: no root, no systemd container.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CI=true
make unittest
