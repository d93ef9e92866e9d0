"""Binding the hub's port before the stores open: `memhub serve`'s early refusal of a taken port, and the
reservation a `--processes` group holds for its hub processes. One function, so both refuse with one message."""

from __future__ import annotations

import errno
import socket

from memhub.errors import StartupError


def bind_port(host: str, port: int, *, shared: bool) -> socket.socket:
    """A socket bound (not listening) to ``host:port`` (0: a free port); StartupError naming the problem if it
    cannot be. SO_REUSEADDR as the gRPC server binds, so a port a stopped hub left in TIME_WAIT is free;
    ``shared`` adds SO_REUSEPORT, which lets the group's hub processes (and only processes that set it too) bind
    the port beside it."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
    except (OSError, UnicodeError) as exc:
        raise StartupError(
            f"cannot listen on {host}:{port}: {exc}; set --host or MEMHUB_HOST to an address of this machine"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = " (another hub or program listens there; stop it, or" if exc.errno == errno.EADDRINUSE else " ("
        raise StartupError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}{why} pick another port with --port or MEMHUB_PORT)"
        ) from None
    return sock


def refuse_a_taken_port(host: str, port: int) -> None:
    """Raise StartupError when something already listens on ``host:port``, before the stores are opened.

    The gRPC server refuses such a port too (memhub/api/server.py turns SO_REUSEPORT off), but only once the hub
    has opened its stores: seconds for an embedded Postgres, minutes for a large Lite index, and a new data
    directory created for nothing. Port 0 (any free port) cannot be taken.
    """
    if port != 0:
        bind_port(host, port, shared=False).close()
