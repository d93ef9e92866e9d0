"""The console as an operator starts it: `memhub serve --console-port` (inside the hub process) and
`memhub console --hub` (on its own), as real processes; their settings are checked before anything starts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
from conftest import Fleet
from console_support import csrf_of, session_base_of, sign_in

from memhub.auth import issue_token, load_secret

MEMHUB = [sys.executable, "-m", "memhub.cli.main"]


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}, **extra}


def _read_until(proc: subprocess.Popen, pattern: str, limit: int = 40) -> tuple[re.Match, str]:
    seen = []
    for _ in range(limit):
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found, "".join(seen)
    raise AssertionError(
        f"no line matched {pattern!r}: {''.join(seen)} / {proc.stderr.read() if proc.poll() is not None else ''}"
    )


def _stop(proc: subprocess.Popen) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out, err


def test_serve_with_a_console_port_prints_its_url_and_serves_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [*MEMHUB, "serve", "--data-dir", str(data), "--port", "0", "--console-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        found, printed = _read_until(proc, r"console:\s+(http://127\.0\.0\.1:\d+)")
        url = found.group(1)
        assert "listening on 127.0.0.1:" in printed
        token = issue_token(load_secret(data / "jwt-secret"), agent_id="ops", groups=["admins"], ttl=timedelta(minutes=5))
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as http:
            signed_in = sign_in(http, token.token)
            assert signed_in.status_code == 303
            page = http.get(session_base_of(signed_in.headers["location"]) + "/policies")
            assert page.status_code == 200 and "default.admins-administer-hub" in page.text
    finally:
        _stop(proc)


def test_serve_without_the_flag_runs_no_console(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*MEMHUB, "serve", "--data-dir", str(tmp_path / "data"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        _, printed = _read_until(proc, r"traces:")
        printed += "".join(proc.stdout.readline() for _ in range(4))
    finally:
        _stop(proc)
    assert "console:" not in printed


def test_memhub_console_serves_a_hub_and_signs_in_with_the_token_file(fleet: Fleet, tmp_path: Path) -> None:
    token_file = tmp_path / "ops.jwt"
    token_file.write_text(issue_token(fleet.secret, agent_id="ops", groups=["admins"], ttl=timedelta(minutes=10)).token)
    token_file.chmod(0o600)
    proc = subprocess.Popen(
        [*MEMHUB, "console", "--hub", fleet.address, "--port", "0", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        found, printed = _read_until(proc, r"sign in with .*: (http://127\.0\.0\.1:\d+)(/signin/local\?key=\S+)")
        assert f"calling the hub at {fleet.address}" in printed and token_file.read_text() not in printed
        url, link = found.group(1), found.group(2)
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as http:
            page = http.get(link)
            key = link.split("key=")[1]
            signed_in = http.post("/signin/local", data={"csrf": csrf_of(page.text), "key": key})
            assert signed_in.status_code == 303
            health = http.get(session_base_of(signed_in.headers["location"]) + "/health")
            assert "Signed in as <strong>ops</strong> (admin)" in health.text
    finally:
        _stop(proc)
    cmdline = " ".join([*MEMHUB, "console", "--hub", fleet.address, "--token-file", str(token_file)])
    assert token_file.read_text() not in cmdline  # the token is read from the file, never passed in argv


def test_bad_console_settings_are_refused_naming_the_setting(tmp_path: Path) -> None:
    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*MEMHUB, *args], capture_output=True, text=True, timeout=120, env=_env(**env))

    idle = run("console", "--hub", "127.0.0.1:1", "--port", "0", MEMHUB_CONSOLE_IDLE_TIMEOUT_S="5")
    assert idle.returncode != 0 and "MEMHUB_CONSOLE_IDLE_TIMEOUT_S=5 is out of range (60 to 86400)" in idle.stderr
    flag = run("console", "--hub", "127.0.0.1:1", "--port", "70000")
    assert flag.returncode != 0 and "--port 70000 is out of range" in flag.stderr
    secure = run("console", "--hub", "127.0.0.1:1", MEMHUB_CONSOLE_SECURE_COOKIES="maybe")
    assert secure.returncode != 0 and "MEMHUB_CONSOLE_SECURE_COOKIES" in secure.stderr
    token = run("console", "--hub", "127.0.0.1:1", "--token", "eyJhbGciOiJIUzI1NiJ9.e30.x")
    assert token.returncode != 0 and "refused" in token.stderr and "eyJhbGciOiJIUzI1NiJ9" not in token.stderr
    serve = run("serve", "--data-dir", str(tmp_path / "d"), "--port", "0", MEMHUB_CONSOLE_PORT="web")
    assert serve.returncode != 0 and "MEMHUB_CONSOLE_PORT='web' is not a whole number" in serve.stderr
    assert not (tmp_path / "d").exists()  # refused before the hub created anything
