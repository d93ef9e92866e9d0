"""The rules writes and forgets share for their transactions: retrying conflicts, replaying a request_id."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError

from memhub.db import idempotency
from memhub.db.engine import is_transient_conflict
from memhub.errors import Aborted, FailedPrecondition

log = logging.getLogger(__name__)
T = TypeVar("T")

_CONFLICT_ATTEMPTS = 3


def retrying_conflicts(transaction: Callable[[], T]) -> T:
    """Run ``transaction`` again (up to 3 times in all) when Postgres rolled it back for a deadlock
    or serialization failure; then report Aborted, which a client may retry. Safe: a rolled-back
    transaction left nothing behind, and ``transaction`` does all its reading inside itself."""
    for attempt in range(1, _CONFLICT_ATTEMPTS + 1):
        try:
            return transaction()
        except DBAPIError as exc:
            if not is_transient_conflict(exc):
                raise
            if attempt == _CONFLICT_ATTEMPTS:
                raise Aborted("the request conflicted with concurrent writes; retry it") from exc
            log.info("write transaction rolled back for a conflict (attempt %d); running it again", attempt)
            time.sleep(random.uniform(0.005, 0.05) * attempt)  # jitter: the other writer gets ahead
    raise AssertionError("unreachable")


class ConcurrentRetry(Exception):
    """A call with the same request_id committed while this one ran: replay its result."""


def check_same_request(prior: idempotency.StoredResult, operation: str, request_id: str, request_hash: str) -> None:
    if prior.operation != operation or prior.request_hash != request_hash:
        raise FailedPrecondition(
            f"request_id {request_id!r} was already used for a different {prior.operation} request; "
            "use a new request_id for a new request"
        )
