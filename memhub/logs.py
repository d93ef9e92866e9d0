"""Structured logs on stderr: one JSON object per line, so log shippers need no parsing rules."""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
# Fields some libraries add for their own terminal formatters: uvicorn's ``color_message`` is the
# message again with ANSI colour codes, noise in a JSON line and garbage in a log viewer.
_DROPPED = {"color_message"}
# ANSI escape sequences (CSI ... final byte, and two-character escapes) that may still arrive inside a message.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-_])")


def _plain(value: object) -> object:
    return _ANSI.sub("", value) if isinstance(value, str) else value


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _plain(record.getMessage()),
        }
        entry.update({k: _plain(v) for k, v in record.__dict__.items() if k not in _STANDARD and k not in _DROPPED})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


_configured = False
"""Set by ``configure``: this process's logging is memhub's to shape."""


def configure(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Third-party chatter at INFO (milvus-lite's server, alembic; faiss, where a pymilvus or milvus-lite
    # imports it, reports which CPU build it could not load) drowns the hub's own lines.
    for noisy in ("alembic", "milvus_lite", "httpx", "faiss"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    global _configured
    _configured = True
    quiet_pymilvus()


def quiet_pymilvus() -> None:
    """Keep pymilvus's own log lines out of a configured process's log; nothing if ``configure`` was not called.

    pymilvus logs every failed call at ERROR with a traceback, in its own
    plain-text format on its own handler (and a probe of Milvus Lite's
    missing GetVersion as one); each failure reaches memhub as an exception,
    which memhub.index logs once, with the advice. Importing pymilvus
    reconfigures its loggers (level WARNING, that handler), so this runs
    from ``configure`` and again right after pymilvus is imported
    (memhub/index/milvus_connection.py), whichever comes first.
    """
    if not _configured:
        return  # a program that uses memhub as a library keeps its own logging
    logger = logging.getLogger("pymilvus")
    logger.setLevel(logging.CRITICAL)
    logger.handlers[:] = []
    logger.propagate = True  # what does reach CRITICAL is formatted as JSON like every other line
