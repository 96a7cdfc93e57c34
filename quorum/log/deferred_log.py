"""``DeferredLog``: a new partition's log that touches the disk only when first written.

A broker told to host a new partition creates its log at once (Kafka's
``createLogIfNotExists``), but a partition that never receives a record needs
no directory, no ``partition.metadata`` and no segment file: 100,000 new
partitions would otherwise cost 100,000 directories and their fsyncs on the
thread that serves clients. Until its first write a ``DeferredLog`` answers
every read as the empty log it is (an empty ``MemoryLog``, which the
FileLog == MemoryLog state machine holds equal to an empty ``FileLog``); the
first write (an append, a truncation, a move of the log start) makes the
partition's directory and its ``FileLog`` through its owner's
``materialize_log`` and from
then on everything goes to that log.
"""

from __future__ import annotations

import uuid
from typing import Any, Final, Protocol

from quorum.log.memory_log import MemoryLog

__all__ = ["DeferredLog", "Materializer"]

# what an empty log answers the same whether or not it has files
_READS: Final = frozenset({
    "log_start_offset",
    "log_end_offset",
    "last_fetched_epoch",
    "end_offset_for_epoch",
    "read",
    "offset_for_timestamp",
    "max_timestamp",
    "size_in_bytes",
    "latest_snapshot_id",
    "earliest_snapshot_id",
    "snapshot_ids",
    "flushed_offset",
    "recovery_point",
})
# never written: every DeferredLog reads from it until it has a log of its own
_EMPTY: Final = MemoryLog()


class Materializer(Protocol):
    def materialize_log(
        self, deferred: DeferredLog, name: tuple[str, int], topic_id: uuid.UUID
    ) -> Any:
        """The partition's log, made now (its directory and files), for ``deferred``."""
        ...


class DeferredLog:
    # slots, and the owner kept instead of a bound method and an argument tuple: 100,000
    # of these sit idle on a large broker (the bound method and tuple cost 120 B each)
    __slots__ = ("_log", "_name", "_owner", "_topic_id")

    def __init__(self, owner: Materializer, name: tuple[str, int], topic_id: uuid.UUID) -> None:
        self._owner: Materializer | None = owner
        self._name = name
        self._topic_id = topic_id
        self._log: Any = None

    @property
    def is_materialized(self) -> bool:
        return self._log is not None

    def materialized(self) -> Any:
        """The partition's own log, made now if it has none yet."""
        if self._log is None:
            assert self._owner is not None
            # (the owner is let go only once the log exists: a failed write may be retried)
            log = self._owner.materialize_log(self, self._name, self._topic_id)
            self._log, self._owner = log, None
        return self._log

    def delete_old_segments(self, now_ms: int, *, high_watermark: int) -> int:
        """Retention: nothing to delete before the first write."""
        if self._log is None:
            return 0
        return int(self._log.delete_old_segments(now_ms, high_watermark=high_watermark))

    def __getattr__(self, name: str) -> Any:
        log = self._log
        if log is None:
            if name in _READS:
                return getattr(_EMPTY, name)
            log = self.materialized()
        return getattr(log, name)

    def __repr__(self) -> str:
        return f"DeferredLog({self._log!r})"
