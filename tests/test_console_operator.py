"""The console as the README's operator sees it (issue 24): the search explain table shows what placed each hit,
an empty page says when the policies are why, and the Tokens page lists, issues and revokes tokens.

A console in front of the fleet's hub (policies/default.cedar + examples/fleet.cedar), driven over HTTP with
the console test helpers, as an operator with the README's groups (admins, auditors) and as others.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import timedelta

import grpc
import pytest
from console_support import RunningConsole, csrf_of, running_console

from memhub.auth import issue_token
from memhub.client import memory_input

OPERATOR = ("admins", "auditors")


@pytest.fixture(scope="module")
def console(fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:  # noqa: ANN001
    with running_console(fleet, tmp_path_factory) as running:
        yield running


def _token(console: RunningConsole, agent: str, groups: tuple[str, ...], ttl: timedelta = timedelta(hours=1)) -> str:
    return issue_token(console.fleet.secret, agent_id=agent, groups=list(groups), ttl=ttl).token


def _cells(html: str, row_id: str) -> list[str]:
    row = re.search(rf'<tr id="{re.escape(row_id)}">(.*?)</tr>', html, re.S)
    assert row, f"no row {row_id}"
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


# -- search: what placed each hit -----------------------------------------------------------------------------


def test_the_explain_table_shows_the_stage_and_positions_that_placed_each_hit(console: RunningConsole) -> None:
    ns = f"teams/support/p{uuid.uuid4().hex[:8]}"
    with console.fleet.client("dave") as dave:
        texts = ["Refunds above 500 EUR need a lead", "Refund requests are answered within a day", "Lunch is at noon"]
        dave.write([memory_input(ns, t) for t in texts], wait_indexed=True)
    with console.sign_in(_token(console, "ops", OPERATOR)) as http:
        html = http.get("/search", params={"q": "who approves refunds?", "ns": ns, "explain": "on"}).text
    assert '<th scope="col" title="the stage whose order placed this hit">placed by</th>' in html
    assert re.search(r'<p class="notice" id="order">Order: hits 1-3 by the reranker&#39;s order', html), html[-3000:]
    rows = re.findall(r"<tr>\s*<td>(\d+)</td>.*?</tr>", html, re.S)
    assert rows == ["1", "2", "3"]
    for rank, row in enumerate(re.findall(r"<tr>\s*<td>\d+</td>(.*?)</tr>", html, re.S), start=1):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        placed_by, fused, priors, rerank = cells[-4:]
        assert placed_by == "rerank" and rerank.startswith(f"{rank} (") and re.fullmatch(r"\d \(.+\)", fused)
        assert re.fullmatch(r"\d", priors)

    with console.sign_in(_token(console, "ops", OPERATOR)) as http:
        plain = http.get("/search", params={"q": "who approves refunds?", "ns": ns}).text  # Explain unticked
    assert "the stage whose order placed this hit" not in plain and len(re.findall(r"<tr>\s*<td>\d+</td>", plain)) == 3
    # Its Score column need not be in the hits' order: the page says what decided the order instead.
    assert re.search(r'<p class="notice" id="order">The hits are in the order of the last ranking stage', plain)


# -- an empty page says when the policies are why ------------------------------------------------------------


def _namespace_count(console: RunningConsole, under: str) -> int:
    from memhub.v1 import admin_pb2 as apb

    with console.fleet.client("root") as root:
        return len(root.call_admin("ListNamespaces", apb.ListNamespacesRequest(under=under, page_size=1000)).namespaces)


def _note(html: str) -> str:
    found = re.search(r'<p class="notice" id="policy-note">(.*?)</p>', html, re.S)
    assert found, "the page has no policy note"
    return found.group(1).replace("&#39;", "'")


def test_an_admin_who_may_read_nothing_is_told_so_with_the_counts_it_already_sees(console: RunningConsole) -> None:
    agent = f"ops-{uuid.uuid4().hex[:6]}"  # admins only: administers the hub, reads no memory (not even its own: none)
    # A subtree of its own: other tests on this worker's fleet hub add namespaces under teams/support (some of them
    # forbidden to all but leads), which would change the note's counts and the policies it names.
    root = f"teams/support/e{uuid.uuid4().hex[:8]}"
    with console.fleet.client("dave") as dave:
        dave.write([memory_input(f"{root}/escalations", "Escalations go to the lead on duty")])
    count = _namespace_count(console, root)
    assert count >= 1
    with console.sign_in(_token(console, agent, ("admins",))) as http:
        memories = http.get("/memories", params={"ns": root}).text
        search = http.get("/search", params={"q": "escalations", "ns": root, "explain": "on"}).text
        tree = http.get("/namespaces", params={"under": root}).text
    expected = f"Your policies let you read 0 of {count} namespaces under {root}/ (default deny: no policy permits it)."
    assert "No memories match." in memories and _note(memories) == expected
    assert "No hits." in search and _note(search) == expected
    assert _note(tree).startswith(expected) and "the Memories and Search pages show only what you may read" in _note(tree)


def test_a_forbid_is_named_when_it_is_why(console: RunningConsole) -> None:
    with console.fleet.client("dave") as dave:  # a support lead may write the secrets
        dave.write([memory_input(f"teams/support/secrets/s{uuid.uuid4().hex[:8]}", "The vault opens with the red key")])
    count = _namespace_count(console, "teams/support/secrets")
    with console.sign_in(_token(console, f"ops-{uuid.uuid4().hex[:6]}", OPERATOR)) as http:  # auditors read all but secrets
        page = http.get("/memories", params={"ns": "teams/support/secrets"}).text
        readable = http.get("/namespaces", params={"under": "teams/support"}).text
    assert _note(page) == (
        f"Your policies let you read 0 of {count} namespaces under teams/support/secrets/ "
        f"({count} forbidden by fleet.support-secrets-leads-only)."
    )
    total = _namespace_count(console, "teams/support")
    assert _note(readable).startswith(
        f"Your policies let you read {total - count} of {total} namespaces under teams/support/ "
        f"(permitted by fleet.auditors-read-everything; denied: {count} forbidden by fleet.support-secrets-leads-only)."
    )


def test_an_agent_is_told_the_policies_decide_and_nothing_about_what_exists(console: RunningConsole) -> None:
    agent = f"eve-{uuid.uuid4().hex[:6]}"
    with console.sign_in(_token(console, agent, ("write-only",))) as http:
        page = http.get("/memories", params={"ns": "teams/support"}).text
        search = http.get("/search", params={"q": "escalations", "ns": "teams/support"}).text
        tree = http.get("/namespaces")
        audit = http.get("/audit")
    note = _note(page)
    assert note == (
        f"The hub's policies decide what your token may read (agent {agent}, groups write-only); nothing you may read "
        "matches. An admin can check what you may read on the Policies page."
    )
    assert _note(search) == note and not re.search(r"\d", note.replace(agent, ""))  # no count of anything
    for refused in (tree, audit):
        assert refused.status_code == 403
        assert (
            f"This page is for admins, and the hub&#39;s policies do not give your token (agent {agent}, groups "
            "write-only) the admin right." in refused.text
        )


# -- tokens: list, issue, revoke ------------------------------------------------------------------------------


def test_the_tokens_page_lists_a_token_signed_elsewhere_once_used(console: RunningConsole) -> None:
    agent = f"cli-{uuid.uuid4().hex[:6]}"
    signed = issue_token(console.fleet.secret, agent_id=agent, groups=["support"], ttl=timedelta(hours=3))
    with console.fleet.raw(signed.token) as user:
        user.search("anything", ["teams/support"])
    with console.sign_in(_token(console, "ops", OPERATOR)) as http:
        page = http.get("/tokens", params={"agent": agent})
    assert page.status_code == 200
    cells = _cells(page.text, f"token-{signed.jti}")
    assert cells[:3] == [signed.jti, agent, "support"]
    assert cells[3] == signed.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert cells[4].startswith("20") and "first 20" in cells[4]  # last and first use
    assert cells[5].startswith("signed elsewhere; first seen") and cells[6] == "active"
    assert signed.token not in page.text


def test_issuing_shows_the_token_once_and_lists_it_and_it_works_until_revoked(console: RunningConsole) -> None:
    agent = f"new-{uuid.uuid4().hex[:6]}"
    with console.sign_in(_token(console, "ops", (*OPERATOR, "token-issuers"))) as http:
        form = http.get("/tokens")
        issued = http.post(
            "/tokens/issue",
            data={"csrf": csrf_of(form.text), "agent": agent, "groups": "support", "ttl": "8h", "note": "onboarding"},
        )
        assert issued.status_code == 200, issued.text[-2000:]
        token = re.search(r'<textarea id="issued-token"[^>]*>([^<]+)</textarea>', issued.text).group(1)
        token_id = re.search(r"Its id is <span class=\"id\">([0-9a-f]{32})</span>", issued.text).group(1)
        assert _cells(issued.text, f"token-{token_id}")[:3] == [token_id, agent, "support"]
        assert _cells(issued.text, f"token-{token_id}")[5].startswith("by ops")
        with console.fleet.raw(token) as new:
            assert new.write([memory_input(f"teams/support/{agent}", "Onboarding starts with the runbook")]).results
        listed = http.get("/tokens", params={"agent": agent}).text
        assert token not in listed and token_id in listed  # shown once: never again
        revoked = http.post("/tokens/revoke", data={"csrf": csrf_of(listed), "token": token_id, "reason": "left the team"}).text
        assert f'Revoked token <span class="id">{token_id}</span>' in revoked
        assert _cells(revoked, f"token-{token_id}")[6].startswith("revoked")
    with console.fleet.raw(token) as new, pytest.raises(grpc.RpcError):
        new.search("runbook", [f"teams/support/{agent}"])


def test_issuing_without_the_right_is_refused_and_says_why(console: RunningConsole) -> None:
    with console.sign_in(_token(console, "ops", OPERATOR)) as http:
        form = http.get("/tokens")
        refused = http.post("/tokens/issue", data={"csrf": csrf_of(form.text), "agent": "someone", "groups": "admins"})
        bad = http.post("/tokens/issue", data={"csrf": csrf_of(form.text), "agent": "someone", "ttl": "forever"})
        nameless = http.post("/tokens/issue", data={"csrf": csrf_of(form.text), "agent": "not an id"})
    assert refused.status_code == 403 and "Issuing tokens needs the issue_token right as well as admin" in refused.text
    assert bad.status_code == 400 and "ttl" in bad.text and "forever" in bad.text
    assert nameless.status_code == 400 and "agent_id" in nameless.text
