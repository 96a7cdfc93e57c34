"""``UnwrittenLog``: what a partition that has no log yet reads and writes through.

A broker told to host a new partition hosts it at once (Kafka's
``createLogIfNotExists``), but a partition that never receives a record needs
no directory, no ``partition.metadata``, no segment file, and on a broker of
100,000 idle replicas not even an object: its ``Partition`` holds no log, and
``Partition.log`` hands out this view for the moment of the call. Reads
answer as the empty log it is (an empty ``MemoryLog``, which the FileLog ==
MemoryLog state machine holds equal to an empty ``FileLog``); the first write
(an append, a truncation, a move of the log start) has the owner make the
partition's log (``create_log``: its directory and files) and goes to it, as
does everything after.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from quorum.log.memory_log import MemoryLog

__all__ = ["LogOwner", "UnwrittenLog"]

# what an empty log answers the same whether or not it has files
_READS: Final = frozenset({
    "log_start_offset",
    "log_end_offset",
    "last_fetched_epoch",
    "end_offset_for_epoch",
    "read",
    "read_records",
    "offset_for_timestamp",
    "max_timestamp",
    "size_in_bytes",
    "latest_snapshot_id",
    "earliest_snapshot_id",
    "snapshot_ids",
    "flushed_offset",
    "recovery_point",
    "active_segment_base_offset",
    "load_producer_snapshot",
    "producer_snapshot_offsets",
})
# never written: every unwritten partition reads from it
_EMPTY: Final = MemoryLog()


class LogOwner(Protocol):
    def create_log(self) -> Any:
        """The partition's own log, made now (its directory and files)."""
        ...


class UnwrittenLog:
    __slots__ = ("_owner",)

    def __init__(self, owner: LogOwner) -> None:
        self._owner = owner

    def delete_old_segments(self, now_ms: int, *, high_watermark: int) -> int:
        """Retention: nothing to delete before the first write."""
        return 0

    def __getattr__(self, name: str) -> Any:
        if name in _READS:
            return getattr(_EMPTY, name)
        return getattr(self._owner.create_log(), name)

    def __repr__(self) -> str:
        return "UnwrittenLog()"
