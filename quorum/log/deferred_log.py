"""``DeferredLog``: a new partition's log that touches the disk only when first written.

A broker told to host a new partition creates its log at once (Kafka's
``createLogIfNotExists``), but a partition that never receives a record needs
no directory, no ``partition.metadata`` and no segment file: 100,000 new
partitions would otherwise cost 100,000 directories and their fsyncs on the
thread that serves clients. Until its first write a ``DeferredLog`` answers
every read as the empty log it is (an empty ``MemoryLog``, which the
FileLog == MemoryLog state machine holds equal to an empty ``FileLog``); the
first write (an append, a truncation, a move of the log start) makes the
partition's directory and its ``FileLog`` through ``materialize`` and from
then on everything goes to that log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from quorum.log.memory_log import MemoryLog

__all__ = ["DeferredLog"]

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


class DeferredLog:
    # slots and no closure: 100,000 of them sit idle on a large broker
    __slots__ = ("_args", "_log", "_materialize")

    def __init__(self, materialize: Callable[..., Any], *args: Any) -> None:
        self._materialize: Callable[..., Any] | None = materialize
        self._args: tuple[Any, ...] = args
        self._log: Any = None

    @property
    def is_materialized(self) -> bool:
        return self._log is not None

    def materialized(self) -> Any:
        """The partition's own log, made now if it has none yet."""
        if self._log is None:
            assert self._materialize is not None
            self._log, self._materialize = self._materialize(*self._args), None
            self._args = ()
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
