"""The values a user of the client library hands in and gets back.

Names follow Kafka's clients: ``TopicPartition``, ``RecordMetadata`` (what a
delivered record got), ``ConsumerRecord`` (one record read back),
``OffsetAndTimestamp`` (an answer of ``offsets_for_times``). Record headers
are ``(key, value)`` pairs, as kafka-python and confluent-kafka take them.
"""

from __future__ import annotations

from typing import Final

import attrs

from quorum.wire.records import TimestampType

__all__ = [
    "NO_OFFSET",
    "NO_TIMESTAMP",
    "ConsumerRecord",
    "HeaderPairs",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "TimestampType",
    "TopicPartition",
    "new_consumer_record",
]

# what a record acknowledged with acks=0 gets: Kafka's clients report offset -1
NO_OFFSET: Final = -1
NO_TIMESTAMP: Final = -1

HeaderPairs = tuple[tuple[str, bytes | None], ...]


@attrs.frozen(order=True, cache_hash=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@attrs.frozen(kw_only=True)
class RecordMetadata:
    """Where a produced record landed; offset -1 when acks=0 (nobody told us)."""

    topic: str
    partition: int
    offset: int
    # CreateTime: the record's own; LogAppendTime: the broker's append time
    timestamp: int
    serialized_key_size: int = -1
    serialized_value_size: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@attrs.frozen(kw_only=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: HeaderPairs
    # the partition leader epoch of the batch (-1 when the broker stamps none)
    leader_epoch: int


@attrs.frozen
class OffsetAndMetadata:
    """A committed offset: the next record to read, with the committer's note and epoch."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


@attrs.frozen
class OffsetAndTimestamp:
    offset: int
    timestamp: int
    leader_epoch: int = -1


# ConsumerRecords are built per record on the consumer's hot path: through
# their slot descriptors, the same object as ConsumerRecord(...) (no
# validators or converters to skip) at about half the cost of the keyword call.
_FIELDS: Final = (
    "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers",
    "leader_epoch",
)
assert tuple(f.name for f in attrs.fields(ConsumerRecord)) == _FIELDS
(
    _SET_TOPIC, _SET_PARTITION, _SET_OFFSET, _SET_TIMESTAMP, _SET_TIMESTAMP_TYPE, _SET_KEY,
    _SET_VALUE, _SET_HEADERS, _SET_LEADER_EPOCH,
) = (getattr(ConsumerRecord, name).__set__ for name in _FIELDS)


def new_consumer_record(
    topic: str,
    partition: int,
    offset: int,
    timestamp: int,
    timestamp_type: TimestampType,
    key: bytes | None,
    value: bytes | None,
    headers: HeaderPairs,
    leader_epoch: int,
) -> ConsumerRecord:
    """``ConsumerRecord(...)`` for the hot path, positional and without ``__init__``."""
    record = object.__new__(ConsumerRecord)
    _SET_TOPIC(record, topic)
    _SET_PARTITION(record, partition)
    _SET_OFFSET(record, offset)
    _SET_TIMESTAMP(record, timestamp)
    _SET_TIMESTAMP_TYPE(record, timestamp_type)
    _SET_KEY(record, key)
    _SET_VALUE(record, value)
    _SET_HEADERS(record, headers)
    _SET_LEADER_EPOCH(record, leader_epoch)
    return record
