"""The error catalog: what can go wrong in the hub, independent of transport.

The gRPC layer maps each class to a status code (memhub/api/status.py); plain
Python callers (CLI, tests, benchmarks) catch these directly. Messages are
written for the person who sent the request: they name the field or the
thing that was not found and, where it helps, what to do.
"""

from __future__ import annotations


class HubError(Exception):
    """Base class of every error the hub reports to a caller."""


class InvalidArgument(HubError):
    """A request field is malformed or out of range."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class NotFound(HubError):
    """The named resource does not exist (or the caller may not see it)."""


class FailedPrecondition(HubError):
    """The request is valid but conflicts with stored state (e.g. a reused request_id)."""


class PermissionDenied(HubError):
    """The caller may not perform this action on this namespace."""


class Unauthenticated(HubError):
    """The call carries no valid credentials."""


class Unavailable(HubError):
    """A store the hub depends on cannot be reached; retrying later may work."""


class StorageFull(Unavailable):
    """The database has no disk space left: nothing was written; retrying after the operator frees space works.

    UNAVAILABLE, not RESOURCE_EXHAUSTED: that code means a quota of the caller's, which the caller fixes by
    sending less; this is the hub's condition, fixed by its operator, and a retry (same request_id) is safe.
    The message carries no path or setting: those are the operator's, and the hub's log names them.
    """

    def __init__(self) -> None:
        super().__init__("the hub's database storage is full; nothing was written; the operator has been told")


class StartupError(HubError):
    """The hub cannot start: the message says what is wrong and how to fix it."""


class OutOfRange(HubError):
    """The request points past what the hub keeps (a change-feed cursor older than its retention)."""


class Aborted(HubError):
    """A concurrent request conflicted with this one; retrying it is safe."""


class ResourceExhausted(HubError):
    """A quota refused the request (nothing was stored); the message names the quota and how to stay within it."""


class VersionMismatch(Aborted):
    """An expected version is not the stored one: nothing changed; re-read and decide (not a transient conflict).

    ``current_version`` is 0 when no active memory holds the subject any more. The gRPC layer sends the
    three facts as trailing metadata too (``trailing_metadata``), for programs to read without parsing.
    """

    def __init__(self, field: str, message: str, *, current_version: int, current_id: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.current_version = current_version
        self.current_id = current_id

    @property
    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return (
            ("memhub-conflict-field", self.field),
            ("memhub-current-version", str(self.current_version)),
            ("memhub-current-id", self.current_id),
        )
