"""The web console in a real browser: headless Chromium (Debian's package) driven by Selenium.

An operator signs in by pasting a token, browses to a memory, searches with the explain view, finds an
outsider's denied write in the audit log, asks the policy engine, and revokes a token whose next call
is then refused. The browser also shows that stored `<script>` content stays text and runs nothing,
that the CSP blocks injected inline scripts and styles, that the session cookie is invisible to
scripts and SameSite=Strict, and that a form posted from another origin is refused.

Chromium is installed by the fixture when missing (tests/browser_support.py); the tests skip, with the
reason in the summary, only when it cannot be.
"""

from __future__ import annotations

import http.server
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import urlsplit

import grpc
import pytest
from browser_support import headless_browser, submit_and_wait
from conftest import Fleet, eventually
from console_support import RunningConsole, running_console, session_base_of

from memhub.auth import issue_token
from memhub.client import memory_input

OPERATOR_GROUPS = ["admins", "auditors"]  # administers the hub, reads every namespace, changes none
XSS = 'Customer wrote <script>window.__pwned = 1</script>"\'><img src=x onerror="window.__pwned = 2"> in the form'


@pytest.fixture(scope="module")
def console(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with running_console(fleet, tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with headless_browser() as driver:
        yield driver


def operator_token(fleet: Fleet, agent: str = "ops", ttl: timedelta = timedelta(hours=1)) -> str:
    return issue_token(fleet.secret, agent_id=agent, groups=OPERATOR_GROUPS, ttl=ttl).token


def by(kind: str) -> str:
    from selenium.webdriver.common.by import By

    return getattr(By, kind)


def sign_in(driver, console: RunningConsole, token: str) -> None:  # noqa: ANN001
    driver.delete_all_cookies()
    driver.get(console.url + "/signin")
    driver.find_element(by("ID"), "token").send_keys(token)
    submit_and_wait(driver, driver.find_element(by("CSS_SELECTOR"), "form[action='/signin'] button"), "/namespaces")


def at(driver, console: RunningConsole) -> str:  # noqa: ANN001
    """The URL prefix of the signed-in session's pages (/s/<page key>), from the page the browser shows."""
    return console.url + session_base_of(urlsplit(driver.current_url).path)


def main_text(driver) -> str:  # noqa: ANN001
    return driver.find_element(by("TAG_NAME"), "main").text


def test_sign_in_and_browse_from_the_namespace_tree_to_a_memory(browser, console: RunningConsole) -> None:  # noqa: ANN001
    fleet = console.fleet
    leaf = f"b{uuid.uuid4().hex[:8]}"
    with fleet.client("alice") as alice:
        written = alice.write(
            [memory_input(f"teams/support/{leaf}", "The Berlin office printer jams on A3 paper", type="fact", tags=["office"])],
            session_id="shift-42",
        )
    memory = written.results[0].memory
    sign_in(browser, console, operator_token(fleet))
    assert "Signed in as ops (admin)" in browser.find_element(by("CSS_SELECTOR"), "header .who").text
    browser.get(at(browser, console) + "/namespaces?under=teams/support")
    browser.find_element(by("LINK_TEXT"), leaf).click()
    assert f"Memories in teams/support/{leaf}" in main_text(browser)
    browser.find_element(by("PARTIAL_LINK_TEXT"), "Berlin office printer").click()
    page = main_text(browser)
    assert browser.current_url.endswith(f"/memory/{memory.id}")
    assert "The Berlin office printer jams on A3 paper" in page
    assert "alice (trust agent)" in page and "shift-42" in page and memory.source.hub_request_id in page
    # Provenance leads to the decisions of the call that wrote it.
    browser.find_element(by("LINK_TEXT"), "the decisions of that call").click()
    assert "write" in main_text(browser) and f"teams/support/{leaf}" in main_text(browser)


def test_search_shows_each_channels_rank_and_the_priors(browser, console: RunningConsole) -> None:  # noqa: ANN001
    fleet = console.fleet
    ns = f"teams/support/s{uuid.uuid4().hex[:8]}"
    with fleet.client("alice") as alice:
        alice.write(
            [
                memory_input(ns, "Outage ERR-7731: the payments queue stalled after the Kafka upgrade", type="outcome"),
                memory_input(ns, "The cafeteria serves soup on Thursdays", type="fact"),
            ],
            wait_indexed=True,
        )
    sign_in(browser, console, operator_token(fleet))
    browser.get(at(browser, console) + "/search")
    assert browser.find_element(by("ID"), "explain").is_selected()  # explain is on when the page opens
    browser.find_element(by("ID"), "q").send_keys("payments queue stalled ERR-7731")
    browser.find_element(by("ID"), "ns").send_keys(ns)
    submit_and_wait(browser, browser.find_element(by("CSS_SELECTOR"), "form[role='search'] button"), "q=payments")
    headers = [th.text for th in browser.find_elements(by("CSS_SELECTOR"), "table.explain thead th")]
    for column in ("dense", "keyword", "entity", "time", "expansion", "importance", "recency", "use", "type"):
        assert column in headers
    first = browser.find_elements(by("CSS_SELECTOR"), "table.explain tbody tr")[0]
    cells = {h: td.text for h, td in zip(headers, first.find_elements(by("TAG_NAME"), "td"), strict=True)}
    assert "ERR-7731" in cells["Memory"]
    assert cells["dense"].startswith("1") and cells["keyword"].startswith("1")  # both channels ranked it first
    assert "(+0.0" in cells["keyword"] and cells["recency"] != "off"


def test_a_denied_write_appears_in_the_audit_log_with_its_decision(browser, console: RunningConsole) -> None:  # noqa: ANN001
    fleet = console.fleet
    ns = f"teams/support/d{uuid.uuid4().hex[:8]}"
    with fleet.client("eve") as eve, pytest.raises(grpc.RpcError) as denied:
        eve.write([memory_input(ns, "eve tries to write where she may not")])
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    sign_in(browser, console, operator_token(fleet))
    browser.get(at(browser, console) + "/audit")
    browser.find_element(by("ID"), "agent").send_keys("eve")
    browser.find_element(by("ID"), "ns").send_keys(ns)
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(by("ID"), "decision")).select_by_visible_text("deny")
    submit_and_wait(browser, browser.find_element(by("CSS_SELECTOR"), "form[role='search'] button"), "decision=deny")
    rows = browser.find_elements(by("CSS_SELECTOR"), "table.audit tbody tr")
    assert rows, "no denial listed"
    text = rows[0].text
    assert "eve" in text and "write" in text and ns in text and "deny" in text and "default deny" in text
    assert "WriteMemories" in text


def test_the_policy_check_answers_from_the_engine(browser, console: RunningConsole) -> None:  # noqa: ANN001
    sign_in(browser, console, operator_token(console.fleet))
    browser.get(at(browser, console) + "/policies")
    assert "fleet.support-secrets-leads-only" in main_text(browser)
    browser.find_element(by("ID"), "agent").send_keys("lee")
    browser.find_element(by("ID"), "groups").send_keys("support,support-leads")
    browser.find_element(by("ID"), "check-ns").send_keys("teams/support/secrets/keys")
    submit_and_wait(browser, browser.find_element(by("CSS_SELECTOR"), "form[action$='/policies/check'] button"), "/check")
    answer = browser.find_element(by("ID"), "check-answer").text
    assert answer.startswith("Allowed: agent lee") and "fleet.support-leads-curate-support" in answer
    browser.find_element(by("ID"), "groups").clear()
    browser.find_element(by("ID"), "groups").send_keys("support")
    submit_and_wait(browser, browser.find_element(by("CSS_SELECTOR"), "form[action$='/policies/check'] button"), "/check")
    answer = browser.find_element(by("ID"), "check-answer").text
    assert answer.startswith("Denied") and "fleet.support-secrets-leads-only" in answer


def test_revoking_a_token_refuses_its_next_call(browser, console: RunningConsole) -> None:  # noqa: ANN001
    fleet = console.fleet
    target = issue_token(fleet.secret, agent_id="bob", groups=["support"], ttl=timedelta(hours=1))
    with fleet.raw(target.token) as bob:
        assert bob.list(["teams/support"], page_size=1) is not None
    own = operator_token(fleet, agent="ops-leaving")
    sign_in(browser, console, own)
    browser.get(at(browser, console) + "/tokens")
    browser.find_element(by("ID"), "token").send_keys(target.token)
    browser.find_element(by("ID"), "reason").send_keys("bob's laptop was stolen")
    submit_and_wait(browser, browser.find_element(by("CSS_SELECTOR"), "#revoke-form button"), "/revoke")
    assert f"Revoked token {target.jti} (agent bob)" in browser.find_element(by("ID"), "revoke-result").text

    def refused() -> bool:
        with fleet.raw(target.token) as client:
            try:
                client.list(["teams/support"], page_size=1)
            except grpc.RpcError as exc:
                return exc.code() == grpc.StatusCode.UNAUTHENTICATED
        return False

    eventually(refused, "the revoked token is refused", timeout_s=30)

    # Revoking the operator's own token ends the console session at its next page.
    browser.get(at(browser, console) + "/tokens")
    browser.find_element(by("ID"), "token").send_keys(own)
    browser.find_element(by("ID"), "reason").send_keys("rotating")
    submit_and_wait(browser, browser.find_element(by("CSS_SELECTOR"), "#revoke-form button"), "/revoke")

    pages = at(browser, console)

    def signed_out() -> bool:
        browser.get(pages + "/namespaces")
        return "/signin" in browser.current_url

    eventually(signed_out, "the console refuses the revoked session", timeout_s=30)
    assert "refused your token" in main_text(browser)


def test_stored_script_is_shown_as_text_and_never_runs(browser, console: RunningConsole) -> None:  # noqa: ANN001
    fleet = console.fleet
    ns = f"teams/support/x{uuid.uuid4().hex[:8]}"
    with fleet.client("alice") as alice:
        memory = alice.write([memory_input(ns, XSS, type="note")], wait_indexed=True).results[0].memory
    sign_in(browser, console, operator_token(fleet))
    for path in (f"/memory/{memory.id}", f"/memories?ns={ns}", f"/search?q=customer+wrote+form&ns={ns}&explain=on"):
        browser.get(at(browser, console) + path)
        assert browser.execute_script("return window.__pwned") is None, path
        assert browser.execute_script("return document.querySelectorAll('main script, main img').length") == 0
        assert "<script>window.__pwned = 1</script>" in main_text(browser), path
    browser.get(at(browser, console) + f"/memory/{memory.id}")
    shown = browser.execute_script("return document.querySelector('main .content').textContent")
    assert shown == XSS  # exactly the stored text, quotes and all


def test_the_content_security_policy_blocks_injected_inline_script_and_style(browser, console: RunningConsole) -> None:  # noqa: ANN001
    sign_in(browser, console, operator_token(console.fleet))
    browser.get(at(browser, console) + "/namespaces")
    ran = browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
        "document.body.appendChild(s); return window.__inline === undefined ? 'blocked' : 'ran';"
    )
    assert ran == "blocked"
    background = browser.execute_script(
        "const s = document.createElement('style'); s.textContent = 'body { background: rgb(255, 0, 0) !important; }';"
        "document.head.appendChild(s); return getComputedStyle(document.body).backgroundColor;"
    )
    assert background != "rgb(255, 0, 0)"
    css = browser.execute_script("return getComputedStyle(document.querySelector('header.top')).display")
    assert css == "flex"  # the console's own stylesheet is applied


def test_the_session_cookie_is_httponly_and_samesite_strict(browser, console: RunningConsole) -> None:  # noqa: ANN001
    token = operator_token(console.fleet)
    sign_in(browser, console, token)
    cookies = {c["name"]: c for c in browser.get_cookies()}
    session = cookies["memhub_console"]
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    assert session["path"] == session_base_of(urlsplit(browser.current_url).path)  # sent to this session's pages only
    assert session["expiry"] <= time.time() + 3600 + 5  # ends with the token
    assert browser.execute_script("return document.cookie") == ""  # invisible to scripts
    assert token not in browser.page_source


class _Attacker(http.server.BaseHTTPRequestHandler):
    """Another origin on this machine serving a form aimed at the console (no CSRF token: it cannot read one)."""

    target = ""
    token_id = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = (
            f'<form method="post" action="{self.target}/tokens/revoke">'
            f'<input type="hidden" name="token" value="{self.token_id}">'
            '<input type="hidden" name="reason" value="csrf"><button id="go">win a prize</button></form>'
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_form_posted_from_another_origin_is_refused(browser, console: RunningConsole) -> None:  # noqa: ANN001
    fleet = console.fleet
    victim = issue_token(fleet.secret, agent_id="alice", groups=["support"], ttl=timedelta(hours=1))
    sign_in(browser, console, operator_token(fleet))  # the operator is signed in: its cookie exists
    # The worst case: the attacker knows the session's page key too; only the CSRF token stands in the way.
    handler = type("Attacker", (_Attacker,), {"target": at(browser, console), "token_id": victim.jti})
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.1:{attacker.server_address[1]}/")
        submit_and_wait(browser, browser.find_element(by("ID"), "go"), console.url)
        # Same site (another port of 127.0.0.1), so SameSite let the session cookie through: the CSRF token stops it.
        assert "CSRF token is missing or wrong" in main_text(browser)
    finally:
        attacker.shutdown()
        attacker.server_close()
    time.sleep(2.5)  # longer than revocations take to reach every replica: the token must still work
    with fleet.raw(victim.token) as client:
        assert client.list(["teams/support"], page_size=1) is not None


def test_every_page_has_landmarks_one_heading_and_a_label_for_every_field(browser, console: RunningConsole) -> None:  # noqa: ANN001
    from selenium.webdriver.common.keys import Keys

    sign_in(browser, console, operator_token(console.fleet))
    pages = ("/namespaces", "/memories", "/search?q=cache&explain=on", "/audit", "/policies", "/tokens", "/health", "/retrieval")
    for path in pages:
        browser.get(at(browser, console) + path)
        report = browser.execute_script(
            "const fields = [...document.querySelectorAll('input:not([type=hidden]), select, textarea')];"
            "return {unlabelled: fields.filter(f => f.labels.length === 0 && !f.getAttribute('aria-label')).map(f => f.name),"
            " h1: document.querySelectorAll('h1').length, main: document.querySelectorAll('main').length,"
            " nav: document.querySelectorAll('nav[aria-label]').length, lang: document.documentElement.lang,"
            " current: [...document.querySelectorAll('nav a[aria-current=page]')].map(a => a.textContent)};"
        )
        assert report["unlabelled"] == [], (path, report)
        assert report["h1"] == 1 and report["main"] == 1 and report["nav"] >= 1 and report["lang"] == "en", (path, report)
        assert len(report["current"]) == 1, (path, report)
    # Keyboard: the first Tab reaches the skip link, Enter moves to the content.
    browser.get(at(browser, console) + "/audit")
    browser.find_element(by("TAG_NAME"), "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.text == "Skip to content"
    focused.send_keys(Keys.ENTER)
    assert browser.execute_script("return document.activeElement.id") == "main"
