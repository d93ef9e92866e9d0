"""Templates: Jinja2 with autoescaping on for every template, so stored text always reaches the page as text.

Memory content, audit details, namespace names: anything the hub returns
is escaped by Jinja (``<`` ``>`` ``&`` ``"`` ``'``), rendered inside
elements (never inside attributes without quotes, never into scripts or
styles, of which pages have none), and passed through ``visible`` so
control and bidi characters show as escapes instead of acting.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.responses import HTMLResponse

from memhub.memory_text import one_line, visible_text
from memhub.v1 import admin_pb2 as apb
from memhub.v1 import memory_pb2 as pb

TEMPLATES = Path(__file__).parent / "templates"


def _enum(enum_type, prefix: str):  # noqa: ANN001, ANN202 - a protobuf enum wrapper
    def name(value: int) -> str:
        try:
            return enum_type.Name(value).removeprefix(prefix).lower()
        except ValueError:
            return str(value)

    return name


def _ts(value: Timestamp | datetime | None) -> str:
    if value is None:
        return ""
    if isinstance(value, Timestamp):
        if value.seconds == 0 and value.nanos == 0:
            return ""
        value = value.ToDatetime(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _epoch(seconds: float) -> str:
    return _ts(datetime.fromtimestamp(seconds, timezone.utc))


def _preview(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _number(value: float, digits: int = 4) -> str:
    return f"{value:.{digits}f}"


def build_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every template, whatever its name: nothing stored is ever markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        ts=_ts,
        epoch=_epoch,
        visible=visible_text,
        one_line=one_line,
        preview=_preview,
        number=_number,
        kind=_enum(pb.MemoryKind, "MEMORY_KIND_"),
        mtype=_enum(pb.MemoryType, "MEMORY_TYPE_"),
        status=_enum(pb.MemoryStatus, "MEMORY_STATUS_"),
        trust=_enum(pb.TrustLevel, "TRUST_LEVEL_"),
        flag=_enum(pb.MemoryFlag, "MEMORY_FLAG_"),
        channel=_enum(pb.RetrievalChannel, "RETRIEVAL_CHANNEL_"),
        decision=_enum(apb.Decision, "DECISION_"),
    )
    return env


class Renderer:
    def __init__(self) -> None:
        self.env = build_environment()

    def page(self, template: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
        # base: the URL prefix of the session's pages ("" on pages outside a session: sign-in, errors).
        return HTMLResponse(self.env.get_template(template).render(**{"base": "", **context}), status_code=status_code)
