"""The generators of the docs' reference pages (scripts/docsgen/), checked piece by piece without a site build."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts" / "docsgen"))

import docs_cli  # noqa: E402 - the generators are modules of scripts/docsgen, put on the path above
import docs_config  # noqa: E402
import docs_config_scan  # noqa: E402
import docs_markdown  # noqa: E402
import hooks  # noqa: E402


def test_every_variable_the_code_reads_is_documented_once() -> None:
    docs_config.check()  # raises naming the variable and the file that reads it
    scan = docs_config_scan.scan()
    assert {"MEMHUB_PORT", "MEMHUB_DATA_DIR", "MEMHUB_CONSOLE_PORT"} <= scan.documented()
    assert scan.ranges["MEMHUB_PORT"] == "0 to 65,535"
    port = scan.fields[("memhub.config", "ServerConfig", "port")]
    assert port.variables == {"MEMHUB_PORT"}
    # A field whose default is a variable's name documents that variable (the secret it reads).
    assert "MEMHUB_EMBEDDING_API_KEY" in scan.fields[("memhub.embedding.config", "EmbeddingConfig", "api_key_env")].variables


def test_a_variable_read_but_documented_nowhere_fails_the_reference() -> None:
    real = docs_config_scan.scan()
    read = {**real.read, "MEMHUB_NEW_KNOB": {"memhub/new_feature.py"}}
    broken = docs_config_scan.Scan(read, real.fields, real.ranges, real.class_order)
    with pytest.raises(docs_config.UndocumentedVariable) as refused:
        docs_config.check(broken)
    assert "MEMHUB_NEW_KNOB in memhub/new_feature.py" in str(refused.value)
    stale = {k: v for k, v in real.read.items() if k != "MEMHUB_MODEL_CACHE"}
    with pytest.raises(docs_config.UndocumentedVariable, match="MEMHUB_MODEL_CACHE; remove them"):
        docs_config.check(docs_config_scan.Scan(stale, real.fields, real.ranges, real.class_order))


def test_the_cli_reference_lists_every_command_and_never_a_refused_secret_option() -> None:
    text = docs_cli.render()
    from memhub.cli.main import build_parser

    for path, _, _ in docs_cli.commands(build_parser()):
        assert f"## memhub {' '.join(path)} {{" in text, path
    # `--token` exists only to be refused (a token in argv is readable by every user): it is never offered.
    assert "`--token TOKEN`" not in text and "`--token-file TOKEN_FILE`" in text


def test_comment_text_is_shown_as_text_and_code_spans_stay_whole() -> None:
    assert docs_markdown.escape("Bearer <JWT> & a*b") == "Bearer &lt;JWT\\> &amp; a\\*b"
    assert docs_markdown.escape("keep `a|b <c>` as code, a|b not") == "keep `a|b <c>` as code, a\\|b not"
    wrapped = docs_markdown.paragraphs("Every call carries `authorization: Bearer\n<JWT>`.\n- one\n  more\n- two")
    assert wrapped == "Every call carries `authorization: Bearer\n<JWT>`.\n\n- one\n  more\n- two"


def test_included_files_have_their_links_pointed_at_the_site_or_shown_as_paths() -> None:
    text = hooks.include("deploy/README-compose.md", "operating/compose.md")
    assert "[The MCP bridge](../guides/mcp-bridge.md)" in text  # ../docs/guides/... from deploy/, as a site link
    helm = hooks.include("helm/memhub/README.md", "operating/helm.md")
    assert "`helm/memhub/values.yaml`" in helm and "](values.yaml)" not in helm
    with pytest.raises(hooks.MarkerError, match="not a file of the repository"):
        hooks.include("../outside.md", "operating/compose.md")


def test_an_unknown_marker_stops_the_build_naming_the_page() -> None:
    class Page:
        class file:  # noqa: N801 - shaped like mkdocs' Page.file
            src_uri = "guides/example.md"

    with pytest.raises(hooks.MarkerError, match=r"guides/example.md: <!-- memhub:nonsense -->: unknown marker"):
        hooks.on_page_markdown("text <!-- memhub:nonsense --> text", Page(), None, None)
    assert hooks.on_page_markdown("no markers here", Page(), None, None) == "no markers here"
    shown = "write `<!-- memhub:mcp-tool-count -->` instead"  # a marker as code is documentation, not a request
    assert hooks.on_page_markdown(shown, Page(), None, None) == shown
