"""One partition's fetched bytes, read out record by record or batch by batch.

A ``CompletedFetch`` holds the ``records`` of one partition of a Fetch
answer, laid out as the broker stored them, and reads them from the
position the fetch was made at, as Kafka's consumer does:

* batches that end before the position are skipped (a broker returns the
  whole batch that holds the fetch offset), and so are the records before
  the position inside the first batch;
* control batches (transaction markers) are skipped, the position moving
  past them; aborted transactions are not filtered (read_uncommitted);
* a trailing partial batch is ignored (brokers may cut the data at the size
  limit); data that holds no whole batch at all is an error, since the
  consumer could never make progress (MESSAGE_TOO_LARGE: raise
  ``max.partition.fetch.bytes``);
* CRCs are checked when ``check.crcs`` is on (CORRUPT_MESSAGE otherwise).

``next_records`` builds one ``ConsumerRecord`` per record; ``next_batches``
hands out ``FetchedBatch``es, whose ``columns()`` decode the records into
parallel lists and whose ``data`` is the batch's bytes, untouched.
"""

from __future__ import annotations

import attrs

from broker.client.columns import RecordColumns, decode_columns
from broker.client.errors import KafkaError
from broker.client.types import ConsumerRecord, TimestampType, TopicPartition, new_consumer_record
from quorum.wire.batch import ATTR_TIMESTAMP_TYPE, BATCH_HEADER_SIZE, BatchHeader, batch_size_at
from quorum.wire.compression import Compression, decompress
from quorum.wire.error_codes import Errors
from quorum.wire.errors import CorruptRecordError

__all__ = ["CompletedFetch", "FetchedBatch"]


def _columns(data: bytes | memoryview, pos: int, header: BatchHeader) -> RecordColumns:
    body = bytes(memoryview(data)[pos + BATCH_HEADER_SIZE : pos + header.size])
    if header.compression != Compression.NONE:
        body = decompress(header.compression, body)
    return decode_columns(body, header.record_count)


def _timestamp_type(header: BatchHeader) -> TimestampType:
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        return TimestampType.LOG_APPEND_TIME
    return TimestampType.CREATE_TIME


@attrs.frozen
class FetchedBatch:
    """One record batch of a fetch answer, from ``first_offset`` on."""

    tp: TopicPartition
    header: BatchHeader
    # the whole encoded batch as the broker stored it (base offset and epoch set)
    data: bytes
    # records below this offset were read before: ``columns()`` leaves them out
    first_offset: int

    @property
    def leader_epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def timestamp_type(self) -> TimestampType:
        return _timestamp_type(self.header)

    @property
    def next_offset(self) -> int:
        return self.header.next_offset

    def columns(self) -> RecordColumns:
        """The records as parallel lists; offsets and timestamps are deltas (see ``offsets``)."""
        columns = _columns(self.data, 0, self.header)
        skip = 0
        base = self.header.base_offset
        while skip < len(columns) and base + columns.offset_deltas[skip] < self.first_offset:
            skip += 1
        return columns.sliced(skip)

    def offsets(self, columns: RecordColumns) -> list[int]:
        base = self.header.base_offset
        return [base + delta for delta in columns.offset_deltas]

    def timestamps(self, columns: RecordColumns) -> list[int]:
        if self.header.attributes & ATTR_TIMESTAMP_TYPE:
            return [self.header.max_timestamp] * len(columns)
        base = self.header.base_timestamp
        return [base + delta for delta in columns.timestamp_deltas]


class CompletedFetch:
    """The unread part of one partition's fetched data."""

    def __init__(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        data: bytes,
        *,
        check_crcs: bool = True,
    ) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        # the next offset to hand out, and the epoch of the last record handed out
        self.next_offset = fetch_offset
        self.last_epoch = -1
        self._data = data
        self._check_crcs = check_crcs
        self._pos = 0
        self._batch: tuple[BatchHeader, RecordColumns, int] | None = None
        self._saw_whole_batch = False

    @property
    def exhausted(self) -> bool:
        return self._batch is None and self._peek() is None

    def _peek(self) -> tuple[int, BatchHeader] | None:
        """The next whole data batch at or past the position; skips what it passes."""
        data = self._data
        while (size := batch_size_at(data, self._pos)) is not None and self._pos + size <= len(data):
            pos = self._pos
            try:
                header = BatchHeader.parse(data, pos)
            except CorruptRecordError as exc:
                raise self._corrupt(str(exc)) from None
            if self._check_crcs and not header.crc_matches(data, pos):
                raise self._corrupt(f"record batch at offset {header.base_offset} fails its CRC")
            self._saw_whole_batch = True
            if header.next_offset <= self.next_offset:
                self._pos += size  # read before: the broker starts at the batch holding it
            elif header.is_control:
                self._pos += size
                self.next_offset = header.next_offset
            else:
                return pos, header
        if not self._saw_whole_batch and len(data) > 0:
            raise KafkaError(
                Errors.MESSAGE_TOO_LARGE,
                f"the fetch of {self.tp} at offset {self.fetch_offset} returned {len(data)} "
                "bytes without one whole record batch; raise max.partition.fetch.bytes",
            )
        return None

    def _corrupt(self, detail: str) -> KafkaError:
        return KafkaError(
            Errors.CORRUPT_MESSAGE,
            f"Encountered corrupt message when fetching offset {self.next_offset} "
            f"for topic-partition {self.tp}: {detail}",
        )

    def _take(self) -> tuple[int, BatchHeader] | None:
        found = self._peek()
        if found is not None:
            self._pos += found[1].size
        return found

    def next_records(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records from the position on; the position moves past them."""
        out: list[ConsumerRecord] = []
        topic, partition = self.tp.topic, self.tp.partition
        while len(out) < max_records:
            if self._batch is None:
                found = self._take()
                if found is None:
                    break
                pos, header = found
                try:
                    self._batch = (header, _columns(self._data, pos, header), 0)
                except CorruptRecordError as exc:
                    raise self._corrupt(str(exc)) from None
            header, columns, index = self._batch
            base, epoch = header.base_offset, header.partition_leader_epoch
            kind = _timestamp_type(header)
            log_append = kind is TimestampType.LOG_APPEND_TIME
            stamp = header.max_timestamp if log_append else header.base_timestamp
            deltas, stamps = columns.offset_deltas, columns.timestamp_deltas
            keys, values, headers = columns.keys, columns.values, columns.headers
            count, wanted = len(deltas), self.next_offset
            while index < count and len(out) < max_records:
                offset = base + deltas[index]
                if offset >= wanted:
                    out.append(new_consumer_record(
                        topic, partition, offset, stamp if log_append else stamp + stamps[index],
                        kind, keys[index], values[index], headers[index], epoch,
                    ))
                    self.next_offset = wanted = offset + 1
                    self.last_epoch = epoch
                index += 1
            if index >= count:
                self._batch = None
                self.next_offset = max(self.next_offset, header.next_offset)
            else:
                self._batch = (header, columns, index)
        return out

    def next_batches(self, max_records: int) -> list[FetchedBatch]:
        """Whole batches (the first may be partly read) until ``max_records`` is reached."""
        out: list[FetchedBatch] = []
        handed = 0
        while handed < max_records:
            if self._batch is not None:
                header = self._batch[0]
                # the rest of a batch the record path began
                start = self._pos - header.size
                self._batch = None
            else:
                found = self._take()
                if found is None:
                    break
                start, header = found
            batch_bytes = self._data[start : start + header.size]
            out.append(FetchedBatch(self.tp, header, batch_bytes, self.next_offset))
            handed += max(1, header.next_offset - self.next_offset)
            self.next_offset = header.next_offset
            self.last_epoch = header.partition_leader_epoch
        return out
