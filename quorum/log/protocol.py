"""The log protocol: what the Raft core and the replica manager need from a log.

Two implementations share it: ``FileLog`` (Kafka's on-disk layout) and
``MemoryLog`` (the simulator's, with an unflushed tail that a simulated crash
drops).  Both behave identically for every observable result; a property test
runs the same operations against both.

Semantics shared by both implementations:

* Offsets are assigned per record; a batch covers ``[base_offset, last_offset]``
  and batches are contiguous (the next base offset is the previous last + 1),
  except in a data partition, whose offsets may skip where a log cleaner
  removed records (its own, or its leader's: a follower copies the gaps).
* ``append`` (leader) rewrites base offsets from the log end offset and stamps
  the partition leader epoch in place; a writable buffer passed in is modified.
  ``append_as_follower`` keeps the offsets and epochs it is given.
* ``read`` returns whole batches only, starting with the one that contains
  ``start_offset`` (or, in a gap, the first after it), and at least one batch
  when any exists at that offset even if it is larger than ``max_bytes``
  (KIP-74).  A read never crosses a segment boundary of the file log, so a
  caller loops until ``next_offset`` is the end.
* ``truncate_to(offset)`` keeps whole batches only: a batch that contains
  ``offset`` (or, in a gap, the first after it) is dropped whole with every
  later one, so the log end offset becomes the end of the last batch kept
  (the Raft follower always truncates to a batch boundary, where that is the
  offset itself).  Truncation is durable when it returns, and it leaves
  ``flushed_offset == log_end_offset``.
* ``flush()`` makes everything below the log end offset durable.  The file log
  also syncs a segment when it rolls, so ``flushed_offset`` can move without a
  ``flush()`` call; it never exceeds the log end offset.
* The leader-epoch cache never holds an epoch that starts at or after the log
  end offset: such an entry could not be told apart from one whose batches a
  crash lost, so moving the log start to the log end forgets the epochs
  (``last_fetched_epoch`` then falls back to the latest snapshot's epoch).
* Snapshots (KIP-630) are identified by ``OffsetAndEpoch(end offset exclusive,
  epoch of the last contained record)`` and are durable once created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeAlias

import attrs

from quorum.log.producer_snapshots import ProducerEntry, ProducerSnapshot
from quorum.wire.file_region import FileRegion

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "AppendInfo",
    "OffsetAndEpoch",
    "ReadResult",
    "ReplicatedLog",
    "SnapshotData",
    "metadata_end_offset_for_epoch",
]

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@attrs.frozen(order=True)
class OffsetAndEpoch:
    """An offset and a leader epoch; ordered by offset, then epoch (as Kafka's)."""

    offset: int
    epoch: int


@attrs.frozen(kw_only=True)
class AppendInfo:
    """What an append wrote: offsets ``first_offset..last_offset`` inclusive."""

    first_offset: int
    last_offset: int
    last_epoch: int
    batch_count: int
    size_bytes: int


@attrs.frozen(kw_only=True)
class ReadResult:
    """Whole batches read from the log.

    ``records`` is empty when nothing was read (``start_offset`` at the end, or
    the first batch reaches ``max_offset``).  ``base_offset`` is the first
    returned batch's base offset (it may be below the requested offset), and
    ``next_offset`` the offset after the last returned batch.
    """

    records: bytes | memoryview
    base_offset: int
    next_offset: int

    @property
    def is_empty(self) -> bool:
        return len(self.records) == 0


# a snapshot's bytes, or its parts in order (a large one is never joined into one copy)
SnapshotData: TypeAlias = bytes | memoryview | Sequence[bytes]


class ReplicatedLog(Protocol):
    """The operations the Raft core and the replica manager use."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def flushed_offset(self) -> int: ...

    @property
    def size_in_bytes(self) -> int:
        """Bytes of batches held (for retention of the metadata log)."""
        ...

    @property
    def last_fetched_epoch(self) -> int:
        """Epoch of the last batch; else the latest snapshot's epoch; else 0."""
        ...

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None: ...

    @property
    def earliest_snapshot_id(self) -> OffsetAndEpoch | None: ...

    def append(
        self, batches: bytes | bytearray | memoryview, *, epoch: int, crc_checked: bool = False
    ) -> AppendInfo:
        """Leader append: assign offsets from the log end offset, stamp ``epoch``.

        ``crc_checked``: the caller has just checked every batch's CRC-32C (a broker's
        produce path does, to answer CORRUPT_MESSAGE in Kafka's order); the log does not
        compute it a second time. Every other check still runs."""
        ...

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> AppendInfo:
        """Follower append: the first base offset must equal the log end offset; in a data
        partition it may be above it, and each batch may start past the end of the one
        before (a cleaned leader's gaps). A batch below the log end, or overlapping the
        one before it, is refused (``InvalidAppendError``) either way."""
        ...

    def read(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> ReadResult:
        """Whole batches from the one containing ``start_offset``.

        ``max_offset`` (exclusive, e.g. the high watermark) leaves out every
        batch whose last offset is at or above it.
        """
        ...

    def read_records(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> bytes | memoryview | FileRegion:
        """``read(...).records`` for a response: a log on disk gives a ``FileRegion`` of
        its segment file (sent from the page cache, never read into the process)."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Drop every batch that contains an offset at or above ``offset``."""
        ...

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every batch; the log becomes empty with start = end = ``offset``."""
        ...

    def truncate_to_latest_snapshot(self) -> bool:
        """If the latest snapshot is ahead of the log, empty the log at its offset."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's OffsetForLeaderEpoch answer from the leader-epoch cache.

        The largest epoch ``<= epoch`` and the start offset of the next larger
        epoch, or the log end offset when that epoch is the latest;
        ``OffsetAndEpoch(-1, -1)`` when undefined (no cache entry, ``epoch`` is
        -1, or ``epoch`` is larger than every known epoch).  When ``epoch`` is
        below every cached epoch the answer is ``(first cached start, epoch)``.
        """
        ...

    def flush(self) -> int:
        """Make the log durable up to its end; returns the flushed offset."""
        ...

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        """Store a whole snapshot atomically; False if that id already exists or lies below
        the log start offset (Kafka refuses those too).

        ``data`` is the bytes, or their parts in order. The file log may run this in a
        worker thread (the node's trio thread keeps serving while a large snapshot is
        written and synced): it touches nothing but its snapshot files and the set of
        snapshot ids, which it changes last.
        """
        ...

    def write_partial_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int, data: bytes
    ) -> None:
        """Write a downloaded chunk at ``position`` of ``snapshot_id``'s partial copy,
        durably (position 0 starts a new copy). A partial copy is no snapshot: it is not
        listed, read or served, and a restart forgets it."""
        ...

    def store_partial_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Make the complete partial copy of ``snapshot_id`` a stored snapshot, atomically;
        False (the copy dropped) if that id already exists."""
        ...

    def read_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int | None = None
    ) -> bytes:
        """Bytes ``[position, position + max_bytes)`` of a snapshot (all by default)."""
        ...

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int: ...

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        """Every snapshot id held, oldest first."""
        ...

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Advance the log start offset to an existing snapshot and forget older ones."""
        ...

    def advance_log_start_offset(self, offset: int) -> None:
        """Raise the log start offset (at most to the log end offset)."""
        ...

    def close(self) -> None: ...

    # -- data partitions: producer-state snapshots (``quorum.log.producer_snapshots``) --

    @property
    def active_segment_base_offset(self) -> int:
        """Where the active segment starts: an append that moves it rolled a segment (the
        replica core snapshots its producer state there, as Kafka does at a roll)."""
        ...

    def write_producer_snapshot(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        """Store the producer state below ``offset`` (within [log start, log end]),
        atomically and durably. Truncations, log-start moves and recovery delete the
        snapshots they make wrong or useless."""
        ...

    def load_producer_snapshot(self, at_or_below: int) -> ProducerSnapshot | None:
        """The latest readable producer snapshot at or below ``at_or_below`` (a corrupt
        one is logged, deleted and skipped)."""
        ...

    def producer_snapshot_offsets(self) -> list[int]: ...


def metadata_end_offset_for_epoch(log: ReplicatedLog, epoch: int) -> OffsetAndEpoch:
    """The Raft metadata log's end offset for ``epoch`` (KafkaMetadataLog's rule).

    Like ``end_offset_for_epoch`` but never undefined: when the cache has no
    answer it is ``(log end offset, last fetched epoch)``, and an epoch older
    than the whole log answers with the snapshot at the log start.  This is the
    value a leader returns as DivergingEpoch and a follower truncates with.
    """
    found = log.end_offset_for_epoch(epoch)
    if found.offset == UNDEFINED_OFFSET:
        return OffsetAndEpoch(log.log_end_offset, log.last_fetched_epoch)
    earliest = log.earliest_snapshot_id
    if earliest is not None and found.offset == earliest.offset and found.epoch == epoch:
        return earliest
    return found
