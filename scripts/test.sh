#!/usr/bin/env bash
# One command: set up (idempotent; scripts/setup.sh --dev adds the test tools and the multilingual model to what
# serving needs) and run the whole test suite.
# Extra arguments go to pytest. Exits non-zero on any failure, and when no
# test was collected (pytest's exit code 5).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev || exit 1

# Lint and formatting (ruff settings in pyproject.toml).
.venv/bin/ruff check memhub tests bench scripts || exit 1
.venv/bin/ruff format --check --quiet memhub tests bench scripts || { echo "run: .venv/bin/ruff format memhub tests bench scripts" >&2; exit 1; }

# Types: mypy strict on the public surface ([tool.mypy] in pyproject.toml names the files).
.venv/bin/mypy || { echo "memhub tests: mypy found type errors; run it by hand: .venv/bin/mypy" >&2; exit 1; }

# The shipped policies must validate and pass their decision tables.
m=.venv/bin/memhub
$m policy validate --dir policies --files default.cedar,examples/fleet.cedar || exit 1
$m policy test policies/tests/default.csv --dir policies --files default.cedar || exit 1
$m policy test policies/tests/fleet.csv --dir policies --files default.cedar,examples/fleet.cedar || exit 1

# Test files run on MEMHUB_TEST_WORKERS workers (pytest-xdist; 3 by default, a file's tests on one worker so
# its module fixtures are made once): most tests wait on hubs, servers and subprocesses rather than use a core,
# so three workers on two cores take the suite from ~19 to ~9 minutes. MEMHUB_TEST_WORKERS=0 runs it serially;
# arguments after test.sh (e.g. -n 0, a file) override.
.venv/bin/python -m pytest -n "${MEMHUB_TEST_WORKERS:-3}" --dist loadfile "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "memhub tests: no tests were collected; treating that as a failure" >&2
  exit 1
fi
exit "$rc"
