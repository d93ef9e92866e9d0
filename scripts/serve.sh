#!/usr/bin/env bash
# One command: set up what serving needs (idempotent; scripts/setup.sh without --dev) and start the hub on its
# embedded defaults. Extra arguments go to `memhub serve` (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."

# --help answers at once: from `memhub serve` itself when it is installed, without the set-up
# check (a second or two); otherwise with a short usage, without starting a set-up of minutes.
for arg in "$@"; do
  case "$arg" in
  -h | --help)
    if [ -x .venv/bin/memhub ]; then
      exec .venv/bin/memhub serve --help
    fi
    cat <<'EOF'
usage: scripts/serve.sh [memhub serve options]

Starts the memhub hub (embedded PostgreSQL and Milvus Lite under its data
directory unless configured otherwise). The options are those of
`memhub serve`, e.g. --data-dir DIR, --port N, --log-level debug.

This checkout is not set up yet: the first run sets it up first
(scripts/setup.sh: a .venv with what serving needs, under a minute, needs
PyPI), then starts the hub. `scripts/serve.sh --help` then lists every option.
EOF
    exit 0
    ;;
  esac
done

scripts/setup.sh
exec .venv/bin/memhub serve "$@"
