"""Cursors: a feed position, sealed so that clients can neither read nor forge it.

A position is a (transaction id, sequence number) pair of the whole hub: shown in clear, the
numbers would tell a subscriber how many changes happened anywhere, in namespaces it cannot read,
between two of its events. Sealed with AES-SIV, a deterministic authenticated cipher, the same
position always gives the same cursor (so a redelivered event carries the same cursor and can be
recognised as a repeat) while a cursor reveals nothing but equality, and an edited or foreign one
fails to open. The key lives in the database (change_feed_key), so every replica reads the same
cursors.

Two layouts. An event's cursor (v1) seals its position alone, so a redelivery repeats it. A
heartbeat's cursor (v2, ``seal_heartbeat``) adds 16 random bytes: a stream starting at the head of
the feed, or moving its heartbeat on by the clock (memhub/feed/subscription.py), would otherwise give
a cursor whose equality with another one says whether anything happened anywhere in between.
"""

from __future__ import annotations

import base64
import binascii
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from memhub.errors import InvalidArgument
from memhub.feed.metadata import RESUME_CURSOR_KEY as RESUME_CURSOR_KEY  # re-exported where it always was
from memhub.feed.model import Position

MAX_CURSOR_CHARS = 128
_VERSION = 1
_LAYOUT = struct.Struct(">BQQ")  # version, txid, seq
_HEARTBEAT_VERSION = 2
_HEARTBEAT_LAYOUT = struct.Struct(">BQQ16s")  # version, txid, seq, random salt
SALT_BYTES = 16
_CONTEXT = [b"memhub change feed cursor v1"]


class CursorCodec:
    """Seals and opens cursors with one key; safe to share between threads."""

    def __init__(self, key: bytes) -> None:
        if len(key) not in (32, 48, 64):
            raise ValueError(f"a cursor key has 32, 48 or 64 bytes, not {len(key)}")
        self._cipher = AESSIV(key)

    def seal(self, position: Position) -> str:
        sealed = self._cipher.encrypt(_LAYOUT.pack(_VERSION, position.txid, position.seq), _CONTEXT)
        return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")

    def seal_heartbeat(self, position: Position, salt: bytes) -> str:
        """A resumable cursor for ``position`` that equals no other cursor unless ``salt`` (SALT_BYTES random bytes)
        is the same: it tells its holder nothing but where to resume."""
        plain = _HEARTBEAT_LAYOUT.pack(_HEARTBEAT_VERSION, position.txid, position.seq, salt)
        return base64.urlsafe_b64encode(self._cipher.encrypt(plain, _CONTEXT)).rstrip(b"=").decode("ascii")

    def open(self, cursor: str, field: str = "cursor") -> Position:
        """The position a cursor of this hub stands for; InvalidArgument naming ``field`` for anything else."""
        problem = (
            f"is not a cursor of this hub; pass one exactly as a ChangeEvent or Heartbeat gave it, or leave {field} "
            "empty to start from now"
        )
        if len(cursor) > MAX_CURSOR_CHARS:
            raise InvalidArgument(field, f"is {len(cursor)} characters; a cursor has at most {MAX_CURSOR_CHARS}")
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            plain = self._cipher.decrypt(raw, _CONTEXT)
            if len(plain) == _HEARTBEAT_LAYOUT.size:
                version, txid, seq, salt = _HEARTBEAT_LAYOUT.unpack(plain)
                expected, again = _HEARTBEAT_VERSION, self.seal_heartbeat(Position(txid, seq), salt)
            else:
                version, txid, seq = _LAYOUT.unpack(plain)
                expected, again = _VERSION, self.seal(Position(txid, seq))
        except (binascii.Error, ValueError, InvalidTag, struct.error):
            raise InvalidArgument(field, problem) from None
        if version != expected or again != cursor:  # only the exact text the hub issued
            raise InvalidArgument(field, problem)
        return Position(txid, seq)
