"""Every query parameter and form field the console accepts, checked and bounded before any call is made.

A page names the parameters it takes; anything else (an unknown name, a
repeated one, an over-long value, a control character, a bad date) is
refused with a 400 page naming the field and what to enter instead. The
hub checks everything again: these checks make the error clear and keep
junk off the wire.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime, timezone
from urllib.parse import parse_qsl

from starlette.requests import Request

from memhub.core import validation
from memhub.core.namespaces import validate_namespace
from memhub.errors import InvalidArgument

MAX_QUERY_STRING = 8192
MAX_FORM_BYTES = 64 * 1024
MAX_FIELDS = 64
MAX_PAGE_TOKEN = 1024
_PAGE_TOKEN = re.compile(r"[A-Za-z0-9_\-=.~:+/]*")


class FieldError(Exception):
    """A parameter or form field the console refuses; shown to the operator as "field: problem"."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def query_items(request: Request) -> list[tuple[str, str]]:
    raw = request.url.query
    if len(raw) > MAX_QUERY_STRING:
        raise FieldError("query string", f"is {len(raw)} characters; the limit is {MAX_QUERY_STRING}")
    return _parse(raw, "query string")


async def form_items(request: Request) -> list[tuple[str, str]]:
    """The urlencoded body of a POST, read up to MAX_FORM_BYTES (a longer or other body is refused)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise FieldError("body", "must be a form (application/x-www-form-urlencoded)")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FieldError("body", f"is larger than {MAX_FORM_BYTES} bytes")
    try:
        return _parse(body.decode("utf-8"), "body")
    except UnicodeDecodeError:
        raise FieldError("body", "is not UTF-8") from None


def _parse(raw: str, what: str) -> list[tuple[str, str]]:
    try:
        return parse_qsl(raw, keep_blank_values=True, max_num_fields=MAX_FIELDS, errors="strict")
    except ValueError as exc:
        raise FieldError(what, f"cannot be read ({exc}); at most {MAX_FIELDS} fields") from None


class Params:
    """The accepted parameters of one request; each getter validates one of them."""

    def __init__(self, items: Sequence[tuple[str, str]], accepted: Collection[str], repeatable: Collection[str] = ()) -> None:
        self._values: dict[str, list[str]] = {}
        for name, value in items:
            if name not in accepted:
                raise FieldError(name[:64], f"is not a parameter of this page; it takes {', '.join(sorted(accepted))}")
            self._values.setdefault(name, []).append(value)
            if len(self._values[name]) > 1 and name not in repeatable:
                raise FieldError(name, "is given more than once")

    def raw(self, name: str) -> str:
        values = self._values.get(name)
        return values[0] if values else ""

    def text(self, name: str, max_chars: int, *, required: bool = False, one_line: bool = True) -> str:
        value = self.raw(name).strip()
        if required and not value:
            raise FieldError(name, "is required")
        if len(value) > max_chars:
            raise FieldError(name, f"is {len(value)} characters; the limit is {max_chars}")
        if "\x00" in value:
            raise FieldError(name, "contains a NUL character")
        if one_line:
            _checked(validation.no_control_characters, value, name)
        return value

    def choice(self, name: str, choices: Collection[str]) -> str:
        value = self.raw(name)
        if value and value not in choices:
            raise FieldError(name, f"{value[:64]!r} is not one of {', '.join(sorted(choices))}")
        return value

    def choices(self, name: str, choices: Collection[str], limit: int = validation.MAX_ENUM_VALUES) -> list[str]:
        values = [v for v in self._values.get(name, []) if v]
        if len(values) > limit:
            raise FieldError(name, f"has {len(values)} values; the limit is {limit}")
        for value in values:
            if value not in choices:
                raise FieldError(name, f"{value[:64]!r} is not one of {', '.join(sorted(choices))}")
        return list(dict.fromkeys(values))

    def integer(self, name: str, low: int, high: int, default: int) -> int:
        value = self.raw(name).strip()
        if not value:
            return default
        if not re.fullmatch(r"-?\d{1,9}", value):
            raise FieldError(name, f"{value[:32]!r} is not a whole number")
        number = int(value)
        if not low <= number <= high:
            raise FieldError(name, f"is {number}; use {low} to {high}")
        return number

    def flag(self, name: str) -> bool:
        value = self.raw(name)
        if value not in ("", "on", "1"):
            raise FieldError(name, f"{value[:32]!r} is not a checkbox value (on)")
        return value != ""

    def namespace(self, name: str, *, required: bool = False) -> str:
        value = self.text(name, 255, required=required)
        return _checked(validate_namespace, value, name) if value else ""

    def namespaces(self, name: str) -> list[str]:
        """A comma-separated list of namespaces (at most the hub's 64)."""
        parts = [p.strip() for p in self.text(name, 64 * 256).split(",") if p.strip()]
        if len(parts) > validation.MAX_NAMESPACE_ROOTS:
            raise FieldError(name, f"names {len(parts)} namespaces; the limit is {validation.MAX_NAMESPACE_ROOTS}")
        return list(dict.fromkeys(_checked(validate_namespace, p, name) for p in parts))

    def tags(self, name: str) -> list[str]:
        parts = [p.strip() for p in self.text(name, 32 * 65).split(",") if p.strip()]
        if len(parts) > validation.MAX_TAGS:
            raise FieldError(name, f"names {len(parts)} tags; the limit is {validation.MAX_TAGS}")
        return list(dict.fromkeys(_checked(validation.tag, p, name) for p in parts))

    def memory_id(self, name: str, *, required: bool = False) -> str:
        value = self.text(name, 64, required=required)
        return _checked(validation.memory_id, value, name) if value else ""

    def when(self, name: str) -> datetime | None:
        """A time as the browser's datetime-local field sends it (YYYY-MM-DDTHH:MM, read as UTC) or ISO 8601."""
        value = self.text(name, 40)
        if not value:
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise FieldError(name, f"{value!r} is not a time such as 2026-12-01T09:30 (UTC)") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        if not 1970 <= parsed.year <= 9999:
            raise FieldError(name, "is out of range (years 1970 to 9999)")
        return parsed.astimezone(timezone.utc)

    def page_token(self, name: str = "page_token") -> str:
        value = self.raw(name)
        if len(value) > MAX_PAGE_TOKEN or _PAGE_TOKEN.fullmatch(value) is None:
            raise FieldError(name, "is not a page token from this console (follow the page links)")
        return value


def _checked(check, value: str, name: str):  # noqa: ANN001, ANN202 - a hub validator (value, field) -> value
    try:
        return check(value, name)
    except InvalidArgument as exc:
        raise FieldError(name, exc.problem) from None
