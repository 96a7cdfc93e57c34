"""Kafka's textual form of a UUID: 22 characters of unpadded base64url."""

from __future__ import annotations

import base64
import re
import uuid
from typing import Final

from quorum.wire.errors import WireDecodeError

__all__ = ["METADATA_TOPIC_ID", "ZERO_UUID", "random_uuid", "uuid_from_str", "uuid_to_str"]

_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]{22}")
ZERO_UUID: Final = uuid.UUID(int=0)
# The topic id of __cluster_metadata: UUID(0, 1).
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)


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
