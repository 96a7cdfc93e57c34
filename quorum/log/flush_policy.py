"""When a data partition's log is due an fsync: ``flush.messages`` and ``flush.ms``.

Kafka leaves durability of data partitions to replication and fsyncs only
when told to: after ``flush.messages`` messages (offsets) beyond the recovery
point (``log.flush.interval.messages``), or ``flush.ms`` after the last flush
(``log.flush.interval.ms``); both default to never.  A roll also schedules a
flush of the segments it closed (Kafka's ``flushUptoOffsetExclusive`` in the
scheduler), so a rolled segment is due at once.

This module only decides.  The caller (the broker's partition task) runs
``FileLog.flush()`` in a worker thread when a reason comes back, and asks
again at ``next_flush_deadline_ms``.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

from quorum.log.config import LogConfig

__all__ = ["NEVER", "FlushReason", "UnflushedState", "flush_due", "next_flush_deadline_ms"]

# Kafka's default for both settings: Long.MAX_VALUE
NEVER: Final = 2**63 - 1


class FlushReason(enum.Enum):
    MESSAGES = "flush.messages"
    INTERVAL = "flush.ms"
    ROLLED = "segment rolled"


@attrs.frozen(kw_only=True)
class UnflushedState:
    """What the flush rule reads of a log."""

    log_end_offset: int
    recovery_point: int
    active_base_offset: int
    last_flush_ms: int


def flush_due(state: UnflushedState, *, config: LogConfig, now_ms: int) -> FlushReason | None:
    """Why the log should be flushed now, or None (nothing unflushed, or not yet)."""
    unflushed = state.log_end_offset - state.recovery_point
    if unflushed <= 0:
        return None
    if state.recovery_point < state.active_base_offset:
        return FlushReason.ROLLED
    if unflushed >= config.flush_messages:
        return FlushReason.MESSAGES
    deadline = next_flush_deadline_ms(state, config=config)
    if deadline is not None and now_ms >= deadline:
        return FlushReason.INTERVAL
    return None


def next_flush_deadline_ms(state: UnflushedState, *, config: LogConfig) -> int | None:
    """When ``flush.ms`` makes a flush due; None if nothing is unflushed or never."""
    if state.log_end_offset <= state.recovery_point or config.flush_ms >= NEVER:
        return None
    return state.last_flush_ms + config.flush_ms
