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

pykraft adds a rule in records (``SnapshotReason.RECORDS``): once the log
since the last snapshot holds more records than the image itself (and at
least ``MIN_RECORDS_BETWEEN_SNAPSHOTS``), a snapshot is due, because a
restart would then replay more records than loading a snapshot reads. A
creation of 100,000 partitions is 7 MB of records, under Kafka's 20 MiB, so
a full restart replayed it record by record (200,000 records before a new
active controller could claim); now every node snapshots once it commits.
The rule costs at most one snapshot per image's worth of records, so the
snapshots never cost more than the replays they save.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Final

__all__ = [
    "MIN_RECORDS_BETWEEN_SNAPSHOTS",
    "SnapshotPolicy",
    "SnapshotReason",
    "snapshot_reason_text",
]

logger = logging.getLogger(__name__)


class SnapshotReason(enum.Enum):
    BYTES = "bytes"
    TIME = "time"
    RECORDS = "records"


_WHY = {
    SnapshotReason.BYTES: "metadata.log.max.record.bytes.between.snapshots reached",
    SnapshotReason.TIME: "metadata.log.max.snapshot.interval.ms passed",
    SnapshotReason.RECORDS: "more records since the last snapshot than the image holds",
}

# the records rule's floor: below it a replay costs too little to be worth a snapshot
MIN_RECORDS_BETWEEN_SNAPSHOTS: Final = 20_000


def snapshot_reason_text(reason: SnapshotReason) -> str:
    """The setting that made a snapshot due, for the log line."""
    return _WHY[reason]


class SnapshotPolicy:
    def __init__(
        self,
        *,
        max_bytes: int,
        max_interval_ms: int,
        min_records: int | None = MIN_RECORDS_BETWEEN_SNAPSHOTS,
    ) -> None:
        assert max_bytes > 0 and max_interval_ms >= 0, (max_bytes, max_interval_ms)
        self.max_bytes = max_bytes
        self.max_interval_ms = max_interval_ms
        self.min_records = min_records  # the records rule's floor (None: the rule is off)
        self.bytes_since = 0  # replayed since the last snapshot
        self.records_since = 0
        self._last_ms: int | None = None  # the last snapshot, or the first replay

    def replayed(
        self,
        size_bytes: int,
        now_ms: int,
        *,
        records: int = 0,
        image_records: Callable[[], int] | None = None,
    ) -> SnapshotReason | None:
        """Count ``size_bytes`` (``records``) of replayed records; why a snapshot is due now,
        if it is. ``image_records()`` is how many records the image holds (asked only
        once the floor is passed)."""
        if self._last_ms is None:
            self._last_ms = now_ms
        self.bytes_since += size_bytes
        self.records_since += records
        if self.bytes_since >= self.max_bytes:
            return SnapshotReason.BYTES
        floor = self.min_records
        if (image_records is not None and floor is not None and self.records_since >= floor
                and self.records_since > image_records()):
            return SnapshotReason.RECORDS
        if (self.max_interval_ms > 0 and self.bytes_since > 0
                and now_ms - self._last_ms >= self.max_interval_ms):
            return SnapshotReason.TIME
        return None

    def reset(self, now_ms: int) -> None:
        """A snapshot was written or loaded: everything replayed so far is in one."""
        self.bytes_since = 0
        self.records_since = 0
        self._last_ms = now_ms
