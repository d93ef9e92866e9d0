"""Run a real `memhub serve` process for a benchmark, on its embedded defaults in a scratch data directory."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def running_hub(data_dir: Path | None = None, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """Start a hub, yield its address, stop it (and delete a scratch data directory) afterwards."""
    scratch = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="memhub-bench-")) if scratch else data_dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | (extra_env or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.cli.main", "serve", "--data-dir", str(data), "--port", "0", "--log-level", "warning"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        address = None
        for line in proc.stdout:
            match = re.search(r"listening on (\S+:\d+)", line)
            if match:
                address = match.group(1)
                break
        if address is None:
            raise SystemExit(f"the hub did not start (exit code {proc.wait()}); see its log above")
        yield address
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if scratch:
            shutil.rmtree(data, ignore_errors=True)
