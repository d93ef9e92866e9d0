"""`python -m build`, then `pip install ./dist/memhub-*.whl` and `memhub serve` in a clean venv: a hub that answers.

The wheel is built from a copy of this checkout and installed, with its dependencies, into a new venv by
uv (the dev extra's; its package cache makes this seconds, not minutes): nothing of this checkout or of the
test run's own venv is importable there. The installed `memhub` then serves on a temporary data directory
and a non-default port, issues a token, writes a memory and finds it, and stops at SIGTERM.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from wheel_support import build_wheel

import memhub
from memhub.embedding.quantize import default_cache_dir


def uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert found, "uv is missing: it is in the dev extra (scripts/setup.sh --dev installs it)"
    return found


def install(wheel: Path, venv: Path) -> None:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    made = subprocess.run(
        [uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], capture_output=True, text=True, env=env, timeout=120
    )
    assert made.returncode == 0, made.stderr
    command = [uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)]
    # From uv's cache alone when it holds every dependency (after scripts/setup.sh ran with uv); else from PyPI.
    done = subprocess.run([*command, "--offline"], capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_wheel_installed_in_a_clean_venv_serves(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "build")
    venv = tmp_path / "venv"
    install(wheel, venv)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_", "PYTHON", "VIRTUAL_ENV"))}
    env |= {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        # The int8 model derived from the same packages, as this test run's venv keeps it (else the first
        # start derives it again: seconds, the same file).
        "MEMHUB_MODEL_CACHE": os.environ.get("MEMHUB_MODEL_CACHE") or str(default_cache_dir()),
        "PATH": f"{bin_dir}:{env['PATH']}",
    }

    def memhub_cmd(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(bin_dir / "memhub"), *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    probe = [str(bin_dir / "python"), "-c", "import memhub; print(memhub.__file__)"]
    where = subprocess.run(probe, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the installed copy, nothing else
    assert memhub_cmd("--version").stdout == f"memhub {memhub.__version__}\n"

    port, data_dir = free_port(), tmp_path / "data"
    hub = subprocess.Popen(
        [str(bin_dir / "memhub"), "serve", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert hub.stdout is not None
        printed = []
        for line in hub.stdout:
            printed.append(line)
            if line.startswith("  try:") or hub.poll() is not None:
                break
        said = "".join(printed)
        assert f"memhub: listening on 127.0.0.1:{port} (gRPC)" in said, said
        assert re.search(r"policies: +\S*site-packages/memhub/shipped_policies", said), said  # the wheel's own

        issued = memhub_cmd("token", "issue", "--agent", "newcomer", "--data-dir", str(data_dir))
        assert issued.returncode == 0, issued.stderr
        env["MEMHUB_TOKEN"] = issued.stdout.strip()
        written = memhub_cmd("write", "agents/newcomer/notes", "Deploys freeze on Fridays after 3 pm")
        assert written.returncode == 0 and written.stdout.startswith("wrote "), written.stderr
        found = memhub_cmd("search", "can I deploy on Friday?")
        assert found.returncode == 0 and "Deploys freeze on Fridays after 3 pm" in found.stdout, found.stdout + found.stderr

        hub.send_signal(signal.SIGTERM)
        rest, _ = hub.communicate(timeout=120)
        assert hub.returncode == 0 and "memhub: shutting down" in rest
    finally:
        if hub.poll() is None:
            hub.kill()
            hub.wait(60)

    # scripts/setup.sh's serving install has no onnx (scripts/serve-overrides.txt): the model derived before loads
    # without it, and with none derived the error says what to do.
    removed = subprocess.run(
        [uv(), "pip", "uninstall", "--quiet", "--python", str(bin_dir / "python"), "onnx", "ml-dtypes"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert removed.returncode == 0, removed.stderr
    check = [str(bin_dir / "python"), "-m", "memhub.embedding.check", "minilm", "--verbose"]
    loaded = subprocess.run(check, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert loaded.returncode == 0 and "loading the embedding model" in loaded.stderr, loaded.stderr
    env["MEMHUB_MODEL_CACHE"] = str(tmp_path / "no-model-yet")
    refused = subprocess.run(check, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert refused.returncode == 1, refused.stderr
    assert "needs the PyPI package 'onnx'" in refused.stderr and "scripts/setup.sh" in refused.stderr, refused.stderr
