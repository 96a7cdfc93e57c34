"""The global record of committed batches, and per-log progress against it.

Every batch below any node's high watermark enters the record the first time
a node exposes it; from then on every node that exposes that offset must
hold the same bytes (same offsets, epoch, records and CRC). ``LogProgress``
measures how long a prefix of one log matches the record, incrementally, so
checking after every event stays cheap. The record also keeps, at every batch
boundary, the count and chained digest of the data values below it
(``prefix_at``): what a state machine or a snapshot ending there must hold.
A log that starts at a snapshot is compared from its start: the snapshot
stands for the prefix (and is checked against ``prefix_at`` on its own).
"""

from __future__ import annotations

import bisect

from quorum.log import MemoryLog
from quorum.wire.batch import BatchHeader, iter_batch_headers
from quorum.wire.records import decode_batch

from .digest import GENESIS, chain

__all__ = ["CommittedRecord", "InvariantViolation", "LogProgress"]


class InvariantViolation(AssertionError):
    """A safety property of the simulated cluster is broken."""


class CommittedRecord:
    def __init__(self) -> None:
        self._bases: list[int] = []
        self._data: list[bytes] = []
        self.end = 0  # every offset below is committed
        # batch boundary -> (data records below it, chained digest of their values)
        self._prefix: dict[int, tuple[int, bytes]] = {0: (0, GENESIS)}

    def prefix_at(self, offset: int) -> tuple[int, bytes] | None:
        return self._prefix.get(offset)

    def batch_at(self, base_offset: int) -> bytes | None:
        index = bisect.bisect_left(self._bases, base_offset)
        if index < len(self._bases) and self._bases[index] == base_offset:
            return self._data[index]
        return None

    def absorb(self, node_id: int, log: MemoryLog, start: int, high_watermark: int) -> int:
        """Compare or add the node's whole batches in [start, high watermark); the new start."""
        start = max(start, log.log_start_offset)  # below: the snapshot at the log start
        if start >= high_watermark or start >= log.log_end_offset:
            return start
        read = log.read(start, 1 << 40, max_offset=high_watermark)
        data = bytes(read.records)
        position = start
        for pos, header in iter_batch_headers(data, check_crc=False):
            if header.last_offset < start:
                continue
            batch = data[pos : pos + header.size]
            self._compare_or_add(node_id, header, batch)
            position = header.next_offset
        return position

    def _compare_or_add(self, node_id: int, header: BatchHeader, batch: bytes) -> None:
        base = header.base_offset
        if base < self.end:
            known = self.batch_at(base)
            if known != batch:
                raise InvariantViolation(
                    f"node {node_id} exposes a batch at offset {base} (epoch "
                    f"{header.partition_leader_epoch}) that differs from the committed one"
                )
            return
        if base != self.end:
            raise InvariantViolation(
                f"node {node_id} exposes offset {base} but the committed record ends at {self.end}"
            )
        self._bases.append(base)
        self._data.append(batch)
        count, digest = self._prefix[self.end]
        if not header.is_control:
            values = [record.value for record in decode_batch(batch).records]
            count, digest = count + len(values), chain(digest, values)
        self.end = header.next_offset
        self._prefix[self.end] = (count, digest)

    def values(self, start: int, end: int) -> list[bytes | None]:
        """The record values at offsets [start, end) (all inside the record)."""
        assert end <= self.end, (start, end, self.end)
        index = bisect.bisect_right(self._bases, start) - 1
        found: list[bytes | None] = []
        while index < len(self._bases) and self._bases[index] < end:
            batch = decode_batch(self._data[index])
            for i, record in enumerate(batch.records):
                offset = batch.header.base_offset + i
                if start <= offset < end:
                    found.append(record.value)
            index += 1
        return found


class LogProgress:
    """How far one log's prefix is known to match the committed record."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        self.matches_to = 0

    def lost(self, offset: int) -> None:
        self.matches_to = min(self.matches_to, offset)

    def advance(self, record: CommittedRecord) -> int:
        log = self.log
        # the snapshot at the log start holds what is below (checked against the record)
        self.matches_to = max(self.matches_to, log.log_start_offset)
        while self.matches_to < min(record.end, log.log_end_offset):
            read = log.read(self.matches_to, 1)
            header = BatchHeader.parse(read.records)
            expected = record.batch_at(header.base_offset)
            if header.base_offset != self.matches_to or expected is None:
                break
            if bytes(read.records[: header.size]) != expected:
                break
            self.matches_to = header.next_offset
        return self.matches_to

    @property
    def durable_match(self) -> int:
        return min(self.matches_to, self.log.flushed_offset)
