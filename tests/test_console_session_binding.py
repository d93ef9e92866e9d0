"""How the console tells a request belongs to a session, over plain HTTP (memhub/console/binding.py).

A session is its cookie and its page key (/s/<key>/...) together. These tests present each part alone,
one session's cookie at another session's pages, two cookies at once, and pages opened from another
site, and check what the console answers, which sessions end, and which cookies it clears.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from conftest import Fleet
from console_support import RunningConsole, page_base, running_console, sign_in

from memhub.console.throttle import FailureCounts, address_key


@pytest.fixture(scope="module")
def console(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with running_console(fleet, tmp_path_factory) as running:
        yield running


def session_cookie(client) -> str:  # noqa: ANN001 - an httpx client
    (value,) = [c.value for c in client.cookies.jar if c.name == "memhub_console"]
    return value


def test_the_page_key_alone_or_the_cookie_alone_is_no_session(console: RunningConsole) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        base = page_base(http)
        with console.http() as stranger:  # knows the URL (a shared link), not the cookie
            page = stranger.get(base + "/memories")
            assert page.status_code == 303
            # Back to the page after signing in, without the key: `next` never carries it.
            assert page.headers["location"] == "/signin?notice=signin&next=/memories"
        with console.http() as thief:  # has the cookie, not the key
            thief.cookies.set("memhub_console", session_cookie(http))
            assert thief.get("/memories").status_code == 303  # without a prefix: the sign-in form
        assert http.get("/memories").status_code == 200  # the owner, with both, is still signed in


def test_a_sessions_cookie_at_another_sessions_pages_ends_both(console: RunningConsole) -> None:
    with console.sign_in(console.fleet.token("root")) as victim, console.sign_in(console.fleet.token("alice")) as mallory:
        with console.http() as planted:  # the victim's browser, holding the attacker's cookie at the victim's URL
            planted.cookies.set("memhub_console", session_cookie(mallory))
            refused = planted.get(page_base(victim) + "/memories")
        assert refused.status_code == 403 and "Another site on this machine wrote" in refused.text
        assert "Signed in as" not in refused.text
        assert victim.get("/memories").status_code == 303 and mallory.get("/memories").status_code == 303


def test_two_session_cookies_at_once_end_the_session_and_clear_the_planted_ones(console: RunningConsole) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        own = session_cookie(http)
        refused = http.get("/memories", headers={"cookie": f"memhub_console=planted; memhub_console={own}"})
        assert refused.status_code == 403 and "signed you out" in refused.text
        cleared = refused.headers.get_list("set-cookie")
        for path in ("/", "/s", "/s/", page_base(http)):
            assert any(re.match(rf'memhub_console="?"?; .*Max-Age=0; Path={re.escape(path)}(;|$)', c) for c in cleared), path
        assert http.get("/memories").status_code == 303  # the session is over


@pytest.mark.parametrize(
    ("fetch_site", "allowed"), [("same-origin", True), ("none", True), ("same-site", False), ("cross-site", False)]
)
def test_a_session_page_opened_from_another_site_ends_the_session(
    console: RunningConsole, fetch_site: str, allowed: bool
) -> None:
    with console.sign_in(console.fleet.token("root")) as http:
        page = http.get("/memories", headers={"sec-fetch-site": fetch_site})
        if allowed:
            assert page.status_code == 200
        else:  # a link from another port of this host is "same-site": how a planted session would be entered
            assert page.status_code == 403 and "opened from another site" in page.text
            assert http.get("/memories").status_code == 303


def test_signing_in_clears_session_cookies_planted_for_every_sessions_path(console: RunningConsole) -> None:
    with console.http() as http:
        http.cookies.set("memhub_console", "planted", domain="127.0.0.1", path="/")
        response = sign_in(http, console.fleet.token("root"))
        assert "planted" not in [c.value for c in http.cookies.jar]  # the sign-in response expired it
        assert http.get(response.headers["location"]).status_code == 200


def test_failure_counts_stay_bounded_and_ipv6_clients_count_per_64() -> None:
    counts = FailureCounts(limit=1, window_s=60.0, max_keys=3)
    for i in range(10):
        counts.add(f"10.0.0.{i}")
    assert len(counts) == 3 and counts.retry_after("10.0.0.0") == 0  # the oldest were forgotten, never refused
    counts.add("10.0.0.9")
    assert counts.retry_after("10.0.0.9") > 0
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::2") == "2001:db8:1:2::/64"
    assert address_key("::ffff:192.0.2.7") == "192.0.2.7" and address_key("192.0.2.7") == "192.0.2.7"
