#!/usr/bin/env bash
# One command: set up (idempotent) and start the hub on its embedded defaults.
# Extra arguments go to `memhub serve` (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/memhub serve "$@"
