"""UUIDs on the wire: Kafka's textual form (22 characters of unpadded base64url) and decoding.

``uuid_from_bytes`` is what decoders use for the 16 raw bytes of a UUID field: the
same value as ``uuid.UUID(bytes=raw)`` at a third of the cost, and one shared object
per distinct id while its cache holds it (100,000 partition records of one topic
carry one topic id; UUIDs are immutable, so sharing them is safe).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from typing import Final

from quorum.wire.errors import WireDecodeError

__all__ = [
    "METADATA_TOPIC_ID",
    "ZERO_UUID",
    "cached_uuid",
    "random_uuid",
    "uuid_from_bytes",
    "uuid_from_str",
    "uuid_to_str",
]

_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]{22}")
ZERO_UUID: Final = uuid.UUID(int=0)
# The topic id of __cluster_metadata: UUID(0, 1).
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)

# Decoded ids, by their bytes; cleared when full, so hostile input cannot grow it.
_CACHE_SIZE: Final = 4096
_CACHE: Final[dict[bytes, uuid.UUID]] = {}
# The UUID of these 16 bytes if it is cached, else None (``uuid_from_bytes`` without
# the call, for generated decoders: ``cached_uuid(raw) or uuid_from_bytes(raw)``).
cached_uuid: Final[Callable[[bytes], uuid.UUID | None]] = _CACHE.get
_new = object.__new__
_set = object.__setattr__
_UNKNOWN: Final = uuid.SafeUUID.unknown
# UUID(bytes=raw) stores exactly these slots (int and is_safe) and nothing else;
# should a Python version add state, build through the constructor instead.
_SLOTS_KNOWN: Final = set(uuid.UUID.__slots__) == {"int", "is_safe", "__weakref__"}


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=raw)`` for 16 raw bytes, shared per value while cached."""
    found = _CACHE.get(raw)
    if found is None:
        if len(raw) != 16:
            raise ValueError("bytes is not a 16-char string")  # UUID()'s own check
        if _SLOTS_KNOWN:
            found = _new(uuid.UUID)
            _set(found, "int", int.from_bytes(raw, "big"))
            _set(found, "is_safe", _UNKNOWN)
        else:  # pragma: no cover - a Python whose UUID has other slots
            found = uuid.UUID(bytes=raw)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[raw] = found
    return found


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> uuid.UUID:
    """Parse Kafka's 22-character base64url form; raises WireDecodeError if malformed."""
    if len(text) != 22 or not _BASE64URL.fullmatch(text):
        raise WireDecodeError(f"{text!r} is not a 22-character base64url UUID")
    try:
        raw = base64.b64decode(text + "==", altchars=b"-_", validate=True)
    except (ValueError, TypeError) as exc:
        raise WireDecodeError(f"{text!r} is not a base64url UUID: {exc}") from None
    # Kafka accepts any 22 characters that decode to 16 bytes, including the
    # non-canonical id in its own documentation (MkU3OEVBNTcwNTJENDM2Qk).
    if len(raw) != 16:
        raise WireDecodeError(f"{text!r} does not decode to 16 bytes")
    return uuid.UUID(bytes=raw)


def random_uuid(rng_bytes: bytes | None = None) -> uuid.UUID:
    """A random UUID that Kafka would accept as an id.

    Kafka never hands out the zero UUID, the metadata topic id, or a UUID whose
    text starts with '-' (it would read as a command-line flag).
    """
    while True:
        value = uuid.UUID(bytes=rng_bytes) if rng_bytes is not None else uuid.uuid4()
        rng_bytes = None
        if value in (ZERO_UUID, METADATA_TOPIC_ID) or uuid_to_str(value).startswith("-"):
            continue
        return value
