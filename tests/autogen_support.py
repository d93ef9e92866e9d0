"""AutoGen for its integration test: autogen-core, autogen-agentchat and autogen-ext 0.7.5 pin protobuf ~= 5.29,
which pip cannot install beside memhub's protobuf >= 7.36, so they are installed here with --no-deps into a folder
of their own inside .venv (pip's view of .venv stays consistent) and put on sys.path for the test. Their import
and the code paths tested work on protobuf 7 (their protobuf use is autogen-ext's gRPC worker runtime, not used)."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ["autogen-core==0.7.5", "autogen-agentchat==0.7.5", "autogen-ext==0.7.5", "jsonref==1.1.0", "pillow==12.1.0"]
TARGET = REPO / ".venv" / "autogen-nodeps"


def autogen_on_path() -> None:
    """Install AutoGen into .venv/autogen-nodeps once (or when PACKAGES change) and append it to sys.path."""
    stamp = TARGET / ".installed"
    wanted = "\n".join(PACKAGES)
    TARGET.mkdir(parents=True, exist_ok=True)
    with open(TARGET.parent / ".autogen-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text() != wanted:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade", "--target", str(TARGET), *PACKAGES],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0:
                pytest.fail(f"installing AutoGen for its test failed:\n{proc.stderr[-3000:]}")
            stamp.write_text(wanted)
    if str(TARGET) not in sys.path:
        sys.path.append(str(TARGET))  # last: memhub's own dependencies win
