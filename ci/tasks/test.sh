#!/usr/bin/env bash
# Everything, as the README's test command: unit, integration on a real
# systemd, template specs, release end to end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CI=true
make test
