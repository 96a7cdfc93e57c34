"""Metadata records out of ``__cluster_metadata`` log bytes.

``ReplicatedLog.read`` returns whole record batches. Data batches hold
metadata records (``quorum.wire.metadata_serde``); control batches
(LeaderChange, KRaft voters) hold none but still take offsets, so
``iter_log_batches`` reports them too: a caller that counts the end offset
sees every batch. A record that does not decode raises
``MetadataLogError`` naming its offset: the committed log is not one this
code can replay, and guessing would split the cluster's state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import attrs

from quorum.log.protocol import ReplicatedLog
from quorum.wire.batch import BatchHeader, batch_base_offset_at, batch_size_at
from quorum.wire.errors import WireError
from quorum.wire.metadata_serde import MetadataRecord, decode_metadata_record
from quorum.wire.records import DecodedBatch, decode_batch

__all__ = [
    "READ_CHUNK_BYTES",
    "CommittedRecords",
    "LogBatch",
    "LogBatchCursor",
    "MetadataLogError",
    "iter_log_batches",
    "iter_log_records",
    "read_committed_range",
    "read_committed_records",
]

READ_CHUNK_BYTES: Final = 1 << 20


class MetadataLogError(Exception):
    """Metadata log bytes that cannot be replayed (the message names the offset)."""


@attrs.frozen(kw_only=True)
class LogBatch:
    """One batch of the metadata log: its offsets, epoch and (for data) its records."""

    base_offset: int
    last_offset: int
    epoch: int
    is_control: bool
    # (offset, record) of a data batch; empty for a control batch
    records: tuple[tuple[int, MetadataRecord], ...]
    # the batch's bytes in the log (what snapshot policies count)
    size_bytes: int = 0
    # the batch's max timestamp (the leader's clock when it appended the batch)
    max_timestamp: int = -1

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def _describe_position(data: bytes | memoryview, pos: int) -> str:
    try:
        return f"the batch at offset {BatchHeader.parse(data, pos).base_offset}"
    except WireError:
        return f"the batch at byte {pos}"


def _decode(batch: DecodedBatch) -> tuple[tuple[int, MetadataRecord], ...]:
    # the per-record loop of every replay; offsets as batch.offset_of computes them
    base = batch.header.base_offset
    records: list[tuple[int, MetadataRecord]] = []
    append = records.append
    for record in batch.records:
        value = record.value
        if value is None:
            offset = base + record.offset_delta
            raise MetadataLogError(f"the metadata record at offset {offset} has no value")
        try:
            append((base + record.offset_delta, decode_metadata_record(value)))
        except WireError as exc:
            offset = base + record.offset_delta
            raise MetadataLogError(f"the metadata record at offset {offset}: {exc}") from exc
    return tuple(records)


def iter_log_batches(
    data: bytes | memoryview, *, end_offset: int | None = None
) -> Iterator[LogBatch]:
    """Each whole batch in ``data``, CRC checked; a trailing partial batch is ignored.

    With ``end_offset``, batches from that offset on are not decoded: a replay up
    to the high watermark leaves the uncommitted tail of the log alone.
    """
    pos, size = 0, len(data)
    while (length := batch_size_at(data, pos)) is not None and pos + length <= size:
        if end_offset is not None and batch_base_offset_at(data, pos) >= end_offset:
            return
        try:
            batch = decode_batch(data, pos)
        except WireError as exc:
            raise MetadataLogError(f"{_describe_position(data, pos)}: {exc}") from exc
        header = batch.header
        yield LogBatch(
            base_offset=header.base_offset,
            last_offset=header.last_offset,
            epoch=header.partition_leader_epoch,
            is_control=header.is_control,
            records=() if header.is_control else _decode(batch),
            size_bytes=length,
            max_timestamp=header.max_timestamp,
        )
        pos += length


class LogBatchCursor:
    """The log's batches from ``position`` on, decoded one at a time.

    Reads ``READ_CHUNK_BYTES`` at a time and keeps what it has not handed out
    yet, so a caller that takes a few batches per slice does not read the
    same bytes again. It reads only committed batches (below ``end``):
    committed batches never change, so the bytes kept stay valid, while an
    uncommitted tail read along with them could be truncated and written
    again by a new leader after the read.
    """

    def __init__(self, log: ReplicatedLog, position: int) -> None:
        self._log = log
        self.position = position  # the offset of the next batch handed out
        self._buffer: bytes | memoryview = b""
        self._pos = 0

    def next_record_count(self, end: int) -> int | None:
        """How many offsets the batch at ``position`` holds, from its header (None: no
        committed batch there yet); nothing is decoded."""
        if self.position >= end:
            return None
        if self._buffered_size() is None:
            self._refill(end)
        if self._buffered_size() is None:
            return None
        header = BatchHeader.parse(self._buffer, self._pos)
        if header.next_offset > end:
            return None
        return header.next_offset - max(header.base_offset, self.position)

    def next_batch(self, end: int) -> LogBatch | None:
        """The batch at ``position`` if it ends at or before ``end``; None otherwise."""
        if self.position >= end:
            return None
        if self._buffered_size() is None:
            self._refill(end)
        size = self._buffered_size()
        if size is None:
            raise MetadataLogError(
                f"the metadata log has no batch at offset {self.position} "
                f"(log end offset {self._log.log_end_offset}); records up to {end} were asked for"
            )
        batch = next(iter_log_batches(memoryview(self._buffer)[self._pos : self._pos + size]))
        if batch.base_offset != self.position and batch.next_offset <= self.position:
            # the read started at the batch holding ``position``: skip to it
            self._pos += size
            return self.next_batch(end)
        if batch.next_offset > end:
            return None  # committed only in part: wait for the rest
        self._pos += size
        self.position = batch.next_offset
        return batch

    def _buffered_size(self) -> int | None:
        size = batch_size_at(self._buffer, self._pos)
        if size is None or self._pos + size > len(self._buffer):
            return None
        return size

    def _refill(self, end: int) -> None:
        result = self._log.read(self.position, READ_CHUNK_BYTES, max_offset=end)
        self._buffer, self._pos = result.records, 0


def iter_log_records(data: bytes | memoryview) -> Iterator[tuple[int, int, MetadataRecord]]:
    """(offset, epoch, record) of every metadata record in ``data``; control batches skipped."""
    for batch in iter_log_batches(data):
        for offset, record in batch.records:
            yield offset, batch.epoch, record


@attrs.frozen
class CommittedRecords:
    records: list[tuple[int, MetadataRecord]]
    # the epoch of the batch holding the range's last offset; None for an empty range
    last_epoch: int | None
    size_bytes: int
    # the max timestamp of the range's last batch; None for an empty range
    last_timestamp_ms: int | None = None


def read_committed_range(
    log: ReplicatedLog, start: int, end: int, *, max_bytes: int = READ_CHUNK_BYTES
) -> CommittedRecords:
    """``read_committed_records`` plus the bytes and the last timestamp of the batches read."""
    size = 0
    timestamp: int | None = None

    def count(batch: LogBatch) -> None:
        nonlocal size, timestamp
        size += batch.size_bytes
        timestamp = batch.max_timestamp

    records, last_epoch = read_committed_records(log, start, end, max_bytes=max_bytes, on_batch=count)
    return CommittedRecords(records, last_epoch, size, timestamp)


def read_committed_records(
    log: ReplicatedLog,
    start: int,
    end: int,
    *,
    max_bytes: int = READ_CHUNK_BYTES,
    on_batch: Callable[[LogBatch], None] | None = None,
) -> tuple[list[tuple[int, MetadataRecord]], int | None]:
    """The records at offsets ``[start, end)`` and the epoch of the last batch read.

    The epoch is that of the batch holding offset ``end - 1`` (control batches
    count), None when the range is empty. Reads loop until ``end``: one read
    never crosses a segment of the file log.
    """
    records: list[tuple[int, MetadataRecord]] = []
    last_epoch: int | None = None
    position = start
    while position < end:
        result = log.read(position, max_bytes)
        if result.is_empty or result.next_offset <= position:
            raise MetadataLogError(
                f"the metadata log has no batch at offset {position} "
                f"(log end offset {log.log_end_offset}); records up to {end} were asked for"
            )
        for batch in iter_log_batches(result.records, end_offset=end):
            if batch.next_offset <= start:
                continue
            last_epoch = batch.epoch
            records += [(o, r) for o, r in batch.records if start <= o < end]
            if on_batch is not None:
                on_batch(batch)
        position = result.next_offset
    return records, last_epoch
