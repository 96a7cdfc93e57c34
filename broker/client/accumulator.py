"""The producer's record accumulator (sans-I/O): records in, per-broker batches out.

What Kafka's ``RecordAccumulator`` decides, with ``now_ms`` given:

* **Batching.** Each partition has a queue of batches; records append to the
  last one while it stays within ``batch.size`` (its encoded size, counted
  exactly as record batch v2 lays it out). A record that does not fit
  closes the batch and opens the next; a record larger than ``batch.size``
  gets a batch of its own.
* **Readiness.** A partition's first batch may be sent once it is full,
  has waited ``linger.ms``, a flush is in progress, or the producer is
  closing; a retried batch waits its backoff instead. With
  ``guarantee_order`` (``max.in.flight.requests.per.connection`` 1) a
  partition with a batch in flight sends nothing else.
* **Draining.** Per ready broker, at most one batch per partition it
  leads, fairly rotated, until the next batch would push the request past
  ``max.request.size`` (one batch always goes, whatever its size).
* **Completion.** A batch completes (record offsets are the base offset
  plus the record's index), fails, is re-queued at the front of its
  partition (a retry keeps its place in the order; a batch with a sequence
  goes in sequence order among the queued batches that have one, as Kafka's
  ``insertInSequenceOrder``) or is split in two (MESSAGE_TOO_LARGE for a
  batch of several records; the halves take over the batch's sequence
  range). Batches that waited in the queue past ``delivery.timeout.ms``
  expire.
* **Idempotence.** With a ``SequenceGate`` (``idempotence.IdempotenceManager``)
  a partition's queue head waits while the gate ``holds`` it, and a drained
  batch gets its producer id, epoch and base sequence from ``drained``.

Each batch is encoded when drained, with ``build_batch`` (base offset 0;
producer id, epoch and base sequence -1 unless idempotent, never
transactional); a retry resends the same bytes unless the idempotent
producer rewrote the batch's sequence (an epoch bump), which encodes it
anew. Each record carries an opaque ``ticket`` from the front-end (its
future), handed back with its outcome.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any, Final, Protocol

import attrs

from broker.client.cluster import ClusterView
from broker.client.errors import KafkaError
from broker.client.types import HeaderPairs, RecordMetadata, TopicPartition
from quorum.wire.batch import BATCH_HEADER_SIZE
from quorum.wire.compression import Compression
from quorum.wire.records import Header, Record, build_batch

__all__ = [
    "NO_SEQUENCE",
    "Outcome",
    "ProducerBatch",
    "ProducerIdAndEpoch",
    "ReadyCheck",
    "RecordAccumulator",
    "SequenceGate",
    "increment_sequence",
    "record_size",
]

Outcome = tuple[Any, "RecordMetadata | KafkaError"]
_NEVER: Final = float("inf")
NO_SEQUENCE: Final = -1
_INT_MAX: Final = 2**31 - 1


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping past 2**31 - 1 to 0 (Kafka's incrementSequence)."""
    if sequence > _INT_MAX - increment:
        return increment - (_INT_MAX - sequence) - 1
    return sequence + increment


@attrs.frozen
class ProducerIdAndEpoch:
    """An idempotent producer's identity; -1 / -1 before InitProducerId answered."""

    producer_id: int = -1
    epoch: int = -1

    @property
    def is_valid(self) -> bool:
        return self.producer_id >= 0


def _varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def _bytes_size(data: bytes | None) -> int:
    return 1 if data is None else _varint_size(len(data)) + len(data)


def record_size(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: HeaderPairs,
) -> int:
    """Bytes one record takes inside an uncompressed v2 batch (its length varint included)."""
    body = (
        1 + _varint_size(timestamp_delta) + _varint_size(offset_delta)
        + _bytes_size(key) + _bytes_size(value) + _varint_size(len(headers))
    )
    for header_key, header_value in headers:
        body += _bytes_size(header_key.encode()) + _bytes_size(header_value)
    return _varint_size(body) + body


@attrs.define(eq=False)
class ProducerBatch:
    """Records bound for one partition, sent and acknowledged together."""

    tp: TopicPartition
    created_ms: float
    base_timestamp: int
    keys: list[bytes | None] = attrs.field(factory=list)
    values: list[bytes | None] = attrs.field(factory=list)
    headers: list[HeaderPairs] = attrs.field(factory=list)
    timestamps: list[int] = attrs.field(factory=list)
    tickets: list[Any] = attrs.field(factory=list)
    size_bytes: int = BATCH_HEADER_SIZE
    # no more appends: full, drained, or split from a larger batch
    closed: bool = False
    in_flight: bool = False
    attempts: int = 0
    retry_at_ms: float | None = None
    payload: bytes | None = None
    # idempotence: set when first drained, kept across retries
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    # the sequence was rewritten (an epoch bump) since the batch was last drained
    # (Kafka's ``reopened``)
    sequence_reset: bool = False

    @property
    def record_count(self) -> int:
        return len(self.values)

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence != NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        return self.base_sequence + self.record_count - 1

    def set_producer_state(self, id_and_epoch: ProducerIdAndEpoch, base_sequence: int) -> None:
        self.producer_id, self.producer_epoch = id_and_epoch.producer_id, id_and_epoch.epoch
        self.base_sequence = base_sequence
        self.payload = None  # the header fields changed (and the CRC covers them)

    def reset_producer_state(self, id_and_epoch: ProducerIdAndEpoch, base_sequence: int) -> None:
        """A new id, epoch or sequence for a batch that may have been sent already."""
        self.set_producer_state(id_and_epoch, base_sequence)
        self.sequence_reset = True

    def encode(self, compression: Compression) -> bytes:
        """The v2 batch bytes, built on first use and kept for retries."""
        if self.payload is None:
            base = self.base_timestamp
            records = [
                Record(
                    offset_delta=i,
                    timestamp_delta=self.timestamps[i] - base,
                    key=self.keys[i],
                    value=self.values[i],
                    headers=tuple(Header(k, v) for k, v in self.headers[i]),
                )
                for i in range(len(self.values))
            ]
            self.payload = build_batch(
                records, compression=compression, base_timestamp=base,
                producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence,
            )
        return self.payload


@attrs.frozen
class ReadyCheck:
    """Brokers with a batch to send now, when to look again, topics lacking leaders."""

    nodes: frozenset[int]
    next_check_ms: float
    unknown_leader_topics: frozenset[str]


class SequenceGate(Protocol):
    """The idempotent producer's say in draining (``idempotence.IdempotenceManager``)."""

    def holds(self, batch: ProducerBatch) -> bool:
        """Whether a partition's queue head ``batch`` must wait."""
        ...

    def drained(self, batch: ProducerBatch) -> None:
        """``batch`` is taken out to be sent (give it its sequence if it has none)."""
        ...


def _insert_in_sequence_order(queue: deque[ProducerBatch], batch: ProducerBatch) -> None:
    """Put ``batch`` at the front, behind queued batches with lower sequences."""
    ahead: list[ProducerBatch] = []
    if batch.has_sequence:
        while queue and queue[0].has_sequence and queue[0].base_sequence < batch.base_sequence:
            ahead.append(queue.popleft())
    queue.appendleft(batch)
    queue.extendleft(reversed(ahead))


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        max_request_size: int,
        delivery_timeout_ms: int,
        compression: Compression = Compression.NONE,
        guarantee_order: bool = False,
        gate: SequenceGate | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.max_request_size = max_request_size
        self.delivery_timeout_ms = delivery_timeout_ms
        self.compression = compression
        self.guarantee_order = guarantee_order
        self.gate = gate
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._muted: set[TopicPartition] = set()
        # every batch not yet completed or failed, queued or in flight
        self._incomplete: set[ProducerBatch] = set()
        self._flushes = 0
        self.closing = False
        self.buffered_bytes = 0
        self._drain_start = itertools.count()

    # -- appending -----------------------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: HeaderPairs,
        timestamp_ms: int,
        ticket: Any,
        now_ms: float,
    ) -> ProducerBatch:
        """Add one record; returns the batch it joined (``closed`` once it is full)."""
        queue = self._queues.setdefault(tp, deque())
        batch = queue[-1] if queue and not queue[-1].closed else None
        if batch is not None:
            size = record_size(
                batch.record_count, timestamp_ms - batch.base_timestamp, key, value, headers
            )
            if batch.size_bytes + size > self.batch_size:
                batch.closed = True
                batch = None
        if batch is None:
            batch = ProducerBatch(tp=tp, created_ms=now_ms, base_timestamp=timestamp_ms)
            queue.append(batch)
            self._incomplete.add(batch)
            size = record_size(0, 0, key, value, headers)
        batch.keys.append(key)
        batch.values.append(value)
        batch.headers.append(headers)
        batch.timestamps.append(timestamp_ms)
        batch.tickets.append(ticket)
        batch.size_bytes += size
        self.buffered_bytes += size
        if batch.size_bytes >= self.batch_size:
            batch.closed = True
        return batch

    # -- sending -------------------------------------------------------------------------

    def _sendable(self, batch: ProducerBatch, queue_length: int, now_ms: float) -> float:
        """0 if ``batch`` may go now, else how long until it may."""
        if batch.retry_at_ms is not None:
            return max(0.0, batch.retry_at_ms - now_ms)
        if queue_length > 1 or batch.closed or self._flushes or self.closing:
            return 0.0
        return max(0.0, batch.created_ms + self.linger_ms - now_ms)

    def ready(self, view: ClusterView, now_ms: float) -> ReadyCheck:
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check = _NEVER
        for tp, queue in self._queues.items():
            if not queue or tp in self._muted:
                continue
            leader = view.leader_of(tp)
            if leader is None:
                unknown.add(tp.topic)
                continue
            if leader.node_id in nodes or self._held(queue[0]):
                continue  # a held partition is looked at again when an answer comes
            wait = self._sendable(queue[0], len(queue), now_ms)
            if wait == 0.0:
                nodes.add(leader.node_id)
            else:
                next_check = min(next_check, wait)
        return ReadyCheck(frozenset(nodes), next_check, frozenset(unknown))

    def drain(
        self, view: ClusterView, nodes: Sequence[int], now_ms: float
    ) -> dict[int, list[ProducerBatch]]:
        """Take the batches to send to each of ``nodes`` (marked in flight)."""
        led: dict[int, list[TopicPartition]] = {node: [] for node in nodes}
        for tp, queue in self._queues.items():
            if queue and tp not in self._muted:
                leader = view.leader_of(tp)
                if leader is not None and leader.node_id in led:
                    led[leader.node_id].append(tp)
        return {node: self._drain_node(partitions, now_ms) for node, partitions in led.items()}

    def _drain_node(self, partitions: list[TopicPartition], now_ms: float) -> list[ProducerBatch]:
        if not partitions:
            return []
        start = next(self._drain_start) % len(partitions)
        taken: list[ProducerBatch] = []
        request_bytes = 0
        for tp in partitions[start:] + partitions[:start]:
            queue = self._queues[tp]
            batch = queue[0]
            if self._sendable(batch, len(queue), now_ms) > 0.0:
                continue
            if taken and request_bytes + batch.size_bytes > self.max_request_size:
                break
            if self._held(batch):
                # Kafka stops draining the whole broker here; other partitions need not wait
                continue
            queue.popleft()
            batch.closed = True
            batch.in_flight = True
            batch.retry_at_ms = None
            if self.gate is not None:
                self.gate.drained(batch)
            batch.encode(self.compression)
            batch.sequence_reset = False
            request_bytes += batch.size_bytes
            taken.append(batch)
            if self.guarantee_order:
                self._muted.add(tp)
        return taken

    def _held(self, batch: ProducerBatch) -> bool:
        return self.gate is not None and self.gate.holds(batch)

    # -- outcomes ------------------------------------------------------------------------

    def _finished(self, batch: ProducerBatch) -> None:
        self._incomplete.discard(batch)
        self._muted.discard(batch.tp)
        self.buffered_bytes -= batch.size_bytes - BATCH_HEADER_SIZE
        batch.in_flight = False

    def complete(
        self, batch: ProducerBatch, base_offset: int, log_append_time_ms: int = -1
    ) -> list[Outcome]:
        """The batch was appended at ``base_offset`` (-1: not known, acks=0)."""
        self._finished(batch)
        tp = batch.tp
        return [
            (
                ticket,
                RecordMetadata(
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=base_offset + i if base_offset >= 0 else -1,
                    timestamp=log_append_time_ms if log_append_time_ms >= 0 else batch.timestamps[i],
                    serialized_key_size=-1 if batch.keys[i] is None else len(batch.keys[i] or b""),
                    serialized_value_size=(
                        -1 if batch.values[i] is None else len(batch.values[i] or b"")
                    ),
                ),
            )
            for i, ticket in enumerate(batch.tickets)
        ]

    def fail(self, batch: ProducerBatch, error: KafkaError) -> list[Outcome]:
        """The batch will not be delivered: every record gets ``error``."""
        if batch in self._incomplete and not batch.in_flight:
            self._remove_queued(batch)
        self._finished(batch)
        return [(ticket, error) for ticket in batch.tickets]

    def reenqueue(self, batch: ProducerBatch, now_ms: float, backoff_ms: float) -> None:
        """Retry ``batch`` after ``backoff_ms``, ahead of newer batches of its partition."""
        batch.in_flight = False
        batch.attempts += 1
        batch.retry_at_ms = now_ms + backoff_ms
        self._muted.discard(batch.tp)
        _insert_in_sequence_order(self._queues.setdefault(batch.tp, deque()), batch)

    def split(self, batch: ProducerBatch, now_ms: float) -> tuple[ProducerBatch, ProducerBatch]:
        """Re-queue ``batch`` as two halves (the broker found it too large).

        The broker appended none of it, so the halves take over its sequence
        range (Kafka's ``ProducerBatch.split``).
        """
        assert batch.record_count > 1, "a single record cannot be split"
        half = batch.record_count // 2
        first, second = self._part(batch, slice(0, half)), self._part(batch, slice(half, None))
        halves = (first, second)
        if batch.has_sequence:
            same = ProducerIdAndEpoch(batch.producer_id, batch.producer_epoch)
            first.set_producer_state(same, batch.base_sequence)
            second.set_producer_state(same, increment_sequence(batch.base_sequence, half))
        # the halves' deltas differ from the whole's: keep the buffer count exact
        self.buffered_bytes += (
            first.size_bytes + second.size_bytes - batch.size_bytes - BATCH_HEADER_SIZE
        )
        self._incomplete.discard(batch)
        self._muted.discard(batch.tp)
        queue = self._queues.setdefault(batch.tp, deque())
        for part in reversed(halves):
            part.attempts = batch.attempts + 1
            _insert_in_sequence_order(queue, part)
            self._incomplete.add(part)
        return first, second

    def _part(self, batch: ProducerBatch, part: slice) -> ProducerBatch:
        timestamps = batch.timestamps[part]
        new = ProducerBatch(
            tp=batch.tp, created_ms=batch.created_ms, base_timestamp=timestamps[0],
            keys=batch.keys[part], values=batch.values[part], headers=batch.headers[part],
            timestamps=timestamps, tickets=batch.tickets[part], closed=True,
        )
        new.size_bytes += sum(
            record_size(i, t - new.base_timestamp, k, v, h)
            for i, (k, v, h, t) in enumerate(
                zip(new.keys, new.values, new.headers, timestamps, strict=True)
            )
        )
        return new

    def expire(self, now_ms: float) -> list[ProducerBatch]:
        """Queued batches past ``delivery.timeout.ms``, removed (the caller fails them)."""
        expired = [
            batch for queue in self._queues.values() for batch in queue
            if now_ms - batch.created_ms >= self.delivery_timeout_ms
        ]
        for batch in expired:
            self._remove_queued(batch)
        return expired

    def delivery_expired(self, batch: ProducerBatch, now_ms: float) -> bool:
        return now_ms - batch.created_ms >= self.delivery_timeout_ms

    def next_expiry_ms(self, now_ms: float) -> float:
        """How long until the oldest queued batch expires."""
        oldest = min(
            (queue[0].created_ms for queue in self._queues.values() if queue), default=None
        )
        if oldest is None:
            return _NEVER
        return max(0.0, oldest + self.delivery_timeout_ms - now_ms)

    def _remove_queued(self, batch: ProducerBatch) -> None:
        queue = self._queues.get(batch.tp)
        if queue is not None and batch in queue:
            queue.remove(batch)

    # -- flush and close -----------------------------------------------------------------

    def begin_flush(self) -> None:
        self._flushes += 1

    def end_flush(self) -> None:
        assert self._flushes > 0, "end_flush without begin_flush"
        self._flushes -= 1

    def incomplete(self) -> list[ProducerBatch]:
        return list(self._incomplete)

    def is_incomplete(self, batch: ProducerBatch) -> bool:
        return batch in self._incomplete

    def has_queued(self) -> bool:
        return any(self._queues.values())

    def queued_batches(self) -> Iterator[ProducerBatch]:
        for queue in self._queues.values():
            yield from queue

    def abort_queued(self, error: KafkaError) -> list[Outcome]:
        """Fail every batch not in flight (the producer closes without waiting)."""
        outcomes: list[Outcome] = []
        for batch in list(self.queued_batches()):
            outcomes += self.fail(batch, error)
        return outcomes
