"""The keyed hash of logged queries.

A plain sha256 of a short query ("alice's password") is reversed by hashing
guesses. An HMAC under a random key kept in the database (one row, made by
migration 0010, shared by every replica) still gives equal queries equal
hashes, so repeated questions can be counted, while a log row read outside
the database (CLI output, an export) cannot be tested against guesses.
"""

from __future__ import annotations

import hashlib
import hmac

from sqlalchemy import Connection, select

from memhub.db.schema import retrieval_log_key


def load_key(conn: Connection) -> bytes:
    """The installation's key; the migration made it, so a missing row means the schema is not at 0009."""
    secret = conn.execute(select(retrieval_log_key.c.secret).where(retrieval_log_key.c.id == 1)).scalar_one()
    return secret.encode("ascii")


def query_hash(key: bytes, text: str) -> str:
    """HMAC-SHA256 (hex) of the query exactly as sent."""
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
