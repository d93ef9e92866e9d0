"""`memhub serve` on a data directory it cannot write: one line naming the path and what to do, no traceback.

Real mounts (root only, skipped with the reason otherwise): a tmpfs remounted read-only, a bind mount of a used
data directory remounted read-only, and a full tmpfs. The hub is the real `memhub serve` command in a process of
its own, so what is checked is exactly what an operator sees.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OPEN_POLICY, write_policy_dir
from security.spawned_hub import embedded_store_root, hub_env, spawn_hub

MEMHUB = [sys.executable, "-m", "memhub.cli.main"]


def _mount(*argv: str) -> None:
    result = subprocess.run(["mount", *argv], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount ({' '.join(argv)}): {result.stderr.strip()}")


@contextlib.contextmanager
def _tmpfs(where: Path, size: str = "8m") -> Iterator[Path]:
    where.mkdir(mode=0o700, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _serve(tmp_path: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = hub_env(write_policy_dir(tmp_path / "policies", OPEN_POLICY), MEMHUB_CLIENT_CONFIG="none")
    return subprocess.run(
        [*MEMHUB, "serve", "--data-dir", str(data_dir), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _assert_one_clear_line(result: subprocess.CompletedProcess[str], path: Path, *advice: str) -> str:
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("memhub serve:")]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert str(path) in line, line
    for words in advice:
        assert words in line.lower(), line
    return line


@pytest.fixture
def root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")


@pytest.mark.usefixtures("root_only")
def test_an_empty_data_directory_on_a_read_only_file_system(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "mnt") as mnt:
        data_dir = mnt / "data"
        data_dir.mkdir(mode=0o700)
        _mount("-o", "remount,ro", str(mnt))
        result = _serve(tmp_path, data_dir)
    _assert_one_clear_line(result, data_dir, "read-only", "--data-dir")


@pytest.mark.usefixtures("root_only")
def test_a_data_directory_that_cannot_be_created_on_a_read_only_file_system(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "mnt") as mnt:
        _mount("-o", "remount,ro", str(mnt))
        result = _serve(tmp_path, mnt / "new")
    _assert_one_clear_line(result, mnt / "new", "read-only", "--data-dir")


@pytest.mark.usefixtures("root_only")
def test_a_used_data_directory_bind_mounted_read_only(tmp_path: Path) -> None:
    with contextlib.contextmanager(embedded_store_root)(tmp_path) as root:
        _used_data_directory_read_only(root)


def _used_data_directory_read_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    hub = spawn_hub(tmp_path, data_dir)  # a real first start: secret, Postgres cluster, Milvus file
    assert hub.stop() == 0
    view = tmp_path / "view"
    view.mkdir(mode=0o700)
    _mount("--bind", str(data_dir), str(view))
    try:
        _mount("-o", "remount,bind,ro", str(view))
        result = _serve(tmp_path, view)
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
    _assert_one_clear_line(result, view, "read-only", "--data-dir")
    # Nothing was lost: the same data directory, writable again, serves.
    again = spawn_hub(tmp_path, data_dir)
    assert again.stop() == 0


@pytest.mark.usefixtures("root_only")
def test_a_full_file_system_under_the_data_directory(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "mnt", size="1m") as mnt:
        data_dir = mnt / "data"
        data_dir.mkdir(mode=0o700)
        with open(mnt / "ballast", "wb") as f:  # fill it: the first file the hub writes gets ENOSPC
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        result = _serve(tmp_path, data_dir)
    _assert_one_clear_line(result, mnt, "no space left", "free space")


def test_a_data_directory_under_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = _serve(tmp_path, blocker / "data")
    _assert_one_clear_line(result, blocker, "not a directory", "--data-dir")
