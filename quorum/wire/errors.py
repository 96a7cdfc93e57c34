"""The wire layer's exception hierarchy (bad input at a boundary).

Protocol rejections are error codes in responses (``quorum.wire.error_codes``);
these exceptions are for bytes that cannot be decoded or values that cannot be
encoded.  Every decode failure of untrusted bytes raises a ``WireError``
subclass and nothing else.
"""

from __future__ import annotations

__all__ = [
    "CorruptRecordError",
    "FrameTooLargeError",
    "WireDecodeError",
    "WireEncodeError",
    "WireError",
]


class WireError(Exception):
    """Base class of every error the wire codec raises."""


class WireDecodeError(WireError):
    """Bytes that do not decode as the declared message or type."""


class WireEncodeError(WireError):
    """A value that cannot be encoded at the requested version."""


class FrameTooLargeError(WireDecodeError):
    """A frame whose declared size exceeds the configured maximum."""


class CorruptRecordError(WireDecodeError):
    """A record batch whose header, length or CRC is invalid."""
