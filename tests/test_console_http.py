"""The web console over plain HTTP, in front of a real hub with the shipped policies (the fleet):
sign-in and sessions, cookie attributes, CSRF, security headers, escaping, input validation, and
that every page shows what the hub answers the operator's own token.

What a browser does with these pages (scripts, cookies, forms) is in test_console_browser.py.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import grpc
import httpx
import pytest
from conftest import Fleet
from console_support import RunningConsole, csrf_of, page_base, running_console, session_base_of, sign_in

from memhub.auth import issue_token
from memhub.client import memory_input
from memhub.console.config import ConsoleConfig
from memhub.console.security import CONTENT_SECURITY_POLICY
from memhub.console.sessions import SessionStore
from memhub.v1 import admin_pb2 as apb


@pytest.fixture(scope="module")
def console(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with running_console(fleet, tmp_path_factory) as running:
        yield running


XSS = '<script>window.__pwned = 1</script>"\'><img src=x onerror="window.__pwned = 2"> & <b>bold</b>'


def test_every_response_carries_the_security_headers(console: RunningConsole) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        for path in ("/namespaces", "/audit", "/no-such-page", console.url + "/signin", console.url + "/no-such-page"):
            response = http.get(path)
            assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
            assert "script-src" not in CONTENT_SECURITY_POLICY and "default-src 'none'" in CONTENT_SECURITY_POLICY
            assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["x-frame-options"] == "DENY"
            assert response.headers["referrer-policy"] == "same-origin"
            assert response.headers["cache-control"] == "no-store", path
        css = http.get(console.url + "/static/console.css")
        assert css.status_code == 200 and css.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_sign_in_sets_an_httponly_strict_cookie_and_never_returns_the_token(console: RunningConsole) -> None:
    issued = issue_token(console.fleet.secret, agent_id="root", groups=["admins"], ttl=timedelta(minutes=20))
    with console.http() as http:
        response = sign_in(http, issued.token)
        base = session_base_of(response.headers["location"])
        assert response.status_code == 303 and response.headers["location"] == base + "/namespaces"
        (cookie,) = [c for c in response.headers.get_list("set-cookie") if re.match(r"memhub_console=[A-Za-z0-9_-]", c)]
        attributes = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")}
        assert "httponly" in attributes and attributes["samesite"].lower() == "samesite=strict"
        # Only the session's own pages get it (memhub/console/binding.py); plain http on loopback: not Secure.
        assert attributes["path"] == f"Path={base}" and "secure" not in attributes
        max_age = int(attributes["max-age"].split("=")[1])
        assert 0 < max_age <= 20 * 60  # the session ends with the token
        session_id = cookie.split(";")[0].split("=", 1)[1]
        assert len(session_id) >= 40 and issued.token not in cookie
        for path in ("/namespaces", "/memories", "/policies", "/tokens", "/health", "/retrieval", "/audit"):
            page = http.get(base + path)
            assert page.status_code == 200, (path, page.text[:500])
            assert issued.token not in page.text and issued.token.split(".")[2] not in page.text
            assert "Signed in as <strong>root</strong> (admin)" in page.text


def test_a_bad_or_refused_token_gets_no_session(console: RunningConsole) -> None:
    fleet = console.fleet
    wrong_secret = issue_token(b"x" * 32, agent_id="root", groups=["admins"], ttl=timedelta(hours=1)).token
    expired = issue_token(fleet.secret, agent_id="root", groups=["admins"], ttl=timedelta(seconds=1), now=None)
    with console.http() as http:
        for token, status, says in (
            ("not a token", 400, "is not a JWT"),
            (wrong_secret, 401, "The hub refused the token"),
        ):
            response = sign_in(http, token)
            assert response.status_code == status and says in response.text
            assert "memhub_console=" not in response.headers.get("set-cookie", "")
        time.sleep(1.5)  # let the one-second token lapse
        response = sign_in(http, expired.token)
        assert response.status_code == 400 and "has expired" in response.text
        assert http.get("/memories").status_code == 303


def test_state_changing_posts_need_the_sessions_csrf_token_and_the_same_origin(console: RunningConsole) -> None:
    fleet = console.fleet
    victim = issue_token(fleet.secret, agent_id="alice", groups=["support"], ttl=timedelta(hours=1))
    with console.sign_in(fleet.token("root")) as http:
        good = csrf_of(http.get("/tokens").text)
        form = {"token": victim.jti, "reason": "csrf test"}
        refused = [
            http.post("/tokens/revoke", data=form),  # no token
            http.post("/tokens/revoke", data={**form, "csrf": "0" * 64}),  # a wrong one
            http.post("/tokens/revoke", data={**form, "csrf": good}, headers={"origin": "http://evil.example"}),
            http.post("/tokens/revoke", data={**form, "csrf": good}, headers={"sec-fetch-site": "cross-site"}),
            http.post("/signout", data={"csrf": ""}),
        ]
        assert [r.status_code for r in refused] == [403] * 5
        assert all("CSRF" in r.text for r in refused)
        with console.sign_in(fleet.token("root")) as other:  # another session's token does not fit this one
            other_csrf = csrf_of(other.get("/tokens").text)
            assert http.post("/tokens/revoke", data={**form, "csrf": other_csrf}).status_code == 403
        assert http.get("/memories").status_code == 200  # still signed in: the refused sign-out did nothing
    with fleet.raw(victim.token) as client:  # and the token was never revoked
        assert client.list(["teams/support"]) is not None
    with console.http() as anonymous:  # the sign-in form is bound to its own pre-sign-in cookie
        anonymous.get("/signin")
        assert anonymous.post("/signin", data={"token": fleet.token("root")}).status_code == 403


def test_revoking_a_token_refuses_its_next_call_and_ends_its_console_session(console: RunningConsole) -> None:
    fleet = console.fleet
    target = issue_token(fleet.secret, agent_id="bob", groups=["support"], ttl=timedelta(hours=1))
    with console.sign_in(target.token) as bob_session, console.sign_in(fleet.token("root")) as http:
        assert bob_session.get("/memories").status_code == 200
        reply = http.post(
            "/tokens/revoke", data={"csrf": csrf_of(http.get("/tokens").text), "token": target.token, "reason": "left"}
        )
        assert reply.status_code == 200 and f'Revoked token <span class="id">{target.jti}</span>' in reply.text
        assert "(agent bob)" in reply.text and target.token not in reply.text

        def refused() -> bool:
            with fleet.raw(target.token) as client:
                try:
                    client.list([])
                except grpc.RpcError as exc:
                    return exc.code() == grpc.StatusCode.UNAUTHENTICATED
            return False

        deadline = time.monotonic() + 30
        while not refused():
            assert time.monotonic() < deadline, "the revoked token is still accepted"
            time.sleep(0.1)
        page = bob_session.get("/memories")
        assert page.status_code == 303 and page.headers["location"].startswith("/signin?notice=refused")
        assert bob_session.get("/memories").headers["location"].startswith("/signin")  # the session is gone
        again = http.post(
            "/tokens/revoke", data={"csrf": csrf_of(http.get("/tokens").text), "token": target.jti, "reason": "again"}
        )
        assert "was already revoked" in again.text


def test_memory_content_is_escaped_text_everywhere_it_is_shown(console: RunningConsole) -> None:
    fleet = console.fleet
    ns = f"agents/root/xss-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        memory = root.write([memory_input(ns, XSS, type="fact")], wait_indexed=True).results[0].memory
    with console.sign_in(fleet.token("root")) as http:
        pages = [
            http.get(f"/memory/{memory.id}").text,
            http.get("/memories", params={"ns": ns}).text,
            http.get("/search", params={"q": "window pwned bold", "ns": ns, "explain": "on"}).text,
        ]
    for html in pages:
        assert memory.id in html
        assert "<script>" not in html and "<img" not in html and "<b>" not in html
        assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
        assert "onerror=&#34;window.__pwned = 2&#34;" in html  # quotes cannot end an attribute
        assert "&lt;b&gt;bold&lt;/b&gt;" in html and "&amp;" in html


def test_the_explain_view_shows_the_multilingual_channel_of_a_chinese_search(console: RunningConsole) -> None:
    fleet = console.fleet
    ns = f"agents/root/zh-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        root.write([memory_input(ns, t, type="fact") for t in ("小雨对花生过敏。", "小雨养了一只橘猫。")], wait_indexed=True)
    with console.sign_in(fleet.token("root")) as http:
        html = http.get("/search", params={"q": "小雨对什么过敏？", "ns": ns, "explain": "on"}).text
    header = html[html.index("<thead") : html.index("</thead>")]
    columns = re.findall(r"<th[^>]*>(.*?)</th>", header)
    row = next(tr for tr in html[html.index("<tbody") :].split("<tr>") if "小雨对花生过敏" in tr)
    cells = re.findall(r"<td>(.*?)</td>", row, re.S)
    assert '<span class="rank">' in cells[columns.index("multilingual")]  # ranked in that channel, not "–"


def test_invisible_characters_in_content_are_shown_as_escapes(console: RunningConsole) -> None:
    fleet = console.fleet
    ns = f"agents/root/bidi-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        memory = root.write([memory_input(ns, "pay to \u202eevil\u202c account, bell \x07 here", type="fact")])
    with console.sign_in(fleet.token("root")) as http:
        html = http.get(f"/memory/{memory.results[0].memory.id}").text
    assert "\u202e" not in html and "\\u202e" in html and "\\x07" in html


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/memories", {"kind": "dreams"}, "kind"),
        ("/memories", {"ns": "Teams/Support"}, "ns"),
        ("/memories", {"page_size": "100000"}, "page_size"),
        ("/memories", {"page_size": "ten"}, "page_size"),
        ("/memories", {"created_from": "yesterday"}, "created_from"),
        ("/memories", {"created_from": "2026-02-01T00:00", "created_to": "2026-01-01T00:00"}, "created_to"),
        ("/memories", {"tag": "has space"}, "tag"),
        ("/memories", {"color": "blue"}, "color"),
        ("/memories", {"page_token": "<not a token>"}, "page_token"),
        ("/search", {"q": "x", "top_k": "101"}, "top_k"),
        ("/search", {"q": "x", "channel": "telepathy"}, "channel"),
        ("/search", {"q": "x", "explain": "yes"}, "explain"),
        ("/search", {"q": "x" * 4097}, "q"),
        ("/audit", {"decision": "maybe"}, "decision"),
        ("/audit", {"since": "2026-13-01T00:00"}, "since"),
        ("/audit", {"agent": "a\u2028b"}, "agent"),
        ("/audit", {"hub_request_id": "nope"}, "hub_request_id"),
        ("/namespaces", {"under": "../etc"}, "under"),
        ("/retrieval", {"scope": "everyone"}, "scope"),
    ],
)
def test_every_parameter_is_checked_and_a_refusal_names_it(console: RunningConsole, path: str, params: dict, field: str) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        response = http.get(path, params=params)
    assert response.status_code == 400, response.text[:300]
    assert f"{field}: " in response.text


def test_oversized_or_malformed_requests_are_refused(console: RunningConsole) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        csrf = csrf_of(http.get("/policies").text)
        assert http.get("/memories?" + "ns=a&" * 2000).status_code == 400  # query string over 8 KiB
        assert http.get("/memories?kind=episodic&ns=a&ns=b").status_code == 400  # a repeated single value
        big = http.post("/policies/check", data={"csrf": csrf, "agent": "x" * 70_000, "action": "read", "ns": "a"})
        assert big.status_code == 400 and "larger than" in big.text
        as_json = http.post("/policies/check", json={"csrf": csrf})
        assert as_json.status_code == 400 and "must be a form" in as_json.text
        assert http.get("/memory/not-a-uuid").status_code == 400
    with httpx.Client(base_url=console.url) as raw:  # DNS rebinding: another host name is refused
        assert raw.get("/signin", headers={"host": "evil.example"}).status_code == 400
        assert raw.get("/signin", headers={"host": "[::2]:8080"}).status_code == 400
        # The loopback names as browsers send them, IPv6 literal in brackets, with or without a port.
        for host in ("127.0.0.1", "localhost:8080", "[::1]", "[::1]:8080"):
            assert raw.get("/signin", headers={"host": host}).status_code == 200, host


def test_pages_show_what_the_operators_own_token_may_see(console: RunningConsole) -> None:
    fleet = console.fleet
    tag = uuid.uuid4().hex[:8]
    with fleet.client("dave") as dave:
        dave.write([memory_input(f"teams/support/secrets/{tag}", f"The vault code is {tag}", type="fact")])
        dave.write([memory_input(f"teams/support/{tag}", f"Tickets close within {tag} hours", type="fact")])
    with console.sign_in(fleet.token("alice")) as alice:  # support: reads teams/support, not its secrets
        listing = alice.get("/memories", params={"ns": "teams/support"}).text
        assert f"Tickets close within {tag} hours" in listing and f"The vault code is {tag}" not in listing
        assert "(admin)" not in listing
        audit = alice.get("/audit")
        assert audit.status_code == 403 and "permission denied" in audit.text and "admin" in audit.text
        assert alice.get("/").headers["location"].endswith("/memories")
    with console.sign_in(fleet.token("root")) as root:
        tree = root.get("/namespaces", params={"under": "teams/support"}).text
        assert f'href="{page_base(root)}/memories?ns=teams/support/secrets/{tag}"' in tree
        assert f"teams/support/{tag}" not in tree or f">{tag}</a>" in tree


def test_the_namespace_tree_counts_memories_here_and_below(console: RunningConsole) -> None:
    fleet = console.fleet
    base = f"agents/root/tree-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        root.write([memory_input(f"{base}/a", f"alpha fact {i}", type="fact") for i in range(2)])
        root.write([memory_input(f"{base}/a/deep", "a deeper fact", type="fact")])
        root.write([memory_input(f"{base}/b", "bravo fact", type="fact")])
    with console.sign_in(fleet.token("root")) as http:
        html = http.get("/namespaces", params={"under": base}).text
    leaf = base.rsplit("/", 1)[1]
    assert f'>{leaf}</a>\n    <span class="count" title="memories here and below">4</span>' in html
    assert '>a</a>\n    <span class="count" title="memories here and below">3</span>' in html
    assert "(2 here," in html and "(1 here," in html
    assert "4 stored memories" in html


def test_the_policy_check_asks_the_engine_and_is_audited(console: RunningConsole) -> None:
    fleet = console.fleet
    with console.sign_in(fleet.token("root")) as http:
        csrf = csrf_of(http.get("/policies").text)
        denied = http.post(
            "/policies/check",
            data={"csrf": csrf, "agent": "sue", "groups": "support", "action": "read", "ns": "teams/support/secrets/x"},
        )
        assert denied.status_code == 200 and "<strong>Denied</strong>" in denied.text
        assert "fleet.support-secrets-leads-only" in denied.text
        allowed = http.post(
            "/policies/check", data={"csrf": csrf, "agent": "ops", "groups": "admins", "action": "admin", "ns": ""}
        )
        assert "<strong>Allowed</strong>" in allowed.text and "default.admins-administer-hub" in allowed.text
        bad = http.post("/policies/check", data={"csrf": csrf, "agent": "sue", "action": "fly", "ns": "a"})
        assert bad.status_code == 400 and "action: " in bad.text
    with fleet.client("root") as root:
        deadline = time.monotonic() + 30
        while True:
            entries = root.call_admin(
                "QueryAuditLog", apb.QueryAuditLogRequest(action="check", namespace="teams/support/secrets/x")
            ).entries
            if entries:
                break
            assert time.monotonic() < deadline, "the check was not audited"
            time.sleep(0.1)
    assert entries[0].detail["agent"] == "sue" and entries[0].detail["answer"] == "deny"


def test_the_token_file_signs_in_through_the_secret_link_only(console: RunningConsole) -> None:
    link = console.server.local_signin_url()
    assert link and "key=" in link
    with console.http() as http:
        assert http.get("/signin/local", params={"key": "wrong"}).status_code == 403
        page = http.get(link.removeprefix(console.url))
        assert page.status_code == 200 and str(console.token_file) in page.text
        assert console.fleet.token("root")[:20] not in page.text
        key = link.split("key=")[1]
        assert http.post("/signin/local", data={"key": key}).status_code == 403  # no CSRF token
        response = http.post("/signin/local", data={"key": key, "csrf": csrf_of(page.text)})
        assert response.status_code == 303
        assert "Signed in as <strong>root</strong>" in http.get(response.headers["location"]).text


def test_sign_out_ends_the_session(console: RunningConsole) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        page = http.get("/health")
        assert page.status_code == 200
        out = http.post("/signout", data={"csrf": csrf_of(page.text)})
        assert out.status_code == 303 and out.headers["location"] == "/signin?notice=signed-out"
        assert http.get("/health").status_code == 303


def test_sessions_end_at_the_tokens_expiry_when_idle_and_past_the_cap() -> None:
    store = SessionStore(idle_timeout_s=0.2, max_sessions=2)
    lapsed = store.create("t", "a", (), False, expires_at=time.time() - 1)
    assert store.get(lapsed.id) is None
    idle = store.create("t", "a", (), False, expires_at=time.time() + 3600)
    time.sleep(0.3)
    assert store.get(idle.id) is None
    first, second, third = (store.create("t", f"a{i}", (), False, time.time() + 3600) for i in range(3))
    assert store.get(first.id) is None and store.get(second.id) and store.get(third.id)  # least recently used went
    assert store.get("x" * 500) is None and store.get(None) is None


def test_a_long_list_pages_with_its_filters_kept(console: RunningConsole) -> None:
    fleet = console.fleet
    ns = f"agents/root/pages-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        for i in range(3):
            root.write([memory_input(ns, f"paged fact number {i}", type="fact", tags=["paging"])])
    with console.sign_in(fleet.token("root")) as http:
        first = http.get("/memories", params={"ns": ns, "tag": "paging", "page_size": "2"}).text
        memory_link = f'<a href="{page_base(http)}/memory/'
        assert first.count(memory_link) == 2 and "paged fact number 2" in first
        link = re.search(r'<a rel="next" href="([^"]+)"', first).group(1).replace("&amp;", "&")
        assert "tag=paging" in link and "page_size=2" in link and f"ns={ns}" in link.replace("%2F", "/")
        second = http.get(console.url + link).text
        assert second.count(memory_link) == 1 and "paged fact number 0" in second
        assert "No more results." in second and "First page" in second


def test_a_memory_page_shows_its_supersede_history_links_and_tombstone(console: RunningConsole) -> None:
    fleet = console.fleet
    ns = f"agents/root/hist-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        old = root.write([memory_input(ns, "The on-call phone is 555-0100", type="fact", subject_key="ops/phone")])
        new = root.write([memory_input(ns, "The on-call phone is 555-0199", type="fact", subject_key="ops/phone")])
        gone = root.write([memory_input(ns, "The staging password hint is blue", type="fact")])
        old_id, new_id, gone_id = (r.results[0].memory.id for r in (old, new, gone))
        root.forget(ids=[gone_id], reason="hints are not kept")
    with console.sign_in(fleet.token("root")) as http:
        current = http.get(f"/memory/{new_id}").text
        assert "Versions of subject ops/phone, oldest first" in current
        assert current.index("555-0100") < current.index("this one")  # oldest first, this version marked
        assert f'href="{page_base(http)}/memory/{old_id}"' in current and "Supersedes" in current
        previous = http.get(f"/memory/{old_id}").text
        assert "status <strong>superseded</strong>" in previous and "Superseded by" in previous
        assert f'href="{page_base(http)}/memory/{new_id}"' in previous
        tomb = http.get(f"/memory/{gone_id}").text
        assert "Tombstone" in tomb and "hints are not kept" in tomb and "(erased)" in tomb
        assert "password hint is blue" not in tomb


def test_accepted_host_names_cover_ipv6_literals_in_the_form_browsers_send() -> None:
    config = ConsoleConfig.from_env({"MEMHUB_CONSOLE_HOST": "::", "MEMHUB_CONSOLE_ALLOWED_HOSTS": "fe80::1, Proxy.Example"})
    hosts = config.accepted_hosts()
    assert {"[::1]", "[fe80::1]", "proxy.example", "127.0.0.1", "localhost"} <= set(hosts)
    assert "::" not in hosts and "[::]" not in hosts and not any(":" in h and not h.startswith("[") for h in hosts)
