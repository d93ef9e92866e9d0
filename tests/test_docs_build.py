"""The documentation site: `mkdocs build --strict` as a reader gets it, and what the built pages state.

The build fails on a broken link or anchor, a page missing from the nav, or a generator that cannot run
(scripts/docsgen/hooks.py), so this test is the gate for all of them. The MCP pages are checked against the
bridge's own tool list, taken here with the SDK's in-memory client, independently of the generator.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from memhub.bridge import BridgeSettings, build_bridge

REPO = Path(__file__).resolve().parent.parent
MKDOCS = [sys.executable, "-m", "mkdocs"]
NUMBER_WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
NUMBER_WORDS |= {"thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18}


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # Material prints a banner about MkDocs 2.0 on every build unless told not to: noise in a failure report.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [*MKDOCS, "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("site")
    done = build(REPO / "mkdocs.yml", out)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    yield out


def page_text(site: Path, page: str) -> str:
    """The visible text of a built page's article (tags dropped, entities decoded, spaces collapsed)."""
    raw = (site / page / "index.html").read_text()
    article = raw[raw.index("<article") : raw.index("</article>")]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", article)).split())


def bridge_tools() -> list[str]:
    """The tool names a real bridge lists to an MCP client (nothing narrowed away; no hub needed to list)."""

    async def listing() -> list[str]:
        with build_bridge(BridgeSettings(hub_address="127.0.0.1:1", token="listing.only.token")) as bridge:
            async with Client(bridge.server) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    return asyncio.run(listing())


def test_the_site_builds_strict_with_every_generated_reference(site: Path) -> None:
    cli = page_text(site, "reference/cli")
    for command in ("memhub serve", "memhub search", "memhub bridge init", "memhub admin limits", "--min-relevance"):
        assert command in cli, command
    config = page_text(site, "reference/configuration")
    for name in ("MEMHUB_PORT", "MEMHUB_DATA_DIR", "MEMHUB_CONSOLE_PORT", "MEMHUB_TOKEN", "MEMHUB_SESSION_MAX_KEYS"):
        assert name in config, name
    assert "0 to 65,535" in config  # MEMHUB_PORT's range, read from the code's env_int call
    metrics = page_text(site, "reference/metrics")
    for name in ("memhub_rpc_requests_total", "memhub_index_lag_seconds", "memhub_memories", "agent-rate"):
        assert name in metrics, name
    api = page_text(site, "reference/grpc/memory")
    assert "WriteMemories ( WriteMemoriesRequest ) returns ( WriteMemoriesResponse )" in api
    assert "Bearer <JWT>" in api  # a comment's angle brackets are shown, not swallowed as a tag
    assert "stream ChangeFeedMessage" in page_text(site, "reference/grpc/changes")
    quickstart = page_text(site, "getting-started/quickstart")
    assert 'memhub search "ERR-4312" --ns agents/planner/ops --explain' in quickstart  # the README's block, included
    compose = page_text(site, "operating/compose")
    assert "docker compose up -d" in compose and "max_connections=100" in compose


SNIPPET = re.compile(r'--8<-- "([^":]+):([a-z-]+)"')


def code_text(site: Path, page: str) -> str:
    """The text of a built page's code blocks, as a reader copies it."""
    raw = (site / page / "index.html").read_text()
    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", block)) for block in re.findall(r"<pre[^>]*>(.*?)</pre>", raw, re.S))


def section_lines(path: Path, name: str) -> list[str]:
    """The non-blank lines of the section ``name`` of a file (between its --8<-- start and end markers)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if f"--8<-- [start:{name}]" in line)
    end = next(i for i, line in enumerate(lines) if f"--8<-- [end:{name}]" in line)
    return [line.strip() for line in lines[start + 1 : end] if line.strip()]


def test_the_integration_pages_show_the_code_their_examples_run(site: Path) -> None:
    index = page_text(site, "integrations")
    assert "coming" not in index and "one token per agent" in index
    pages = sorted(p for p in (REPO / "docs" / "integrations").glob("*.md") if p.name != "index.md")
    assert len(pages) == 6  # LangGraph, OpenAI Agents SDK, Google ADK, AutoGen, asyncio, TypeScript
    for page in pages:
        included = SNIPPET.findall(page.read_text())
        assert included, f"{page.name} shows no code from an example (include a section with --8<--)"
        shown = code_text(site, f"integrations/{page.stem}")
        for file, section in included:
            for line in section_lines(REPO / file, section):
                assert line in shown, f"{page.name}: {file}:{section} line not shown: {line!r}"
        text = page_text(site, f"integrations/{page.stem}").lower()
        assert "one token per agent" in text or "one agent, one token" in text, f"{page.name} does not lead with identity"


def test_the_tool_count_and_names_the_docs_state_are_the_bridges(site: Path) -> None:
    tools = bridge_tools()
    assert len(tools) >= 5  # the listing itself works: write, search, forget, preferences, context at least
    reference = page_text(site, "reference/mcp-tools")
    assert f"The MCP bridge offers {len(tools)} tools." in reference
    raw = (site / "reference" / "mcp-tools" / "index.html").read_text()
    documented = re.findall(r'<h2 id="([a-z_]+)"', raw)
    assert documented == tools
    guide = page_text(site, "guides/mcp-bridge")
    assert f"gives any MCP client (Claude Desktop, Cursor, Dify, an agent framework) {len(tools)} memory tools" in guide
    assert f"The bridge offers these {len(tools)} tools" in guide
    guide_raw = (site / "guides" / "mcp-bridge" / "index.html").read_text()
    linked = re.findall(r'href="\.\./\.\./reference/mcp-tools/#([a-z_]+)"', guide_raw)
    assert linked == tools


def hand_written_markdown() -> Iterator[Path]:
    yield from (REPO / "docs").rglob("*.md")
    yield REPO / "README.md"
    yield from (REPO / "memhub").rglob("README.md")
    yield from (REPO / "deploy").glob("*.md")
    yield REPO / "policies" / "README.md"


def test_no_page_states_another_tool_count_by_hand() -> None:
    count = len(bridge_tools())
    stated = re.compile(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(?:memory\s+|MCP\s+)?tools\b", re.I)
    wrong = []
    for path in hand_written_markdown():
        for match in stated.finditer(path.read_text()):
            word = match.group(1).lower()
            number = int(word) if word.isdigit() else NUMBER_WORDS[word]
            if number != count:
                wrong.append(f"{path.relative_to(REPO)}: {match.group(0)!r}")
    assert not wrong, f"the bridge offers {count} tools; write <!-- memhub:mcp-tool-count --> instead of a number: {wrong}"


def test_a_broken_link_and_a_page_outside_the_nav_fail_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    (docs / "orphan.md").write_text("# Orphan\n\nIn no nav.\n")
    page = docs / "concepts" / "namespaces.md"
    page.write_text(page.read_text() + "\nSee [the missing page](missing.md).\n")
    config = (REPO / "mkdocs.yml").read_text()
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}").replace(
        "  - scripts/docsgen/hooks.py", f"  - {REPO / 'scripts' / 'docsgen' / 'hooks.py'}"
    )
    (tmp_path / "mkdocs.yml").write_text(config)
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "'concepts/missing.md' is not found" in done.stderr or "missing.md" in done.stderr, done.stderr
    assert "orphan.md" in done.stderr, done.stderr


def markdown_links(path: Path) -> Iterator[tuple[str, str]]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # links inside code blocks are examples
    yield from re.findall(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", text)


def test_readme_is_a_front_page_whose_links_all_resolve() -> None:
    readme = REPO / "README.md"
    assert len(readme.read_text().splitlines()) <= 200
    folder_readmes = [*(REPO / "deploy").glob("*.md"), REPO / "policies" / "README.md", REPO / "memhub" / "bridge" / "README.md"]
    for path in (readme, *folder_readmes):
        for label, target in markdown_links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            resolved = (path.parent / target.split("#")[0]).resolve()
            assert resolved.exists(), f"{path.relative_to(REPO)}: [{label}]({target}) points at nothing"


def test_the_compose_files_point_at_a_guide_that_exists() -> None:
    for name in ("docker-compose.yml", ".env.example"):
        assert "deploy/README-compose.md" in (REPO / name).read_text(), name
    guide = (REPO / "deploy" / "README-compose.md").read_text()
    for topic in ("Issue a token", "The bridge", "What to size first", "An external embedding service"):
        assert f"## {topic}" in guide, topic
