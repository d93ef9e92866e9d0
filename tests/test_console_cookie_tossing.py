"""Cookie tossing and cookie theft from another port of the console's host, in real Chromium (issue 22).

Browsers keep cookies per host, not per port: a page served from any other port of 127.0.0.1 receives
the console's cookies with every request the operator's browser makes to it, and may set cookies the
console then receives (Chromium 156 does both even for Secure and __Host- cookies over http on
loopback). An attacker who signed in to the console with a token of their own ("mallory") serves such
a page. These tests are the attack: the operator signs in, visits the attacker's page, and comes back.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from browser_support import headless_browser, submit_and_wait
from conftest import Fleet
from console_support import RunningConsole, running_console, sign_in

from memhub.auth import issue_token

ATTACKER = "mallory"


@pytest.fixture(scope="module")
def console(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with running_console(fleet, tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with headless_browser() as driver:
        yield driver


class AttackerSite:
    """Another port of 127.0.0.1: serves ``set_cookies`` and a link to ``link``, and records the cookies it receives."""

    def __init__(self) -> None:
        self.set_cookies: list[str] = []
        self.link = ""
        self.received: list[str] = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                site.received.append(self.headers.get("cookie") or "")
                body = f'<html><body><a id="go" href="{site.link}">see the dashboard</a></body></html>'.encode()
                self.send_response(200)
                for cookie in site.set_cookies:
                    self.send_header("set-cookie", cookie)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def attacker() -> Iterator[AttackerSite]:
    site = AttackerSite()
    try:
        yield site
    finally:
        site.close()


def attacker_session(console: RunningConsole) -> tuple[str, str, str]:
    """Mallory signs in to the console herself: her session cookie's value and path, and her landing page."""
    token = issue_token(console.fleet.secret, agent_id=ATTACKER, groups=[], ttl=timedelta(hours=1)).token
    with console.http() as http:
        response = sign_in(http, token)
        assert response.status_code == 303, response.text[:300]
        (cookie,) = [c for c in http.cookies.jar if c.name == "memhub_console"]
        return cookie.value, cookie.path, console.url + response.headers["location"]


def operator_signs_in(browser, console: RunningConsole) -> str:  # noqa: ANN001
    token = issue_token(console.fleet.secret, agent_id="ops", groups=["admins", "auditors"], ttl=timedelta(hours=1)).token
    browser.delete_all_cookies()
    browser.get(console.url + "/signin")
    browser.find_element("id", "token").send_keys(token)
    submit_and_wait(browser, browser.find_element("css selector", "form[action='/signin'] button"), "/namespaces")
    assert "Signed in as ops" in who(browser)
    return browser.current_url


def who(browser) -> str:  # noqa: ANN001
    found = browser.find_elements("css selector", "header .who")
    return found[0].text if found else ""


def main_text(browser) -> str:  # noqa: ANN001
    return browser.find_element("tag name", "main").text


@pytest.mark.parametrize("toss_path", ["/", "/s", "attacker's own"])
def test_a_session_cookie_tossed_from_another_port_never_makes_the_operator_the_attacker(
    browser,
    console: RunningConsole,
    attacker: AttackerSite,
    toss_path: str,  # noqa: ANN001
) -> None:
    value, path, _ = attacker_session(console)
    where = path if toss_path == "attacker's own" else toss_path
    attacker.set_cookies = [f"memhub_console={value}; Path={where}; Max-Age=3600; HttpOnly; SameSite=Strict"]
    operator_page = operator_signs_in(browser, console)
    browser.get(attacker.url)  # the operator looks at another page on this machine
    browser.get(operator_page)  # and comes back to the console
    assert ATTACKER not in who(browser), f"the operator's page runs as the attacker ({toss_path})"
    if toss_path == "attacker's own":  # planted under her own pages only: never sent with the operator's
        assert "Signed in as ops" in who(browser)
    else:  # sent beside the operator's own cookie: the console noticed, signed out and cleared them
        assert "Another site on this machine wrote this console's cookies" in main_text(browser)
    browser.get(operator_page.rsplit("/", 1)[0] + "/memories")  # a second page: still never the attacker
    assert ATTACKER not in who(browser)
    # The operator signs in again and works normally: the tossed cookie is gone or ignored.
    browser.get(console.url + "/signin")
    operator_signs_in_again(browser, console)


def operator_signs_in_again(browser, console: RunningConsole) -> None:  # noqa: ANN001
    token = issue_token(console.fleet.secret, agent_id="ops", groups=["admins", "auditors"], ttl=timedelta(hours=1)).token
    browser.find_element("id", "token").send_keys(token)
    submit_and_wait(browser, browser.find_element("css selector", "form[action='/signin'] button"), "/namespaces")
    assert "Signed in as ops" in who(browser)
    browser.get(browser.current_url.rsplit("/", 1)[0] + "/memories")
    assert "Signed in as ops" in who(browser)


def test_a_link_from_another_port_into_the_attackers_session_is_refused(
    browser,
    console: RunningConsole,
    attacker: AttackerSite,  # noqa: ANN001
) -> None:
    value, path, landing = attacker_session(console)
    # The worst case: the attacker plants her cookie exactly as the console issued it and links to her page.
    attacker.set_cookies = [f"memhub_console={value}; Path={path}; Max-Age=3600; HttpOnly; SameSite=Strict"]
    attacker.link = landing
    operator_signs_in(browser, console)
    browser.get(attacker.url)
    browser.find_element("id", "go").click()
    submit_wait = urlsplit(console.url).netloc
    assert submit_wait in browser.current_url
    assert ATTACKER not in who(browser), "a link from another site signed the operator in as the attacker"
    assert "opened from another site" in main_text(browser)
    browser.get(landing)  # and the planted session is over: typing its address now leads to the sign-in form
    assert ATTACKER not in who(browser) and "/signin" in browser.current_url


def test_another_port_never_receives_a_session_it_could_use(browser, console: RunningConsole, attacker: AttackerSite) -> None:  # noqa: ANN001
    operator_page = operator_signs_in(browser, console)
    browser.get(attacker.url)
    stolen = [
        part.split("=", 1)[1] for header in attacker.received for part in header.split("; ") if part.startswith("memhub_console=")
    ]
    assert stolen == [], "the session cookie was sent to another port"
    # Even a session id leaked some other way is useless without the page key only the operator's pages carry.
    browser.get(operator_page)
    (session_id,) = [c["value"] for c in browser.get_cookies() if c["name"] == "memhub_console"]
    with console.http() as thief:
        thief.cookies.set("memhub_console", session_id)
        for guess in ("/namespaces", "/s/" + "A" * 43 + "/namespaces"):
            page = thief.get(guess)
            assert page.status_code in (303, 403) and "Signed in as" not in page.text, guess
    # A session id shown at another session's URL has leaked: the console ended that session rather than wait.
    browser.get(operator_page)
    assert "/signin" in browser.current_url and who(browser) == ""
