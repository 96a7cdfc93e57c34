"""The record-level checks of a produced batch: Kafka's ``LogValidator.validateRecord``.

Two rules read each record, so the batch is decoded (and decompressed) only
when the topic's config makes one of them able to refuse (``TopicConfig.
checks_records``; Kafka reads every record of every batch):

* a compacted topic (``cleanup.policy`` has ``compact``) refuses a record
  without a key: INVALID_RECORD;
* with ``message.timestamp.type=CreateTime``, a record whose timestamp lies
  more than ``message.timestamp.before.max.ms`` before the broker's clock or
  more than ``message.timestamp.after.max.ms`` after it: INVALID_TIMESTAMP.

Kafka 4.4's default ``message.timestamp.after.max.ms`` is one hour, so the
timestamp rule applies to nearly every topic. When it is the only rule that
can refuse (no compaction, no ``before`` bound), the batch header's
``maxTimestamp`` decides first: at or below the bound, no record can be above
it and nothing is decoded (the header is CRC-checked; Kafka's clients write
the largest record timestamp there, and Kafka itself rewrites it on append);
only a batch whose header is above the bound is read record by record, to
name the faulty records.

A record's key rule comes first, then its timestamp (one error per record).
Any error refuses the whole batch and nothing of it is appended; the answer
lists every faulty record by its index in the batch (Produce v8+
``record_errors``) with Kafka's messages, and an ``error_message``: for
INVALID_TIMESTAMP Kafka's fixed sentence, otherwise the count and the first
three errors, as Kafka's ``processRecordErrors`` words them.
"""

from __future__ import annotations

import attrs

from broker.replica.config import LONG_MAX, TopicConfig
from quorum.wire.batch import BatchHeader
from quorum.wire.error_codes import Errors
from quorum.wire.errors import CorruptRecordError
from quorum.wire.messages.produce import ProduceResponseRecordError
from quorum.wire.records import decode_batch

__all__ = ["RecordsRefused", "check_records"]

_NO_TIMESTAMP = -1


@attrs.frozen(kw_only=True)
class RecordsRefused:
    error: Errors
    message: str
    record_errors: tuple[ProduceResponseRecordError, ...] = ()


def _record_error(index: int, message: str) -> ProduceResponseRecordError:
    return ProduceResponseRecordError(batch_index=index, batch_index_error_message=message)


def _summary(errors: list[tuple[Errors, ProduceResponseRecordError]]) -> RecordsRefused:
    listed = [e for _, e in errors]
    if any(code == Errors.INVALID_TIMESTAMP for code, _ in errors):
        return RecordsRefused(
            error=Errors.INVALID_TIMESTAMP,
            message="One or more records have been rejected due to invalid timestamp",
            record_errors=tuple(listed),
        )
    first = ", ".join(
        f"RecordError(batchIndex={e.batch_index}, message='{e.batch_index_error_message}')"
        for e in listed[:3]
    )
    return RecordsRefused(
        error=Errors.INVALID_RECORD,
        message=(
            f"One or more records have been rejected due to {len(listed)} record errors in "
            f"total, and only showing the first three errors at most: [{first}]"
        ),
        record_errors=tuple(listed),
    )


def _below_the_bound_by_header(
    records: bytes | bytearray | memoryview, config: TopicConfig, now_ms: int,
    header: BatchHeader | None,
) -> bool:
    """Whether the header alone shows every record within the only bound that applies."""
    only_after = (not config.compacted and not config.log_append_time
                  and config.timestamp_before_max_ms == LONG_MAX)
    if not only_after:
        return False
    if header is None:
        header = BatchHeader.parse(records)
    return header.max_timestamp <= now_ms + config.timestamp_after_max_ms


def check_records(
    records: bytes | bytearray | memoryview,
    config: TopicConfig,
    partition: tuple[str, int],
    now_ms: int,
    *,
    header: BatchHeader | None = None,
) -> RecordsRefused | None:
    """Why the one batch in ``records`` (its header already checked, and passed as
    ``header`` when the caller parsed it) is refused, or None."""
    if not config.checks_records:
        return None
    if _below_the_bound_by_header(records, config, now_ms, header):
        return None
    try:
        batch = decode_batch(records)
    except CorruptRecordError as exc:
        return RecordsRefused(error=Errors.CORRUPT_MESSAGE, message=str(exc))
    name = f"{partition[0]}-{partition[1]}"
    check_time = not config.log_append_time
    low = now_ms - config.timestamp_before_max_ms
    high = now_ms + config.timestamp_after_max_ms
    errors: list[tuple[Errors, ProduceResponseRecordError]] = []
    for index, record in enumerate(batch.records):
        if config.compacted and record.key is None:
            errors.append((Errors.INVALID_RECORD, _record_error(
                index,
                f"Compacted topic cannot accept message without key in topic partition {name}",
            )))
            continue
        timestamp = batch.timestamp_of(record)
        if check_time and timestamp != _NO_TIMESTAMP and not low <= timestamp <= high:
            errors.append((Errors.INVALID_TIMESTAMP, _record_error(
                index,
                f"Timestamp {timestamp} of message with offset {record.offset_delta} is out of "
                f"range. The timestamp should be within [{low}, {high}]",
            )))
    return _summary(errors) if errors else None
