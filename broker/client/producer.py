"""``Producer``: the trio shell of the producer.

Usage (aiokafka's shape, Kafka's settings)::

    async with Producer({"bootstrap.servers": "localhost:9092", "acks": "all"}) as producer:
        future = await producer.send("orders", b"value", key=b"key")
        metadata = await future          # RecordMetadata, or raises KafkaError
        await producer.send_and_wait("orders", b"another")

``send`` waits only for the topic's metadata and for room in
``buffer.memory`` (both up to ``max.block.ms``); delivery happens in the
background. One sender task owns the accumulator's sending side: it
expires old batches, asks for metadata when the accumulator finds a
partition without a leader, drains ready batches into one ProduceRequest
per broker (at most ``max.in.flight.requests.per.connection`` in flight
per broker) and starts a task per request. Each such task reports its
answers back through ``_finish``, which applies ``produce_core.decide``.

Idempotence (``enable.idempotence``, on by default as in Kafka 3.0+): before
the first batch goes out a task asks any broker for a producer id
(InitProducerId, retried with backoff while batches wait; they expire by
``delivery.timeout.ms`` as usual), and the ``IdempotenceManager`` gives each
batch its producer id, epoch and per-partition base sequence when first
drained, keeps them through retries, and bumps the epoch itself where
Kafka's client does (``idempotence.py`` has the rules).

Ordering: records of a partition land once each and in ``send`` order when
the producer is idempotent: a retried batch keeps its sequence, the broker
answers a retry of what it already appended as a duplicate and refuses a
batch whose predecessor is missing (OUT_OF_ORDER_SEQUENCE_NUMBER, which
sends it again after the earlier one), and after a retry the partition's
batches are re-sent one at a time in sequence order. Without idempotence:
with ``max.in.flight.requests.per.connection`` 1 a partition has at most
one batch in flight and a retried batch goes back to the front of its
queue, so records land in ``send`` order; with more in flight a batch that
is retried can land after a later batch of the same partition, and a retry
after a lost answer can write a batch twice.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import math
import random
import time
from collections.abc import Iterable, Mapping
from typing import Final

import trio

from broker.client.accumulator import Outcome, ProducerBatch, RecordAccumulator, record_size
from broker.client.background import open_background
from broker.client.backoff import ExponentialBackoff
from broker.client.cluster import MetadataTracker
from broker.client.errors import ClientClosedError, KafkaError, KafkaTimeoutError, error_from_code
from broker.client.futures import RecordFuture
from broker.client.idempotence import IdempotenceManager
from broker.client.init_producer_id import init_producer_id
from broker.client.network import KafkaClient, now_ms
from broker.client.partitioner import StickyPartitioner
from broker.client.produce_core import (
    BatchResult,
    Decision,
    build_produce_request,
    choose_partition,
    decide,
    partition_results,
)
from broker.client.settings import ProducerSettings, idempotence_conflicts, settings_from
from broker.client.types import HeaderPairs, RecordMetadata, TopicPartition
from quorum.wire.batch import BATCH_HEADER_SIZE
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ProduceRequest

__all__ = ["Producer"]

logger = logging.getLogger(__name__)

_PRODUCE_KEY: Final = 0
# v3 is the first with record batch v2; v10+ adds leader hints we do not read
_PRODUCE_MIN_VERSION: Final = 3
_PRODUCE_MAX_VERSION: Final = 9
_ids = itertools.count(1)


def _as_bytes(data: object, what: str) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"the record's {what} must be bytes or None, not {type(data).__name__}: "
                    "serialize it first")


def _headers(headers: Iterable[tuple[str, bytes | None]]) -> HeaderPairs:
    return tuple((str(k), _as_bytes(v, "header value")) for k, v in headers)


class Producer:
    def __init__(
        self, config: ProducerSettings | Mapping[str, str], *, rng: random.Random | None = None
    ) -> None:
        settings = self.settings = settings_from(ProducerSettings, config)
        self.client_id = settings.client_id or f"producer-{next(_ids)}"
        self._rng = rng or random.Random()
        tracker = MetadataTracker(
            metadata_max_age_ms=settings.metadata_max_age_ms,
            retry_backoff_ms=settings.retry_backoff_ms,
        )
        self._client = KafkaClient(settings, tracker, client_id=self.client_id, rng=self._rng)
        # settings built directly (not by producer_settings) get the quiet rule too
        idempotent = settings.enable_idempotence and not idempotence_conflicts(settings)
        self._idempotence = IdempotenceManager() if idempotent else None
        self._initializing = False
        self._accumulator = RecordAccumulator(
            batch_size=settings.batch_size,
            linger_ms=settings.linger_ms,
            max_request_size=settings.max_request_size,
            delivery_timeout_ms=settings.delivery_timeout_ms,
            compression=settings.compression_type,
            guarantee_order=settings.max_in_flight_requests_per_connection == 1,
            gate=self._idempotence,
        )
        self._partitioner = StickyPartitioner(self._rng)
        self._retry_backoff = ExponentialBackoff(
            settings.retry_backoff_ms, settings.retry_backoff_max_ms
        )
        self._in_flight: dict[int, int] = {}
        # per broker: tickets handed out at drain time, and how many requests are sent
        self._tickets: dict[int, int] = {}
        self._sent: dict[int, int] = {}
        self._turn_passed = trio.Event()
        self._wakeup = trio.Event()
        self._space = trio.Event()
        self._refreshing = False
        self._nursery: trio.Nursery | None = None
        self._stack = contextlib.AsyncExitStack()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Producer:
        self._nursery = await open_background(self._stack)
        self._nursery.start_soon(self._sender)
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.aclose(timeout_ms=None if exc[0] is None else 0)
        finally:
            await self._stack.aclose()
            # after the nursery: no task can open a connection any more
            await self._client.aclose()

    async def aclose(self, timeout_ms: float | None = None) -> None:
        """Deliver what was sent (within ``timeout_ms``; None: no limit), then stop.

        Records still undelivered then fail with "Producer is closed forcefully".
        """
        if self._closed:
            return
        self._closed = True
        self._accumulator.closing = True
        self._wake()
        with trio.move_on_after(math.inf if timeout_ms is None else timeout_ms / 1000):
            await self._wait_for(self._accumulator.incomplete())
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        forced = ClientClosedError("Producer is closed forcefully.")
        for batch in self._accumulator.incomplete():
            self._resolve(self._accumulator.fail(batch, forced))

    # -- sending -------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        headers: Iterable[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """Queue one record; the returned future resolves once it is delivered or failed."""
        if self._closed or self._nursery is None:
            raise ClientClosedError(
                "Cannot perform operation after producer has been closed"
                if self._closed else "use the producer inside `async with Producer(...)`"
            )
        if self._idempotence is not None and self._idempotence.fatal_error is not None:
            raise self._fatal_error()
        value, key = _as_bytes(value, "value"), _as_bytes(key, "key")
        pairs = _headers(headers)
        size = BATCH_HEADER_SIZE + record_size(0, 0, key, value, pairs)
        self._check_size(size)
        deadline = now_ms() + self.settings.max_block_ms
        view = self._client.view
        if topic not in view.topics:
            view = await self._client.wait_for_topic(topic, self.settings.max_block_ms)
        else:
            self._client.tracker.add_topics([topic])
        chosen = choose_partition(
            view, topic, key, partition, self._partitioner,
            ignore_keys=self.settings.partitioner_ignore_keys,
        )
        await self._wait_for_space(size, deadline)
        future = RecordFuture()
        tp = TopicPartition(topic, chosen)
        stamp = time.time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms
        batch = self._accumulator.append(tp, key, value, pairs, stamp, future, now_ms())
        if batch.closed:
            self._batch_left(tp)
        if batch.closed or batch.record_count == 1:
            self._wake()  # a full batch to send, or a linger timer to start
        return future

    async def send_and_wait(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        headers: Iterable[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordMetadata:
        future = await self.send(topic, value, key, headers, partition, timestamp_ms)
        return await future

    async def flush(self) -> None:
        """Send everything queued now, without waiting for ``linger.ms``; wait for the answers."""
        self._accumulator.begin_flush()
        self._wake()
        try:
            await self._wait_for(self._accumulator.incomplete())
        finally:
            self._accumulator.end_flush()

    async def partitions_for(self, topic: str) -> list[int]:
        view = await self._client.wait_for_topic(topic, self.settings.max_block_ms)
        return list(range(view.partition_count(topic) or 0))

    # -- internals -----------------------------------------------------------------------

    def _check_size(self, size: int) -> None:
        for limit, name in (
            (self.settings.max_request_size, "max.request.size"),
            (self.settings.buffer_memory, "buffer.memory"),
        ):
            if size > limit:
                raise KafkaError(
                    Errors.MESSAGE_TOO_LARGE,
                    f"The message is {size} bytes when serialized which is larger than "
                    f"{limit}, which is the value of the {name} configuration.",
                )

    async def _wait_for_space(self, size: int, deadline: float) -> None:
        accumulator = self._accumulator
        while accumulator.buffered_bytes + size > self.settings.buffer_memory:
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    "Failed to allocate memory within the configured max blocking time "
                    f"{self.settings.max_block_ms} ms."
                )
            with trio.move_on_after(remaining / 1000):
                await self._space.wait()

    async def _wait_for(self, batches: Iterable[ProducerBatch]) -> None:
        # every future of these batches, even if a batch is split in two meanwhile
        futures: list[RecordFuture] = []
        for batch in batches:
            futures += batch.tickets
        for future in futures:
            if not future.done():
                with contextlib.suppress(KafkaError):
                    await future

    def _wake(self) -> None:
        self._wakeup.set()

    def _batch_left(self, tp: TopicPartition) -> None:
        view = self._client.view
        self._partitioner.batch_sent(
            tp.topic, tp.partition, view.available_partitions(tp.topic),
            view.partition_count(tp.topic) or 0,
        )

    def _resolve(self, outcomes: list[Outcome]) -> None:
        for future, outcome in outcomes:
            future.resolve(outcome)
        if outcomes:
            self._space.set()
            self._space = trio.Event()

    async def _sender(self) -> None:
        """The one task that takes batches out of the accumulator."""
        accumulator, tracker = self._accumulator, self._client.tracker
        limit = self.settings.max_in_flight_requests_per_connection
        while True:
            now = now_ms()
            for batch in accumulator.expire(now):
                if self._idempotence is not None:
                    self._idempotence.expired(batch)
                self._resolve(accumulator.fail(batch, self._expired(batch, now)))
            if self._idempotence is not None:
                self._maintain_idempotence(self._idempotence)
            view = self._client.view
            check = accumulator.ready(view, now)
            for topic in check.unknown_leader_topics:
                tracker.request_update(f"no leader known for a partition of {topic}")
            if tracker.wanted_topics and tracker.needs_update(now) and not self._refreshing:
                self._refreshing = True
                self._nursery_or_fail().start_soon(self._refresh)
            nodes = [n for n in check.nodes if self._in_flight.get(n, 0) < limit]
            sent = False
            for node, batches in accumulator.drain(view, nodes, now).items():
                if batches:
                    sent = True
                    self._in_flight[node] = self._in_flight.get(node, 0) + 1
                    ticket = self._tickets.get(node, 0)
                    self._tickets[node] = ticket + 1
                    # built now: an epoch bump may rewrite these batches while they are out
                    request = build_produce_request(
                        batches, acks=self.settings.acks,
                        timeout_ms=self.settings.request_timeout_ms,
                    )
                    self._nursery_or_fail().start_soon(
                        self._produce, node, ticket, batches, request
                    )
                    for batch in batches:
                        self._batch_left(batch.tp)
            wait = min(check.next_check_ms, accumulator.next_expiry_ms(now))
            if sent:
                # a drain takes one batch per partition: look again at once for the next
                # ones (up to the in-flight limit), as Kafka's Sender polls with timeout 0
                wait = 0
            if tracker.wanted_topics:
                wait = min(wait, tracker.time_to_update_ms(now))
            with trio.move_on_after(wait / 1000):
                await self._wakeup.wait()
            self._wakeup = trio.Event()

    def _maintain_idempotence(self, idempotence: IdempotenceManager) -> None:
        """Kafka's Sender.runOnce preamble: settle sequences, bump the epoch, get an id."""
        if idempotence.fatal_error is not None:
            self._resolve(self._accumulator.abort_queued(self._fatal_error()))
            return
        idempotence.resolve_sequences()
        idempotence.bump_epoch_if_needed()
        if (
            idempotence.needs_producer_id
            and not self._initializing
            and self._accumulator.has_queued()
        ):
            self._initializing = True
            self._nursery_or_fail().start_soon(self._init_producer_id, idempotence)

    def _fatal_error(self) -> KafkaError:
        assert self._idempotence is not None and self._idempotence.fatal_error is not None
        error = self._idempotence.fatal_error
        return KafkaError(
            error, f"the idempotent producer cannot go on after {error.name}; "
            "close it and start a new one"
        )

    async def _init_producer_id(self, idempotence: IdempotenceManager) -> None:
        try:
            await init_producer_id(
                self._client, idempotence,
                waiting=self._accumulator.has_queued,
                fail_waiting=lambda error: self._resolve(self._accumulator.abort_queued(error)),
                backoff=self._retry_backoff, rng=self._rng, client_id=self.client_id,
            )
        finally:
            self._initializing = False
            self._wake()

    def _nursery_or_fail(self) -> trio.Nursery:
        assert self._nursery is not None, "the sender runs inside the producer's nursery"
        return self._nursery

    async def _refresh(self) -> None:
        try:
            await self._client.maybe_refresh_metadata()
        except KafkaError as exc:
            logger.warning("producer %s: metadata refresh failed: %s", self.client_id, exc)
        finally:
            self._refreshing = False
            self._wake()

    async def _turn(self, node: int, ticket: int) -> None:
        """Until the requests drained before ticket ``ticket`` are on the wire to ``node``:
        requests reach a broker in the order they were drained (trio runs new tasks in no
        set order), so a partition's batches are appended in the order they were sent."""
        while self._sent.get(node, 0) != ticket:
            await self._turn_passed.wait()

    def _pass_turn(self, node: int, ticket: int) -> None:
        if self._sent.get(node, 0) == ticket:
            self._sent[node] = ticket + 1
            self._turn_passed.set()
            self._turn_passed = trio.Event()

    async def _produce(
        self, node: int, ticket: int, batches: list[ProducerBatch], request: ProduceRequest
    ) -> None:
        """One ProduceRequest to ``node`` and its answers."""
        settings = self.settings
        try:
            await self._turn(node, ticket)
            conn = await self._client.node_connection(node)
            version = conn.version_at_most(_PRODUCE_KEY, _PRODUCE_MAX_VERSION)
            if version < _PRODUCE_MIN_VERSION:
                raise KafkaError(Errors.UNSUPPORTED_VERSION,
                                 f"broker {node} does not take record batch v2 (Produce v3+)")
            if settings.acks == 0:
                await conn.send_no_response(request, version=version)
                self._pass_turn(node, ticket)
                results = {b.tp: BatchResult(error=Errors.NONE) for b in batches}
            else:
                response = await self._client.request(
                    conn, request, version=version,
                    on_sent=functools.partial(self._pass_turn, node, ticket),
                )
                results = partition_results(response, batches)
        except KafkaError as exc:
            error = exc.error or Errors.NETWORK_EXCEPTION
            results = {b.tp: BatchResult(error=error, message=exc.detail) for b in batches}
        finally:
            self._pass_turn(node, ticket)  # not sent (an error): the next may go
            self._in_flight[node] -= 1
        self._finish(node, batches, results)
        self._wake()

    def _finish(
        self, node: int, batches: list[ProducerBatch], results: dict[TopicPartition, BatchResult]
    ) -> None:
        accumulator, now, idempotence = self._accumulator, now_ms(), self._idempotence
        for batch in batches:
            if not accumulator.is_incomplete(batch):
                continue  # failed meanwhile: the producer was closed forcefully
            result = results[batch.tp]
            if result.error is not Errors.NONE:
                self._client.tracker.observe_error(result.error, f"broker {node} for {batch.tp}")
            expired = accumulator.delivery_expired(batch, now)
            decision = decide(
                result.error, batch, retries=self.settings.retries, delivery_expired=expired,
                idempotence=idempotence, log_start_offset=result.log_start_offset,
            )
            if decision is Decision.DELIVERED:
                if idempotence is not None:
                    idempotence.completed(batch, result.base_offset)
                self._resolve(
                    accumulator.complete(batch, result.base_offset, result.log_append_time_ms)
                )
            elif decision is Decision.RETRY:
                backoff = self._retry_backoff.delay_ms(batch.attempts, self._rng)
                logger.debug("retrying %s after %s in %.0f ms", batch.tp, result.error.name, backoff)
                accumulator.reenqueue(batch, now, backoff)
            elif decision is Decision.SPLIT:
                halves = accumulator.split(batch, now)
                if idempotence is not None:
                    idempotence.split(batch, halves)
            else:
                if idempotence is not None:
                    # with retries left the refusal is certain and the later sequences
                    # must move; out of retries or time it is not (adjustSequenceNumbers)
                    idempotence.failed(
                        batch, result.error,
                        adjust_sequences=batch.attempts < self.settings.retries,
                    )
                error = (
                    self._expired(batch, now) if expired and result.error.retriable
                    else error_from_code(result.error, result.message, context=str(batch.tp))
                )
                self._resolve(accumulator.fail(batch, error))

    def _expired(self, batch: ProducerBatch, now: float) -> KafkaTimeoutError:
        return KafkaTimeoutError(
            f"Expiring {batch.record_count} record(s) for {batch.tp}: "
            f"{now - batch.created_ms:.0f} ms has passed since batch creation"
        )
