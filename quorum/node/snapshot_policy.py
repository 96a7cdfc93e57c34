"""``SnapshotPolicy``: when a node writes its next metadata snapshot.

Kafka's rule (its snapshot generator, on every node): after
``metadata.log.max.record.bytes.between.snapshots`` bytes of replayed log,
or, when some replayed records are in no snapshot yet, once
``metadata.log.max.snapshot.interval.ms`` has passed since the last
snapshot (0 turns the time rule off). Both are checked when records are
replayed, as Kafka checks them when it publishes a delta: with nothing new
there is nothing to snapshot. A snapshot loaded from the leader counts as
the last snapshot. The clock starts at the first replay (Kafka: when the
node starts, which is about the same moment). Sans-I/O: the caller passes
the time.
"""

from __future__ import annotations

import enum
import logging

__all__ = ["SnapshotPolicy", "SnapshotReason", "snapshot_reason_text"]

logger = logging.getLogger(__name__)


class SnapshotReason(enum.Enum):
    BYTES = "bytes"
    TIME = "time"


_WHY = {
    SnapshotReason.BYTES: "metadata.log.max.record.bytes.between.snapshots reached",
    SnapshotReason.TIME: "metadata.log.max.snapshot.interval.ms passed",
}


def snapshot_reason_text(reason: SnapshotReason) -> str:
    """The setting that made a snapshot due, for the log line."""
    return _WHY[reason]


class SnapshotPolicy:
    def __init__(self, *, max_bytes: int, max_interval_ms: int) -> None:
        assert max_bytes > 0 and max_interval_ms >= 0, (max_bytes, max_interval_ms)
        self.max_bytes = max_bytes
        self.max_interval_ms = max_interval_ms
        self.bytes_since = 0  # replayed since the last snapshot
        self._last_ms: int | None = None  # the last snapshot, or the first replay

    def replayed(self, size_bytes: int, now_ms: int) -> SnapshotReason | None:
        """Count ``size_bytes`` of replayed records; why a snapshot is due now, if it is."""
        if self._last_ms is None:
            self._last_ms = now_ms
        self.bytes_since += size_bytes
        if self.bytes_since >= self.max_bytes:
            return SnapshotReason.BYTES
        if (self.max_interval_ms > 0 and self.bytes_since > 0
                and now_ms - self._last_ms >= self.max_interval_ms):
            return SnapshotReason.TIME
        return None

    def reset(self, now_ms: int) -> None:
        """A snapshot was written or loaded: everything replayed so far is in one."""
        self.bytes_since = 0
        self._last_ms = now_ms
