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

from memhub.console.config import ConsoleConfig
from memhub.console.server import ConsoleServer

CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')
SESSION_BASE = re.compile(r"/s/[A-Za-z0-9_-]{43}")


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

    def http(self, source: str | None = None) -> Http:
        """A client that keeps cookies and does not follow redirects (tests look at them); ``source`` is the
        loopback address it connects from (127.0.0.2, 127.0.0.3...: every 127/8 address is this machine),
        so one test can be several client addresses."""
        transport = httpx.HTTPTransport(local_address=source) if source else None
        return Http(base_url=self.url, follow_redirects=False, timeout=30, transport=transport)

    def sign_in(self, token: str) -> Http:
        """A signed-in client whose base URL is its session's prefix (/s/<page key>): ``get("/memories")`` asks for
        that session's page; an absolute link taken from a page goes through ``page_url``."""
        client = self.http()
        response = sign_in(client, token)
        assert response.status_code == 303, response.text
        client.base_url = self.url + session_base_of(response.headers["location"])
        return client


def session_base_of(location: str) -> str:
    """The session prefix of a signed-in page's path ("/s/<page key>/namespaces" -> "/s/<page key>")."""
    found = SESSION_BASE.match(location)
    assert found, f"not a session page: {location}"
    return found.group(0)


def page_base(client: httpx.Client) -> str:
    """The session prefix a signed-in client (RunningConsole.sign_in) asks under, as the pages' links carry it."""
    return client.base_url.path.rstrip("/")


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
