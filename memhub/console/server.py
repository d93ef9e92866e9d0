"""Running the console: uvicorn on a socket bound before it starts (so port 0 works and errors come early),
in a thread of the hub process (`memhub serve --console-port`) or in the foreground (`memhub console`)."""

from __future__ import annotations

import logging
import socket
import threading
import time

import uvicorn

from memhub.console.app import Console, build_app
from memhub.console.config import ConsoleConfig
from memhub.console.gateway import HubGateway
from memhub.errors import StartupError

log = logging.getLogger(__name__)

# Requests served at once; more get 503 (each page makes at most a few hub calls).
MAX_CONCURRENT_REQUESTS = 64


class ConsoleServer:
    """The console bound to its port; ``start()`` serves it in a daemon thread, ``stop()`` ends it."""

    def __init__(self, config: ConsoleConfig) -> None:
        if not config.hub_address:
            raise StartupError("the console needs the hub's address (memhub console --hub HOST:PORT)")
        self.config = config
        self._socket = _bind(config.host, config.port)
        self.port = self._socket.getsockname()[1]
        self.gateway = HubGateway(config.hub_address, timeout_s=config.call_timeout_s)
        self.console = Console.create(config, self.gateway)
        self.app = build_app(self.console)
        self._server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                log_level="warning",
                access_log=False,  # URLs carry search queries and the one-time sign-in key
                server_header=False,
                limit_concurrency=MAX_CONCURRENT_REQUESTS,
                timeout_graceful_shutdown=5,
                lifespan="off",
            )
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = self.config.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def local_signin_url(self) -> str | None:
        path = self.console.local_signin_path()
        return self.url + path if path else None

    def start(self, timeout_s: float = 10.0) -> None:
        self._thread = threading.Thread(target=self.run, name="memhub-console", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise StartupError(f"the console did not start on {self.url}")
            time.sleep(0.02)

    def run(self) -> None:
        """Serve until stop() (or, in the main thread, SIGINT/SIGTERM)."""
        self._server.run(sockets=[self._socket])

    def stop_soon(self) -> None:
        """Ask the server to finish (safe from a signal handler)."""
        self._server.should_exit = True

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._socket.close()
        self.gateway.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP; without it every
    # page waited ~40 ms for a delayed ACK between its headers and its body (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StartupError(
            f"the console cannot listen on {host}:{port}: {exc.strerror}; pick another port (--console-port / --port)"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
