"""``Consumer``: the trio shell of the consumer (manual assignment or a consumer group).

Usage::

    async with Consumer({"bootstrap.servers": "localhost:9092",
                         "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        consumer.seek(TopicPartition("orders", 0), 42)
        records = await consumer.poll(timeout_ms=1000)    # [ConsumerRecord, ...]
        batches = await consumer.poll_batches(timeout_ms=1000)  # [FetchedBatch, ...]

    async with Consumer({"bootstrap.servers": "localhost:9092", "group.id": "billing",
                         "enable.auto.commit": "false"}) as consumer:
        consumer.subscribe(["orders"])              # or pattern=r"orders-.*"
        records = await consumer.poll(timeout_ms=1000)
        await consumer.commit()                     # the positions poll has reached

With a ``group.id``, ``subscribe`` makes the consumer a member of a classic
consumer group (``group_member.GroupMember`` over ``group_core.GroupCore``):
``poll`` joins, rebalances and applies assignments, ``commit`` /
``commit_async`` / ``committed`` talk to the group's coordinator.

The ``FetchCore`` is owned by the task that calls the consumer (Kafka's
consumer is single-threaded too: one caller at a time, which is checked).
Requests run in background tasks of the consumer's nursery, one fetch in
flight per leader broker at most, and a metadata refresh, resets
(ListOffsets) and validations (OffsetForLeaderEpoch) beside them; a task
never touches the core: it sends a closure over its answer through a
memory channel, and the calling task applies it. So fetches continue
while the caller works on the last records (Kafka's prefetch), and a poll
with a zero timeout returns at once with what is buffered.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import trio

from broker.client.background import open_background
from broker.client.cluster import MetadataTracker
from broker.client.consumer_groups import EXCLUSIVE, ConsumerGroupApi
from broker.client.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from broker.client.fetch_core import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchCore,
    FetchPlan,
    ResetPlan,
    ValidationPlan,
)
from broker.client.fetch_records import FetchedBatch
from broker.client.group_member import GroupMember, new_group_core
from broker.client.leader_epochs import (
    OFFSET_FOR_LEADER_EPOCH_MAX_VERSION,
    can_validate,
    epoch_end_offsets,
    offset_for_leader_epoch_request,
)
from broker.client.network import KafkaClient, now_ms
from broker.client.offsets import list_offsets
from broker.client.settings import ConsumerSettings, OffsetResetStrategy, settings_from
from broker.client.types import (
    ConsumerRecord,
    OffsetAndTimestamp,
    TopicPartition,
)
from quorum.wire.api_keys import ApiKey
from quorum.wire.error_codes import Errors

__all__ = ["Consumer"]

_FETCH_KEY: Final = 1
_FETCH_MIN_VERSION: Final = 4  # record batch v2
_FETCH_MAX_VERSION: Final = 12  # v13+ names topics by id
_ids = itertools.count(1)
_CLOSE_TIMEOUT_MS: Final = 30_000  # Kafka's DEFAULT_CLOSE_TIMEOUT_MS
T = TypeVar("T")
P = TypeVar("P")
Apply = Callable[[], None]


class Consumer(ConsumerGroupApi):
    def __init__(
        self, config: ConsumerSettings | Mapping[str, str], *, rng: random.Random | None = None
    ) -> None:
        settings = self.settings = settings_from(ConsumerSettings, config)
        self.client_id = settings.client_id or f"consumer-{next(_ids)}"
        tracker = MetadataTracker(
            metadata_max_age_ms=settings.metadata_max_age_ms,
            retry_backoff_ms=settings.retry_backoff_ms,
            allow_auto_topic_creation=settings.allow_auto_create_topics,
        )
        self._client = KafkaClient(settings, tracker, client_id=self.client_id, rng=rng)
        self._core = FetchCore(settings)
        self._send, self._answers = trio.open_memory_channel[Apply](math.inf)
        self._refreshing = False
        self._nursery: trio.Nursery | None = None
        self._stack = contextlib.AsyncExitStack()
        self._closed = False
        self._busy = False
        self._group = None if settings.group_id is None else GroupMember(
            new_group_core(settings), self._client, self._core, self._spawn_apply,
            self._start_soon,
        )

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Consumer:
        self._nursery = await open_background(self._stack)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        try:
            await self.aclose()
        finally:
            await self._stack.aclose()
            # after the nursery: no task can open a connection any more
            await self._client.aclose()

    async def aclose(self) -> None:
        if self._closed:
            return
        if self._group is not None and self._nursery is not None and not self._busy:
            # Kafka's close: auto-commit, revoke, LeaveGroup (a dynamic member), in 30 s
            limit = min(self.settings.default_api_timeout_ms, _CLOSE_TIMEOUT_MS)
            async with self._owner():
                await self._group.leave("the consumer is being closed", limit, commit=True)
        self._closed = True
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        else:
            await self._client.aclose()

    # -- assignment and positions --------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions (replacing any previous assignment)."""
        if self._group is not None and self._group.core.subscribed:
            raise KafkaError(None, EXCLUSIVE)
        tps = list(partitions)
        self._core.assign(tps)
        topics = {tp.topic for tp in tps}
        self._client.tracker.retain_topics(topics)
        self._client.tracker.add_topics(topics)

    def assignment(self) -> set[TopicPartition]:
        return set(self._core.positions.assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read ``tp`` from ``offset`` at the next poll."""
        self._core.seek(tp, offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._core.request_reset(partitions or self._core.positions.assigned,
                                 OffsetResetStrategy.EARLIEST)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._core.request_reset(partitions or self._core.positions.assigned,
                                 OffsetResetStrategy.LATEST)

    async def position(self, tp: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record ``poll`` gives for ``tp`` (resolving a reset first)."""
        limit = self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        self._core.positions.state_of(tp)  # KeyError for a partition not assigned
        async with self._owner():
            with trio.move_on_after(limit / 1000):
                while (position := self._core.positions.position(tp)) is None:
                    await self._step(trio.current_time() + limit / 1000)
                return position.offset
        raise KafkaTimeoutError(f"Timeout of {limit:.0f} ms expired before the position "
                                f"for partition {tp} could be determined")

    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark the last fetch of ``tp`` reported, if any."""
        mark = self._core.positions.state_of(tp).high_watermark
        return None if mark < 0 else mark

    # -- polling -------------------------------------------------------------------------

    async def poll(
        self, timeout_ms: float = 0, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Fetched records, in offset order per partition, waiting up to ``timeout_ms``."""
        limit = max_records or self.settings.max_poll_records
        return await self._poll(timeout_ms, lambda: self._core.poll_records(limit))

    async def poll_batches(
        self, timeout_ms: float = 0, max_records: int | None = None
    ) -> list[FetchedBatch]:
        """Whole fetched record batches (no object per record), waiting up to ``timeout_ms``."""
        limit = max_records or self.settings.max_poll_records
        return await self._poll(timeout_ms, lambda: self._core.poll_batches(limit))

    async def _poll(self, timeout_ms: float, take: Callable[[], list[T]]) -> list[T]:
        deadline = trio.current_time() + timeout_ms / 1000
        async with self._owner():
            group = self._group
            if group is not None:
                group.polling = True
            try:
                while True:
                    self._apply_answers()
                    self._core.raise_pending_error()
                    if group is not None:
                        await group.drive()
                    taken = take()
                    self._start_requests()
                    if taken or trio.current_time() >= deadline:
                        return taken
                    await self._step(deadline)
            finally:
                if group is not None:
                    group.polling = False
                    group.note_poll()

    async def _step(self, deadline: float) -> None:
        """Start what is due, then apply the next answer (or wake at a timer/deadline)."""
        self._apply_answers()
        self._core.raise_pending_error()
        self._start_requests()
        now = now_ms()
        waits = [deadline * 1000 - now, self._client.tracker.time_to_update_ms(now)]
        retry = self._core.positions.next_retry_ms(now)
        if retry is not None:
            waits.append(retry)
        if self._group is not None:
            waits.append(self._group.wait_ms(now))
        with trio.move_on_after(max(0.0, min(waits)) / 1000):
            apply = await self._answers.receive()
            apply()

    @contextlib.asynccontextmanager
    async def _owner(self) -> Any:
        if self._closed or self._nursery is None:
            raise ClientClosedError("This consumer has already been closed."
                                    if self._closed else "use it inside `async with Consumer(...)`")
        if self._group is not None and self._group.in_callback:
            yield  # a rebalance listener calling back into the poll that runs it
            return
        if self._busy:
            raise KafkaError(None, "the consumer is not safe for concurrent use: one call at a time")
        self._busy = True
        try:
            yield
        finally:
            self._busy = False

    def _apply_answers(self) -> None:
        while True:
            try:
                apply = self._answers.receive_nowait()
            except trio.WouldBlock:
                break
            apply()
        for error, tp in self._core.metadata_errors:
            self._client.tracker.observe_error(error, f"an answer about {tp}")
        self._core.metadata_errors.clear()

    # -- background requests (they never touch the core) ---------------------------------

    def _start_requests(self) -> None:
        assert self._nursery is not None
        tracker, core, now = self._client.tracker, self._core, now_ms()
        if tracker.needs_update(now) and not self._refreshing:
            self._refreshing = True
            self._nursery.start_soon(self._refresh)
        view = self._client.view
        resets, leaderless = core.reset_plans(view, now)
        for reset in resets:
            self._spawn(self._reset, reset)
        for validation in core.validation_plans(view, now):
            self._spawn(self._validate, validation)
        fetches, fetch_leaderless = core.fetch_plans(view)
        for fetch in fetches:
            self._spawn(self._fetch, fetch)
        if leaderless or fetch_leaderless:
            tracker.request_update("an assigned partition has no known leader")

    def _spawn_apply(self, work: Callable[[], Awaitable[Apply]]) -> None:
        async def run() -> None:
            apply = await work()
            await self._send.send(apply)

        assert self._nursery is not None
        self._nursery.start_soon(run)

    def _start_soon(self, work: Callable[[], Awaitable[None]]) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(work)

    def _spawn(self, work: Callable[[P], Awaitable[Apply]], plan: P) -> None:
        async def run() -> None:
            apply = await work(plan)
            await self._send.send(apply)

        assert self._nursery is not None
        self._nursery.start_soon(run)

    async def _refresh(self) -> None:
        try:
            view = await self._client.refresh_metadata()
        except KafkaError as exc:
            error = exc

            def failed() -> None:
                self._refreshing = False
                if not error.retriable:
                    raise error

            await self._send.send(failed)
            return

        def refreshed() -> None:
            self._refreshing = False
            self._core.on_metadata(view, self._can_validate)
            if self._group is not None:
                self._group.core.on_metadata(view)

        await self._send.send(refreshed)

    def _can_validate(self, node: int) -> bool:
        broker = self._client.view.brokers.get(node)
        conn = None if broker is None else self._client.pool.open_connection(broker.address)
        # not connected yet: Kafka validates, and skips if the broker cannot answer
        return can_validate(None if conn is None else conn.server_versions)

    async def _fetch(self, plan: FetchPlan) -> Apply:
        core, extra_ms = self._core, self.settings.fetch_max_wait_ms
        try:
            conn = await self._client.node_connection(plan.node)
            version = conn.version_at_most(_FETCH_KEY, _FETCH_MAX_VERSION)
            if version < _FETCH_MIN_VERSION:
                raise KafkaError(Errors.UNSUPPORTED_VERSION, f"broker {plan.node}: Fetch v4+")
            response = await self._client.request(
                conn, plan.request, version=version, timeout_ms=extra_ms
            )
        except KafkaError as exc:
            failure = exc
            return lambda: core.handle_fetch_failure(plan, failure)
        return lambda: core.handle_fetch_response(plan, response)

    async def _reset(self, plan: ResetPlan) -> Apply:
        core, client = self._core, self._client
        try:
            conn = await client.node_connection(plan.node)
            response = await client.request(conn, plan.request, version=conn.version_at_most(2, 7))
        except KafkaError as exc:
            failure = exc
            return lambda: core.handle_reset_failure(plan, failure, now_ms())
        return lambda: core.handle_reset_response(plan, response, client.view, now_ms())

    async def _validate(self, plan: ValidationPlan) -> Apply:
        core, client = self._core, self._client
        try:
            conn = await client.node_connection(plan.node)
            if not can_validate(conn.server_versions or {}):
                return lambda: core.skip_validation(plan)
            request = offset_for_leader_epoch_request(plan)
            version = conn.version_at_most(
                ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_MAX_VERSION
            )
            response = await client.request(conn, request, version=version)
        except KafkaError as exc:
            failure = exc
            if exc.error is Errors.UNSUPPORTED_VERSION:
                return lambda: core.skip_validation(plan)
            return lambda: core.handle_validation_failure(plan, failure, now_ms())
        results = epoch_end_offsets(response)
        return lambda: core.handle_validation_results(plan, results, now_ms())

    # -- offsets -------------------------------------------------------------------------

    async def _list(self, timestamps: Mapping[TopicPartition, int],
                    timeout_ms: float | None) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        if self._closed:
            raise ClientClosedError("This consumer has already been closed.")
        limit = self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        return await list_offsets(
            self._client, timestamps, timeout_ms=limit,
            isolation_level=int(self.settings.isolation_level),
        )

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        found = await self._list(dict.fromkeys(partitions, EARLIEST_TIMESTAMP), timeout_ms)
        return {tp: -1 if o is None else o.offset for tp, o in found.items()}

    async def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last committed record (the high watermark) of each partition."""
        found = await self._list(dict.fromkeys(partitions, LATEST_TIMESTAMP), timeout_ms)
        return {tp: -1 if o is None else o.offset for tp, o in found.items()}

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset whose timestamp is at least the one given (None: there is none)."""
        for tp, stamp in timestamps.items():
            if stamp < 0:
                raise ValueError(f"the timestamp for {tp} must not be negative, not {stamp}")
        return await self._list(timestamps, timeout_ms)

