"""A produce to a partition leader: check the batch, stamp it, append it.

Checks in Kafka's order (``ProduceRequest.validateRecords``, ``LogValidator``,
``Partition.appendRecordsToLeader``), the first failure answers and nothing is
appended:

* the framing (``ProduceRequest.validateRecords`` over Kafka's batch iterator,
  ``ByteBufferLogInputStream``): a batch whose declared length is below 14
  bytes, or whose magic byte is outside 0-2, is a CORRUPT_MESSAGE; bytes that
  hold no whole batch (none at all, or a batch cut short) and a first batch
  of magic 0 or 1 are an INVALID_RECORD, and so is a second whole batch;
  bytes after the batch that hold no whole one are dropped (Kafka's
  ``UnifiedLog.trimInvalidBytes``);
* the batch (``UnifiedLog.analyzeAndValidateRecords``): a base offset other
  than 0 is an INVALID_RECORD, a batch larger than the topic's
  ``max.message.bytes`` MESSAGE_TOO_LARGE, a CRC-32C that does not match (or
  a header too short) CORRUPT_MESSAGE; an unknown codec CORRUPT_MESSAGE;
* record count equal to lastOffsetDelta + 1 and above 0, not a control
  batch, not transactional (pykraft has no transactions), a base sequence
  if it has a producer id: else INVALID_RECORD;
* acks=all with a committed ISR smaller than the effective min ISR:
  NOT_ENOUGH_REPLICAS (Kafka checks the committed ISR, not the maximal one);
* an idempotent producer's batch (producer id >= 0) against the partition's
  producer state (``broker.replica.producer_state``): a retry is answered
  with the original's offsets, a stale epoch INVALID_PRODUCER_EPOCH, a
  sequence out of order OUT_OF_ORDER_SEQUENCE_NUMBER.

Then, under ``message.timestamp.type=LogAppendTime``, the batch is marked
with the append time (attributes and maxTimestamp are inside the CRC span:
the CRC is recomputed over bytes [21, end), records untouched), and the log
assigns offsets by rewriting the base offset and partition leader epoch in
place. Before the producer state, the records themselves are checked where
the topic's config asks for it (a keyless record in a compacted topic, a
timestamp outside ``message.timestamp.*.max.ms``: ``broker.replica.record_checks``).
"""

from __future__ import annotations

import struct
from typing import Final

import attrs

from broker.replica.partition import Partition
from broker.replica.producer_state import ProducerRefusal, batch_of
from broker.replica.record_checks import check_records
from quorum.log import LogError
from quorum.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader, batch_base_offset_at
from quorum.wire.batch_checks import MIN_RECORD_BYTES, set_log_append_time
from quorum.wire.compression import Compression
from quorum.wire.error_codes import Errors
from quorum.wire.errors import CorruptRecordError
from quorum.wire.messages.produce import ProduceResponseRecordError

__all__ = ["ACKS_ALL", "AppendResult", "append_to_leader", "check_produced_batch"]

ACKS_ALL = -1
_CODECS = frozenset(int(c) for c in Compression)
# Kafka's LegacyRecord.RECORD_OVERHEAD_V0: no batch of any magic declares a smaller length
_SMALLEST_LENGTH: Final = 14
# the bytes up to and with the magic byte (Kafka's HEADER_SIZE_UP_TO_MAGIC)
_MAGIC_AT: Final = 16
_UP_TO_MAGIC: Final = 17
_CURRENT_MAGIC: Final = 2
_LENGTH: Final = struct.Struct(">i")


@attrs.frozen(kw_only=True)
class AppendResult:
    error: Errors = Errors.NONE
    base_offset: int = -1
    last_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    high_watermark_moved: bool = False
    # Produce v8+: the faulty records of a refused batch (``broker.replica.record_checks``)
    record_errors: tuple[ProduceResponseRecordError, ...] = ()


def _refused(error: Errors, message: str) -> AppendResult:
    return AppendResult(error=error, error_message=message)


def _whole_batch_at(
    records: bytes | bytearray | memoryview, position: int
) -> int | AppendResult | None:
    """The size of the whole batch at ``position``; None if the bytes left hold none (too
    few, or a batch cut short); CORRUPT_MESSAGE for a length or magic no batch has.

    Kafka's ``ByteBufferLogInputStream.nextBatchSize`` and ``nextBatch``, in their order.
    """
    remaining = len(records) - position
    if remaining < LOG_OVERHEAD:
        return None
    (length,) = _LENGTH.unpack_from(records, position + 8)
    if length < _SMALLEST_LENGTH:
        return _refused(
            Errors.CORRUPT_MESSAGE,
            f"record size {length} is less than the minimum record overhead ({_SMALLEST_LENGTH})",
        )
    if remaining < _UP_TO_MAGIC:
        return None
    magic = int.from_bytes(records[position + _MAGIC_AT : position + _UP_TO_MAGIC], signed=True)
    if not 0 <= magic <= _CURRENT_MAGIC:
        return _refused(Errors.CORRUPT_MESSAGE, f"invalid magic found in record: {magic}")
    size = int(length) + LOG_OVERHEAD
    return size if remaining >= size else None


def _one_batch(records: bytes | bytearray | memoryview) -> int | AppendResult:
    """The size of the one whole v2 batch ``records`` begins with, or the refusal
    (Kafka's ``ProduceRequest.validateRecords``, v3+)."""
    first = _whole_batch_at(records, 0)
    if isinstance(first, AppendResult):
        return first
    if first is None:
        return _refused(
            Errors.INVALID_RECORD, "a produce must carry at least one record batch per partition"
        )
    if records[_MAGIC_AT] != _CURRENT_MAGIC:
        return _refused(
            Errors.INVALID_RECORD, "a produce may carry record batches with magic version 2 only"
        )
    second = _whole_batch_at(records, first)
    if isinstance(second, AppendResult):
        return second
    if second is not None:
        return _refused(
            Errors.INVALID_RECORD, "a produce may carry exactly one record batch per partition"
        )
    return first


def check_produced_batch(
    records: bytes | bytearray | memoryview | None, max_message_bytes: int
) -> AppendResult | BatchHeader:
    """The header of the one valid batch ``records`` begins with, or the refusal (bytes
    after it that hold no whole batch are not part of it: the caller appends
    ``header.size`` bytes)."""
    if records is None:
        return _refused(Errors.INVALID_RECORD, "a produce must carry one record batch")
    size = _one_batch(records)
    if isinstance(size, AppendResult):
        return size
    base_offset = batch_base_offset_at(records, 0)
    if base_offset != 0:
        return _refused(
            Errors.INVALID_RECORD,
            f"the base offset of a produced batch must be 0, not {base_offset}",
        )
    if size > max_message_bytes:
        return _refused(
            Errors.MESSAGE_TOO_LARGE,
            f"the batch is {size} bytes, over max.message.bytes {max_message_bytes}",
        )
    try:
        # a declared length below the header's is refused here, whatever bytes follow
        header = BatchHeader.parse(records, 0)
    except CorruptRecordError as exc:
        return _refused(Errors.CORRUPT_MESSAGE, str(exc))
    if not header.crc_matches(records, 0):
        return _refused(Errors.CORRUPT_MESSAGE, "the record batch fails its CRC-32C check")
    if header.compression not in _CODECS:
        return _refused(Errors.CORRUPT_MESSAGE, f"unknown compression codec {header.compression}")
    count = header.record_count
    if count <= 0 or count != header.last_offset_delta + 1:
        return _refused(
            Errors.INVALID_RECORD,
            f"record count {count} does not match lastOffsetDelta {header.last_offset_delta}",
        )
    if header.compression == Compression.NONE and header.size - BATCH_HEADER_SIZE < (
        count * MIN_RECORD_BYTES
    ):
        return _refused(Errors.CORRUPT_MESSAGE, f"{count} records cannot fit in the batch")
    if header.is_control:
        return _refused(Errors.INVALID_RECORD, "clients may not write control batches")
    if header.is_transactional:
        return _refused(
            Errors.INVALID_RECORD,
            "transactional producers are not supported: pykraft has no transactions",
        )
    if header.producer_id >= 0 and header.base_sequence < 0:
        # Kafka's LogValidator: an idempotent batch carries a sequence
        return _refused(
            Errors.INVALID_RECORD,
            f"invalid sequence number {header.base_sequence} in a batch of producer "
            f"{header.producer_id}",
        )
    return header


def append_to_leader(
    partition: Partition, records: bytes | bytearray | memoryview | None, acks: int, now_ms: int
) -> AppendResult:
    """Append one produced batch as leader (the caller checked ``acks``)."""
    if not partition.is_leader:
        return _refused(Errors.NOT_LEADER_OR_FOLLOWER, "this broker does not lead the partition")
    checked = check_produced_batch(records, partition.config.max_message_bytes)
    if isinstance(checked, AppendResult):
        return checked
    assert records is not None
    if checked.size < len(records):
        records = memoryview(records)[: checked.size]  # Kafka's trimInvalidBytes
    if acks == ACKS_ALL and len(partition.isr_state.isr) < partition.effective_min_isr:
        return _refused(
            Errors.NOT_ENOUGH_REPLICAS,
            f"the ISR {sorted(partition.isr_state.isr)} is smaller than min.insync.replicas "
            f"{partition.effective_min_isr}",
        )
    refused = check_records(records, partition.config, partition.name, now_ms, header=checked)
    if refused is not None:
        return AppendResult(
            error=refused.error, error_message=refused.message, record_errors=refused.record_errors
        )
    if checked.producer_id >= 0:
        duplicate_or_refusal = _check_producer(partition, checked, now_ms)
        if duplicate_or_refusal is not None:
            return duplicate_or_refusal
    buffer = bytearray(records)
    append_time = -1
    if partition.config.log_append_time:
        append_time = now_ms
        set_log_append_time(buffer, 0, now_ms)
    before = partition.log_position()
    try:
        # check_produced_batch checked the CRC a moment ago (set_log_append_time keeps it
        # valid): the log need not compute it over the whole batch again
        info = partition.log.append(buffer, epoch=partition.leader_epoch, crc_checked=True)
    except LogError as exc:
        return _refused(Errors.CORRUPT_MESSAGE, str(exc))
    partition.track_appended(
        before,
        () if checked.producer_id < 0 else (batch_of(
            checked,
            first_offset=info.first_offset,
            timestamp=append_time if append_time >= 0 else checked.max_timestamp,
        ),),
        now_ms,
    )
    return AppendResult(
        base_offset=info.first_offset,
        last_offset=info.last_offset,
        log_append_time_ms=append_time,
        log_start_offset=partition.log_start_offset,
        high_watermark_moved=partition.maybe_increment_high_watermark(now_ms),
    )


def _check_producer(partition: Partition, header: BatchHeader, now_ms: int) -> AppendResult | None:
    """An idempotent producer's batch against the partition's producer state
    (``broker.replica.producer_state``): a retry of one of its last five batches is answered
    with the original's offsets (and nothing appended; acks=all still waits for the high
    watermark to pass it, as Kafka's answer does), a stale epoch or a sequence out of order
    is refused; None to append it."""
    verdict = partition.producer_state(now_ms).check_leader_append(header)
    if verdict is None:
        return None
    if isinstance(verdict, ProducerRefusal):
        return _refused(verdict.error, verdict.message)
    return AppendResult(
        base_offset=verdict.first_offset,
        last_offset=verdict.last_offset,
        # Kafka answers a duplicate with the batch's timestamp as its append time
        log_append_time_ms=verdict.timestamp,
        log_start_offset=partition.log_start_offset,
    )
