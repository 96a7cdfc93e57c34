"""The log's exception hierarchy: misuse or bad input at the log's boundary.

Broken invariants inside the log are ``assert`` statements; these exceptions
are for callers that pass bad batches or offsets, and for files on disk that
cannot be trusted.  Every message says what was wrong and where.
"""

from __future__ import annotations

__all__ = [
    "InvalidAppendError",
    "LogCorruptionError",
    "LogError",
    "OffsetOutOfRangeError",
    "SnapshotNotFoundError",
]


class LogError(Exception):
    """Base class of every error the log raises."""


class LogCorruptionError(LogError):
    """A file of the log holds bytes that cannot be served (names the file and byte position)."""


class OffsetOutOfRangeError(LogError):
    """An offset outside ``[log_start_offset, log_end_offset]`` (or another allowed range)."""


class InvalidAppendError(LogError):
    """Batches that cannot be appended: malformed, too large, not contiguous, or a stale epoch."""


class SnapshotNotFoundError(LogError):
    """A snapshot id that the log does not hold."""
