"""Blocking front-ends: ``BlockingProducer``, ``BlockingConsumer`` (``BlockingAdmin`` is in
``blocking_admin``).

Each runs its trio client in a ``LoopThread`` of its own and calls into
it; each is a context manager whose ``close`` joins that thread. They are
for code without trio: scripts, the CLI, Spark executors.

``BlockingProducer.send`` returns a ``concurrent.futures.Future`` at once
and does not cross into the loop per record: records go into a queue that
one pump task of the loop drains into the trio producer, in order; the
pump is woken with ``TrioToken.run_sync_soon`` only when it may be idle.
At most ``_MAX_UNPUMPED`` records wait in that queue; beyond, ``send``
blocks (up to ``max.block.ms``) until the pump catches up, so a fast
caller cannot grow memory without bound (``buffer.memory`` bounds the
rest). A consumer is used by one thread at a time, as Kafka's is.

A ``BlockingRebalanceListener``'s methods run in the consumer's loop thread,
inside the ``poll`` (or ``close``) that rebalances: they must not call the
``BlockingConsumer`` (its calls wait for that same thread). With
``enable.auto.commit`` the consumer commits before it gives partitions up,
which is what such a listener usually does.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

import trio

from broker.client.consumer import Consumer
from broker.client.errors import KafkaError, KafkaTimeoutError
from broker.client.fetch_records import FetchedBatch
from broker.client.futures import RecordFuture
from broker.client.group_commits import CommitCallback
from broker.client.group_member import ConsumerRebalanceListener
from broker.client.loop_thread import LoopThread
from broker.client.producer import Producer
from broker.client.settings import (
    ConsumerSettings,
    ProducerSettings,
    settings_from,
)
from broker.client.types import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    TopicPartition,
)

__all__ = ["BlockingAdmin", "BlockingConsumer", "BlockingProducer", "BlockingRebalanceListener"]

from broker.client.blocking_admin import BlockingAdmin

_MAX_UNPUMPED: Final = 10_000
DeliveryFuture = concurrent.futures.Future[RecordMetadata]
_Send = tuple[str, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int | None,
              int | None]


def _settle(target: DeliveryFuture, future: RecordFuture) -> None:
    error = future.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(future.result())


class _Pump:
    """Moves queued records into the trio producer, in order (runs in the loop)."""

    def __init__(self) -> None:
        self.queue: collections.deque[tuple[_Send, DeliveryFuture]] = collections.deque()
        self.room = threading.Semaphore(_MAX_UNPUMPED)
        self.wake_scheduled = False
        self.wakeup: trio.Event | None = None
        self.idle: trio.Event | None = None

    def wake(self) -> None:
        """Runs in the loop (``run_sync_soon``)."""
        self.wake_scheduled = False
        if self.wakeup is not None:
            self.wakeup.set()

    async def run(self, producer: Producer, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        self.wakeup, self.idle = trio.Event(), trio.Event()
        task_status.started()
        while True:
            while self.queue:
                (topic, value, key, headers, partition, stamp), target = self.queue.popleft()
                self.room.release()
                if not target.set_running_or_notify_cancel():
                    continue
                try:
                    future = await producer.send(topic, value, key, headers, partition, stamp)
                except (KafkaError, TypeError) as exc:
                    target.set_exception(exc)
                    continue
                future.add_done_callback(functools.partial(_settle, target))
            self.idle.set()
            await self.wakeup.wait()
            self.wakeup, self.idle = trio.Event(), trio.Event()

    async def drained(self) -> None:
        """Wait until every record queued before this call is handed to the producer."""
        self.wake()
        while self.queue or (self.idle is not None and not self.idle.is_set()):
            assert self.idle is not None
            await self.idle.wait()


class BlockingProducer:
    def __init__(self, config: ProducerSettings | Mapping[str, str]) -> None:
        self.settings = settings_from(ProducerSettings, config)
        self._pump = _Pump()
        self._loop: LoopThread[Producer] = LoopThread("pykraft-producer", self._open)

    @contextlib.asynccontextmanager
    async def _open(self) -> Any:
        async with Producer(self.settings) as producer, trio.open_nursery() as nursery:
            await nursery.start(self._pump.run, producer)
            yield producer
            nursery.cancel_scope.cancel()

    def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        headers: Iterable[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> DeliveryFuture:
        """Queue one record; the future gives its RecordMetadata or raises its KafkaError."""
        pump = self._pump
        if not pump.room.acquire(timeout=self.settings.max_block_ms / 1000):
            raise KafkaTimeoutError(
                f"the producer did not take the record within {self.settings.max_block_ms} ms"
            )
        target: DeliveryFuture = concurrent.futures.Future()
        pump.queue.append(((topic, value, key, tuple(headers), partition, timestamp_ms), target))
        # append first, then look: a wake already scheduled runs after the append
        if not pump.wake_scheduled:
            pump.wake_scheduled = True
            self._loop.call_soon(pump.wake)
        return target

    def flush(self) -> None:
        """Wait until every record sent so far is delivered or failed."""
        pump = self._pump

        async def flush(producer: Producer) -> None:
            await pump.drained()
            await producer.flush()

        self._loop.call(flush)

    def partitions_for(self, topic: str) -> list[int]:
        return self._loop.call(lambda producer: producer.partitions_for(topic))

    def close(self, timeout_ms: float | None = None) -> None:
        """Deliver what was sent (within ``timeout_ms``), then stop the producer's thread."""
        pump = self._pump

        async def last(producer: Producer) -> None:
            await pump.drained()
            await producer.aclose(timeout_ms)

        self._loop.close(last)

    def __enter__(self) -> BlockingProducer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class BlockingRebalanceListener:
    """``ConsumerRebalanceListener`` for blocking code: plain methods (see the module)."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        return None

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        return None

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.on_partitions_revoked(partitions)


class _InLoop(ConsumerRebalanceListener):
    def __init__(self, listener: BlockingRebalanceListener) -> None:
        self._listener = listener

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._listener.on_partitions_revoked(partitions)

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._listener.on_partitions_assigned(partitions)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._listener.on_partitions_lost(partitions)


class BlockingConsumer:
    def __init__(self, config: ConsumerSettings | Mapping[str, str]) -> None:
        settings = self.settings = settings_from(ConsumerSettings, config)
        self._loop: LoopThread[Consumer] = LoopThread(
            "pykraft-consumer", lambda: Consumer(settings)
        )

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)
        self._loop.call_sync(lambda consumer: consumer.assign(tps))

    def assignment(self) -> set[TopicPartition]:
        return self._loop.call_sync(lambda consumer: consumer.assignment())

    def subscribe(
        self, topics: Iterable[str] = (), *, pattern: str | None = None,
        listener: BlockingRebalanceListener | None = None,
    ) -> None:
        wanted = list(topics)
        in_loop = None if listener is None else _InLoop(listener)
        self._loop.call_sync(
            lambda consumer: consumer.subscribe(wanted, pattern=pattern, listener=in_loop)
        )

    def subscription(self) -> set[str]:
        return self._loop.call_sync(lambda consumer: consumer.subscription())

    def unsubscribe(self) -> None:
        self._loop.call(lambda consumer: consumer.unsubscribe())

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        self._loop.call(lambda consumer: consumer.commit(offsets, timeout_ms))

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: CommitCallback | None = None,
    ) -> None:
        """The callback runs in the consumer's loop thread, during a later ``poll``."""
        self._loop.call_sync(lambda consumer: consumer.commit_async(offsets, callback))

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        tps = list(partitions)
        return self._loop.call(lambda consumer: consumer.committed(tps, timeout_ms))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._loop.call_sync(lambda consumer: consumer.seek(tp, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._loop.call_sync(lambda consumer: consumer.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._loop.call_sync(lambda consumer: consumer.seek_to_end(*partitions))

    def position(self, tp: TopicPartition, timeout_ms: float | None = None) -> int:
        return self._loop.call(lambda consumer: consumer.position(tp, timeout_ms))

    def highwater(self, tp: TopicPartition) -> int | None:
        return self._loop.call_sync(lambda consumer: consumer.highwater(tp))

    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        return self._loop.call(lambda consumer: consumer.poll(timeout_ms, max_records))

    def poll_batches(
        self, timeout_ms: float = 0, max_records: int | None = None
    ) -> list[FetchedBatch]:
        return self._loop.call(lambda consumer: consumer.poll_batches(timeout_ms, max_records))

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        tps = list(partitions)
        return self._loop.call(lambda consumer: consumer.beginning_offsets(tps, timeout_ms))

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        tps = list(partitions)
        return self._loop.call(lambda consumer: consumer.end_offsets(tps, timeout_ms))

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._loop.call(lambda consumer: consumer.offsets_for_times(timestamps, timeout_ms))

    def close(self) -> None:
        self._loop.close()

    def __enter__(self) -> BlockingConsumer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
