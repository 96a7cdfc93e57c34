"""The chained digest of committed data values that state machines and snapshots are checked by."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["GENESIS", "chain"]

GENESIS = bytes(16)


def chain(digest: bytes, values: Iterable[bytes | None]) -> bytes:
    """Fold ``values`` into ``digest``: equal chains mean equal value sequences."""
    for value in values:
        digest = hashlib.blake2b(digest + (value or b""), digest_size=16).digest()
    return digest
