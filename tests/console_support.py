"""Helpers for the web console tests: a console in front of the fleet's hub, and signed-in HTTP clients."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from conftest import Fleet

from hub.console.config import ConsoleConfig
from hub.console.server import ConsoleServer

CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


class Http(httpx.Client):
    """An httpx client that may be used before its `with` block (sign-in happens first)."""

    def __enter__(self) -> Http:
        return self


@dataclass
class RunningConsole:
    server: ConsoleServer
    fleet: Fleet
    token_file: Path

    @property
    def url(self) -> str:
        return self.server.url

    def http(self) -> Http:
        """A client that keeps cookies and does not follow redirects (tests look at them)."""
        return Http(base_url=self.url, follow_redirects=False, timeout=30)

    def sign_in(self, token: str) -> Http:
        client = self.http()
        response = sign_in(client, token)
        assert response.status_code == 303, response.text
        return client


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page has no CSRF field"
    return found.group(1)


def sign_in(client: httpx.Client, token: str) -> httpx.Response:
    form = client.get("/signin")
    assert form.status_code == 200
    return client.post("/signin", data={"csrf": csrf_of(form.text), "token": token})


@contextlib.contextmanager
def running_console(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    """A console in front of the fleet's hub, with a token file holding root's (admin) token."""
    token_file = tmp_path_factory.mktemp("console") / "operator.jwt"
    token_file.write_text(fleet.token("root") + "\n")
    token_file.chmod(0o600)
    server = ConsoleServer(ConsoleConfig(hub_address=fleet.address, token_file=token_file))
    server.start()
    try:
        yield RunningConsole(server, fleet, token_file)
    finally:
        server.stop()
