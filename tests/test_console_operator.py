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

import pytest
from console_support import RunningConsole, running_console

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
