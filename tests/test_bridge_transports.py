"""The bridge as a real process, over its real transports, against a real hub (the fleet fixture).

- stdio: spawned by the SDK's stdio_client (token in the environment); and
  once by hand, to check that stdout carries JSON-RPC and nothing else, with
  Chinese text raw on the wire.
- streamable HTTP: started with port 0 (the URL is read from stderr), called
  by the SDK's streamable HTTP client with the bridge's bearer token; refused
  with 401 without it and 403 from a foreign Origin.
- One trace across processes: the bridge writes its spans to a file, the hub
  (in this process) to memory; the tool span's trace continues into the hub.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import httpx2
import pytest
from conftest import REPO, Fleet
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from memhub import telemetry
from memhub.bridge.narrowing import TOOL_NAMES

HTTP_TOKEN = "test-bridge-bearer-" + uuid.uuid4().hex
JSONRPC_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bridge_env(**extra: str) -> dict[str, str]:
    """This process's environment without memhub or OpenTelemetry settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    return env | extra


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


class LineReader:
    """Reads a pipe line by line in a thread, so the test can wait with a timeout."""

    def __init__(self, pipe: IO[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            self.lines.put(line)
        self.lines.put(None)

    def next(self, timeout: float = 60) -> str | None:
        line = self.lines.get(timeout=timeout)
        if line is not None:
            self.seen.append(line)
        return line

    def until(self, predicate, timeout: float = 60) -> str:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        while True:
            line = self.next(max(deadline - time.monotonic(), 0.01))
            if line is None:
                raise AssertionError("the stream ended first:\n" + "".join(self.seen))
            if predicate(line):
                return line

    def rest(self, timeout: float = 30) -> list[str]:
        while self.next(timeout) is not None:
            pass
        return self.seen


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- stdio ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stdio_with_the_sdk_client_and_the_token_in_the_environment(fleet: Fleet, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memhub.bridge.main", "--hub", fleet.address],
        env={"MEMHUB_TOKEN": fleet.token("alice")},
        cwd=REPO,
    )
    content = f"deploys freeze on Fridays after 3pm ({uuid.uuid4().hex[:8]})"
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            written = await client.call_tool("write_memory", {"content": content, "type": "rule"})
            assert not written.is_error, text(written)
            found = await client.call_tool(
                "search_memories", {"query": "can I deploy on Friday afternoon?", "namespaces": ["agents/alice"]}
            )
            assert content in [h["content"] for h in found.structured_content["hits"]]
            hit = next(h for h in found.structured_content["hits"] if h["content"] == content)
            forgot = await client.call_tool("forget_memory", {"id": hit["id"], "reason": "rota changed"})
            assert not forgot.is_error, text(forgot)
            again = await client.call_tool(
                "search_memories", {"query": "can I deploy on Friday afternoon?", "namespaces": ["agents/alice"]}
            )
            assert content not in [h["content"] for h in again.structured_content["hits"]]
            denied = await client.call_tool(
                "write_memory", {"content": f"alice writes into bob's space {content}", "namespace": "agents/bob"}
            )
            assert denied.is_error and "permission denied: agent 'alice' may not write in namespace 'agents/bob'" in text(denied)
    with fleet.client("bob") as bob:
        assert all("alice writes into bob's space" not in m.content for m in bob.list(["agents/bob"], page_size=500).memories)
    assert '"bridge ready"' in (tmp_path / "stderr.log").read_text()


def test_stdio_stdout_carries_only_json_rpc_and_raw_unicode(fleet: Fleet) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhub.bridge.main", "--hub", fleet.address, "--log-level", "debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        cwd=REPO,
        env=bridge_env(MEMHUB_TOKEN=fleet.token("bob")),
    )
    out, err = LineReader(proc.stdout), LineReader(proc.stderr)

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
        proc.stdin.flush()

    def reply(request_id: int) -> dict[str, Any]:
        return json.loads(out.until(lambda line: json.loads(line).get("id") == request_id))

    content = f"鲍勃负责周二的部署，回滚需要值班经理批准 {uuid.uuid4().hex[:6]}"
    try:
        send(INITIALIZE)
        assert reply(1)["result"]["serverInfo"]["name"] == "memhub"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(reply(2)["result"]["tools"]) == len(TOOL_NAMES)
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "write_memory", "arguments": {"content": content}},
            }
        )
        result = reply(3)["result"]
        assert not result.get("isError") and result["structuredContent"]["memory"]["content"] == content
        send(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "write_memory", "arguments": {"content": "x", "namespace": "teams/support/secrets"}},
            }
        )
        assert reply(4)["result"]["isError"] is True
    finally:
        proc.stdin.close()  # end of input: the bridge exits
        proc.wait(timeout=30)
    stdout_lines = out.rest()
    for line in stdout_lines:
        message = json.loads(line)  # every line is a JSON-RPC message...
        assert message["jsonrpc"] == "2.0" and ("id" in message or "method" in message)
    # ...and non-ASCII travels as itself, not as \\u escapes.
    assert any(content in line for line in stdout_lines)
    assert not any("\\u9c8d" in line for line in stdout_lines)
    logs = err.rest()
    assert any('"bridge ready"' in line for line in logs), "logs go to stderr"
    assert proc.returncode == 0


# -- streamable HTTP ------------------------------------------------------------------------


@dataclass
class RunningBridge:
    proc: subprocess.Popen
    url: str
    stderr: LineReader
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")


@contextlib.contextmanager
def http_bridge(fleet: Fleet, agent: str, *args: str, **env: str) -> Iterator[RunningBridge]:
    """`memhub bridge --transport http --port 0` for `agent`; yields once it has printed its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "bridge", "--hub", fleet.address, "--transport", "http", "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=bridge_env(MEMHUB_TOKEN=fleet.token(agent), MEMHUB_BRIDGE_HTTP_TOKEN=HTTP_TOKEN, **env),
    )
    stderr = LineReader(proc.stderr)
    try:
        line = stderr.until(lambda line: "streamable HTTP for agent" in line)
        bridge = RunningBridge(proc, line.rsplit(" on ", 1)[1].strip(), stderr)
        assert bridge.url.startswith("http://127.0.0.1:") and bridge.url.endswith("/mcp")
        yield bridge
    finally:
        stop(proc)
    assert proc.stdout.read() == "", "nothing may go to stdout"


@contextlib.asynccontextmanager
async def http_client(bridge: RunningBridge, token: str = HTTP_TOKEN):  # noqa: ANN201
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(bridge.url, http_client=http)) as client:
            yield client


@pytest.mark.anyio
async def test_http_with_the_sdk_client_and_the_bearer_token(fleet: Fleet) -> None:
    content = f"the support rota changes on Mondays ({uuid.uuid4().hex[:8]})"
    with http_bridge(fleet, "alice") as alice_bridge, http_bridge(fleet, "carol") as carol_bridge:
        async with http_client(alice_bridge) as alice:
            written = await alice.call_tool("write_memory", {"content": content, "type": "fact", "namespace": "teams/support/kb"})
            assert not written.is_error, text(written)
        async with http_client(carol_bridge) as carol:
            found = await carol.call_tool("search_memories", {"query": "when does the support rota change?"})
            assert content in [h["content"] for h in found.structured_content["hits"]]
            denied = await carol.call_tool("forget_memory", {"id": written.structured_content["memory"]["id"], "reason": "audit"})
            assert denied.is_error and "permission denied: agent 'carol' may not forget" in text(denied)


def test_http_refuses_requests_without_the_token_and_from_foreign_origins(fleet: Fleet) -> None:
    with http_bridge(fleet, "alice", "--allow-origin", "https://app.example.com") as bridge:
        auth = {"authorization": f"Bearer {HTTP_TOKEN}"}
        post = lambda headers: httpx.post(bridge.url, json=INITIALIZE, headers=JSONRPC_HEADERS | headers, timeout=30)  # noqa: E731

        missing = post({})
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert post({"authorization": "Bearer not-the-token-at-all-0000"}).status_code == 401
        assert post({"authorization": HTTP_TOKEN}).status_code == 401  # the scheme is required

        assert post(auth | {"origin": "https://evil.example"}).status_code == 403
        assert post({"origin": "https://evil.example"}).status_code == 403  # Origin is checked first
        assert post(auth | {"origin": "http://localhost.evil.example:8080"}).status_code == 403

        assert post(auth).status_code == 200  # no Origin: a non-browser client
        assert post(auth | {"origin": "http://localhost:6274"}).status_code == 200  # loopback pages by default
        assert post(auth | {"origin": "https://app.example.com"}).status_code == 200  # configured
        assert httpx.get(bridge.base + "/healthz", timeout=10).status_code == 200


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, as the SDK client's task groups raise them."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for sub in error.exceptions for leaf in leaves(sub)]
    return [error]


class MemoryTokenStorage:
    """Token storage for the SDK's OAuth client provider (TokenStorage protocol), kept in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.anyio
async def test_http_without_the_bearer_tells_mcp_clients_it_takes_a_static_token(fleet: Fleet) -> None:
    """A 401 sent MCP clients into OAuth (the Inspector: "Interactive OAuth requires a TTY"); every answer on that
    way now says to send the bridge's static bearer token, and the SDK's clients show it, with OAuth or without."""
    with http_bridge(fleet, "alice") as bridge:
        missing = httpx.post(bridge.url, json=INITIALIZE, headers=JSONRPC_HEADERS, timeout=30)
        metadata_url = f"{bridge.base}/.well-known/oauth-protected-resource/mcp"
        assert missing.status_code == 401
        # RFC 6750: no error code when no credentials were sent; RFC 9728: where the resource is described.
        assert missing.headers["www-authenticate"] == f'Bearer realm="memhub-bridge", resource_metadata="{metadata_url}"'
        assert missing.json()["error"]["message"].startswith("This MCP server takes a static bearer token, not OAuth")
        wrong = httpx.post(
            bridge.url, json=INITIALIZE, headers=JSONRPC_HEADERS | {"authorization": "Bearer guess-0123456789abcdef"}, timeout=30
        )
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert "guess-0123456789abcdef" not in wrong.text + wrong.headers["www-authenticate"]  # never echoed

        # Bearer tokens in the header, and no authorization server to obtain them from (RFC 9728 2).
        metadata = httpx.get(metadata_url, timeout=30).json()
        assert metadata == {"resource": bridge.url, "bearer_methods_supported": ["header"], "resource_name": "memhub MCP bridge"}
        assert httpx.get(f"{bridge.base}/.well-known/oauth-protected-resource", timeout=30).json() == metadata
        for method, path in [
            ("GET", "/.well-known/oauth-authorization-server"),
            ("GET", "/.well-known/openid-configuration"),
            ("POST", "/register"),
            ("GET", "/authorize"),
            ("POST", "/token"),
        ]:
            answer = httpx.request(method, bridge.base + path, timeout=30)
            assert answer.status_code == 404 and "static bearer token" in answer.json()["error_description"], path

        # The SDK client without OAuth: the 401's JSON-RPC error is the error it raises.
        with pytest.raises(BaseException) as plain:  # noqa: PT011 - an exception group; its leaf is checked below
            async with httpx2.AsyncClient(timeout=60) as http, Client(streamable_http_client(bridge.url, http_client=http)):
                pass
        (refusal,) = [e for e in leaves(plain.value) if isinstance(e, MCPError)]
        assert "takes a static bearer token" in str(refusal) and "Authorization: Bearer <token>" in str(refusal)

        # The SDK client with an OAuth provider: discovery finds no authorization server, registration is refused
        # with the same words, and no browser is ever sent anywhere.
        redirects: list[str] = []

        async def redirect(url: str) -> None:
            redirects.append(url)

        async def callback() -> Any:  # noqa: ANN401 - never reached
            raise AssertionError("the OAuth flow must not get as far as a callback")

        provider = OAuthClientProvider(
            bridge.url,
            OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"]),
            MemoryTokenStorage(),
            redirect,
            callback,
        )
        with pytest.raises(BaseException) as oauth:  # noqa: PT011
            async with (
                httpx2.AsyncClient(timeout=60, auth=provider) as http,
                Client(streamable_http_client(bridge.url, http_client=http)),
            ):
                pass
        (registration,) = [e for e in leaves(oauth.value) if isinstance(e, OAuthRegistrationError)]
        assert "Registration failed: 404" in str(registration) and "takes a static bearer token" in str(registration)
        assert redirects == []

        async with http_client(bridge) as client:  # and with the token, it simply works
            assert len((await client.list_tools()).tools) == len(TOOL_NAMES)


def test_http_refuses_to_start_without_a_bearer_token(fleet: Fleet) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memhub.bridge.main", "--hub", fleet.address, "--transport", "http", "--port", "0"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=bridge_env(MEMHUB_TOKEN=fleet.token("alice")),
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "streamable HTTP needs a bearer token" in proc.stderr and "MEMHUB_BRIDGE_HTTP_TOKEN" in proc.stderr


# -- one trace across processes ---------------------------------------------------------------


@pytest.mark.anyio
async def test_one_trace_from_the_agent_into_the_hub_including_a_denied_call(fleet: Fleet, tmp_path: Path) -> None:
    """The agent (this process) has a trace; the SDK client puts it in `_meta`; the bridge (another process,
    spans to a file) continues it and passes it to the hub (this process again, spans in memory)."""
    spans = InMemorySpanExporter()
    detach = telemetry.add_span_processor(SimpleSpanProcessor(spans))
    span_file = tmp_path / "bridge-spans.jsonl"
    try:
        with http_bridge(fleet, "carol", MEMHUB_TRACES_EXPORTER="file", MEMHUB_TRACES_FILE=str(span_file)) as bridge:
            async with http_client(bridge) as carol:
                with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
                    assert not (await carol.call_tool("search_memories", {"query": "mail relay"})).is_error
                    denied = await carol.call_tool("write_memory", {"content": "nope", "namespace": "teams/support/kb"})
                    assert denied.is_error
        assert bridge.proc.returncode == 0  # SIGTERM unwound cleanly, so the bridge flushed its spans
    finally:
        detach()
    trace_id = format(turn.get_span_context().trace_id, "032x")
    local = [s for s in spans.get_finished_spans() if format(s.context.trace_id, "032x") == trace_id]
    sends = {format(s.context.span_id, "016x") for s in local if s.name.startswith("MCP send tools/call")}
    assert len(sends) == 2

    bridge_side = [s for s in telemetry.read_spans_file(span_file) if s["trace_id"] == trace_id]
    tools = {s["name"]: s for s in bridge_side if s["name"].startswith("tools/call ")}
    assert set(tools) == {"tools/call search_memories", "tools/call write_memory"}
    for name, span in tools.items():
        assert span["service_name"] == "memhub-bridge" and span["kind"] == "SERVER"
        assert span["parent_span_id"] in sends and span["parent_is_remote"]
        assert span["attributes"]["gen_ai.tool.name"] == name.split(" ", 1)[1]
        assert span["attributes"]["gen_ai.operation.name"] == "execute_tool"
        assert span["attributes"]["mcp.method.name"] == "tools/call"
    assert tools["tools/call write_memory"]["attributes"]["error.type"] == "tool_error"
    assert tools["tools/call write_memory"]["attributes"]["memhub.hub.status_code"] == "PERMISSION_DENIED"
    assert tools["tools/call write_memory"]["status"]["code"] == "ERROR"
    rpc_client = {s["span_id"]: s for s in bridge_side if s["kind"] == "CLIENT"}
    assert {s["parent_span_id"] for s in rpc_client.values()} == {t["span_id"] for t in tools.values()}

    rpcs = [s for s in local if s.kind == SpanKind.SERVER and s.name.startswith("/memhub.v1.")]
    assert len(rpcs) == 2 and all(format(s.parent.span_id, "016x") in rpc_client for s in rpcs)
    (write_rpc,) = [s for s in rpcs if s.name.endswith("WriteMemories")]
    assert write_rpc.attributes["error.type"] == "PERMISSION_DENIED"
    decisions = [s for s in local if s.name == "policy.authorize"]
    assert decisions and all(s.parent.span_id in {r.context.span_id for r in rpcs} for s in decisions)
    for s in local:
        assert not any("baggage" in k for k in s.attributes)
