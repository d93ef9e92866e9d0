"""A local HTTP server speaking the OpenAI chat-completions wire format with scripted replies.

No LLM is reachable from the test machines; the hub's LLM paths (the consolidation summariser, the write
gate's fact extractor) are tested against this server instead: real HTTP, real JSON, the replies a test
chooses, and every request body kept for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Raw(str):
    """A reply sent as the whole HTTP body, not wrapped in a chat completion (for malformed-reply tests)."""


Reply = tuple[int, str, float]
"""(HTTP status, the assistant's text (or a Raw body), seconds to stall before answering)."""


@dataclass
class Scripted:
    """Replies to POST /v1/chat/completions, one per request from ``replies`` (then ``default``); keeps each
    request body and its Authorization header."""

    replies: list[Reply] = field(default_factory=list)
    default: Reply = (200, "When the build cache is cold, pre-warming it made the deploy fast.", 0.0)
    requests: list[dict] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, body: dict, authorization: str) -> Reply:
        with self.lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            return self.replies.pop(0) if self.replies else self.default


def _handler(script: Scripted) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if self.path == "/v1/chat/completions":
                status, text, stall = script.next(body, self.headers.get("authorization", ""))
            else:
                status, text, stall = 404, Raw("no such path"), 0.0
            if stall:
                script.release.wait(stall)  # released at teardown, so a stalled reply never outlives the tests
            payload = text
            if status == 200 and not isinstance(text, Raw):
                payload = json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    }
                )
            data = payload.encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the hub gave up waiting (the timeout tests)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def chat_server(script: Scripted) -> Iterator[str]:
    """Serve ``script`` on a free loopback port; yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        script.release.set()
        server.shutdown()
        server.server_close()
