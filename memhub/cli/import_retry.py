"""Sending one `memhub import` batch again when the hub was only slow or briefly away.

A batch carries a request id derived from the file, so sending it again is
safe: if the first attempt was committed before its deadline ran out, the hub
answers the retry as a replay of it instead of writing twice. Such a replay is
this run's own work, so it counts as what it stored (ImportTally.add with
``ours=True``), not as "already imported by an earlier run". Only transient
codes are retried; a refusal (INVALID_ARGUMENT, PERMISSION_DENIED, ...) is
final and reported at once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import grpc

from memhub.v1 import memory_pb2 as pb

TRANSIENT = frozenset({grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
"""A loaded or restarting hub, or a per-agent rate limit: worth another try after a pause."""
ATTEMPTS = 4
FIRST_PAUSE_S = 1.0


def write_with_retries(
    write: Callable[[], pb.WriteMemoriesResponse],
    first_line: int,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[pb.WriteMemoriesResponse, bool]:
    """The batch's answer, and whether an earlier attempt of this run may have written it (a replay is then ours).

    Raises the last error once ``ATTEMPTS`` attempts failed, or at once on a code that is not transient.
    """
    pause = FIRST_PAUSE_S
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return write(), attempt > 1
        except grpc.RpcError as exc:
            code = exc.code()
            if code not in TRANSIENT or attempt == ATTEMPTS:
                raise
            print(
                f"\nmemhub import: the batch starting at line {first_line} got {code.name}; "
                f"sending it again in {pause:.0f} s (attempt {attempt + 1} of {ATTEMPTS}; its request id keeps it from "
                "being written twice)",
                file=sys.stderr,
            )
            sleep(pause)
            pause *= 2
    raise AssertionError("unreachable: the last attempt returns or raises")
