"""``GroupDriver``: the trio shell of the group coordinator.

It owns one ``GroupCoordinator`` (sans-I/O) and moves its outputs:

* answers complete the request's response slot;
* appends to ``__consumer_offsets`` go through the replica driver as an
  internal acks=all produce (``internal=True``: clients may not write
  there); the produce's answer, which comes once the high watermark passed
  the batch or with the partition's error, is fed back as
  ``append_committed`` / ``append_failed``;
* the coordinator's deadline is kept by this driver's task.

Leadership: whenever the replica driver has applied a slice of assignment
changes (``ReplicaDriver.on_applied``, Kafka's leader-election callback), on
every new image, and every ``watch_interval_ms`` as a backstop, the driver
compares the ``__consumer_offsets`` partitions this broker leads, with their
leader epochs, against the ones loaded. A partition gained (or led again in
a new epoch) is loaded: ``begin_load``, its records from the log start to the
log end in slices of ``load_slice_bytes`` with the loop free between slices,
then ``finish_load``; a partition lost is unloaded. Between a leadership and
its load's end, requests for its groups get COORDINATOR_LOAD_IN_PROGRESS,
which the clients retry.

Every call into the coordinator runs in this driver's task or in the
listener task that received the request, never inside the replica driver's
step: a produce answer is queued to this task first, since completing it may
start the next append.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Hashable
from typing import Any, Final

import attrs
import trio
import trio.lowlevel

from broker.group.coordinator import GroupCoordinator
from broker.group.output import CoordinatorOutput
from broker.replica.driver import InternalProduceSlot, ReplicaDriver
from quorum.controller.image import MetadataImage
from quorum.controller.topic_names import OFFSETS_TOPIC
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    ProduceResponse,
)
from quorum.wire.protocol import RequestHeader
from quorum.wire.records import Record, build_batch, iter_batches

__all__ = ["GroupDriver"]

logger = logging.getLogger(__name__)

_ACKS_ALL: Final = -1
# one load slice reads and replays this much of an offsets partition (a slice of 256 KiB of
# small commit records decodes in about 20-40 ms here); Kafka reads offsets.load.buffer.size
# (5 MiB) at a time, on a thread of its own
LOAD_SLICE_BYTES: Final = 262_144


@attrs.frozen
class _Appended:
    append_id: int
    error: Errors


class _AppendSlot(InternalProduceSlot):
    """Where the replica driver puts the answer to one internal append."""

    __slots__ = ("_append_id", "_events")

    def __init__(self, append_id: int, events: trio.MemorySendChannel[_Appended]) -> None:
        self._append_id = append_id
        self._events = events

    def complete(self, response: ProduceResponse) -> None:
        partitions = [p for topic in response.responses for p in topic.partition_responses]
        error = Errors.from_code(partitions[0].error_code) if partitions else Errors.UNKNOWN_SERVER_ERROR
        self._events.send_nowait(_Appended(self._append_id, error))


class GroupDriver:
    def __init__(
        self,
        coordinator: GroupCoordinator,
        *,
        replicas: ReplicaDriver,
        image: Callable[[], MetadataImage],
        clock_ms: Callable[[], int],
        commit_timeout_ms: int,
        watch_interval_ms: int = 1_000,
        load_slice_bytes: int = LOAD_SLICE_BYTES,
        topic: str = OFFSETS_TOPIC,
    ) -> None:
        self.coordinator = coordinator
        self._replicas = replicas
        self._image = image
        self._clock_ms = clock_ms
        self._commit_timeout_ms = commit_timeout_ms
        self._watch_interval_ms = watch_interval_ms
        self._load_slice_bytes = load_slice_bytes
        self._topic = topic
        self._events_send, self._events = trio.open_memory_channel[_Appended](math.inf)
        self._wake = trio.Event()
        # partition -> the leader epoch it was loaded (or is being loaded) in
        self._loaded: dict[int, int] = {}
        replicas.on_applied(self.notify)

    # -- inputs from the listener ---------------------------------------------------------------

    def handle(self, slot: Hashable, header: RequestHeader, message: Any, client_host: str) -> None:
        """One group request; ``slot`` (with ``complete``) gets the answer, now or later."""
        out = self.coordinator.handle(
            message,
            version=header.api_version,
            token=slot,
            now_ms=self._clock_ms(),
            client_id=header.client_id or "",
            client_host=client_host,
        )
        self._apply(out)

    def notify(self) -> None:
        """Something changed (a new image, leaderships applied): look at the led partitions
        now."""
        self._wake.set()

    # -- the task ----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._settle_appends)
            task_status.started()
            while True:
                await self._reconcile()
                deadline = self.coordinator.next_deadline_ms()
                wait_ms = self._watch_interval_ms
                if deadline is not None:
                    wait_ms = max(0, min(wait_ms, deadline - self._clock_ms()))
                with trio.move_on_after(wait_ms / 1000):
                    await self._wake.wait()
                self._wake = trio.Event()
                deadline = self.coordinator.next_deadline_ms()
                now = self._clock_ms()
                if deadline is not None and deadline <= now:
                    self._apply(self.coordinator.poll(now), from_run_loop=True)

    async def _settle_appends(self) -> None:
        async for appended in self._events:
            now = self._clock_ms()
            if appended.error == Errors.NONE:
                out = self.coordinator.append_committed(appended.append_id, now_ms=now)
            else:
                out = self.coordinator.append_failed(appended.append_id, appended.error, now_ms=now)
            self._apply(out)

    # -- outputs -------------------------------------------------------------------------------

    def _apply(self, out: CoordinatorOutput, *, from_run_loop: bool = False) -> None:
        for answer in out.answers:
            answer.token.complete(answer.response)  # type: ignore[attr-defined]
        for append in out.appends:
            batch = build_batch(
                [Record(offset_delta=i, key=r.key, value=r.value)
                 for i, r in enumerate(append.records)],
                base_timestamp=self._clock_ms(),
            )
            request = ProduceRequest(
                acks=_ACKS_ALL,
                timeout_ms=self._commit_timeout_ms,
                topic_data=(ProduceRequestTopic(
                    name=self._topic,
                    partition_data=(ProduceRequestPartition(index=append.partition, records=batch),),
                ),),
            )
            self._replicas.produce(
                _AppendSlot(append.append_id, self._events_send), request, internal=True
            )
        if out.next_deadline_ms is not None and not from_run_loop:
            self._wake.set()  # the run loop sleeps until the deadline, which may be sooner now

    # -- leadership ------------------------------------------------------------------------------

    def _led(self) -> dict[int, int]:
        """The offsets partitions this broker leads now, with their leader epochs."""
        topic = self._image().topic(self._topic)
        if topic is None:
            return {}
        # by name, not a walk of every hosted partition (a broker may host 100,000)
        hosted = self._replicas.core.partitions
        found = (hosted.by_name(self._topic, index) for index in topic.partitions)
        return {p.index: p.leader_epoch for p in found if p is not None and p.is_leader}

    async def _reconcile(self) -> None:
        led = self._led()
        for partition in [p for p, epoch in self._loaded.items() if led.get(p) != epoch]:
            del self._loaded[partition]
            self._apply(
                self.coordinator.unload(partition, now_ms=self._clock_ms()), from_run_loop=True
            )
            logger.debug("offsets partition %d unloaded: no longer led here", partition)
        for partition, epoch in sorted(led.items()):
            if partition not in self._loaded:
                await self._load(partition, epoch)

    async def _load(self, partition: int, epoch: int) -> None:
        self._loaded[partition] = epoch
        started = self._clock_ms()
        self._apply(self.coordinator.begin_load(partition, now_ms=started), from_run_loop=True)
        offset, records = None, 0
        while True:
            current = self._replicas.core.partitions.by_name(self._topic, partition)
            if current is None or not current.is_leader or current.leader_epoch != epoch:
                # lost while loading: the next reconcile unloads what was begun
                return
            if not current.has_log:
                break
            log = current.log
            if offset is None:
                offset = log.log_start_offset
            if offset >= log.log_end_offset:
                break
            read = log.read(offset, self._load_slice_bytes)
            if not read.records:
                break
            pairs = []
            for batch in iter_batches(read.records):
                if batch.header.is_control:
                    continue
                for record in batch.records:
                    if batch.offset_of(record) >= offset and record.key is not None:
                        pairs.append((record.key, record.value))
            records += len(pairs)
            self._apply(
                self.coordinator.load_records(partition, pairs, now_ms=self._clock_ms()),
                from_run_loop=True,
            )
            offset = read.next_offset
            await trio.lowlevel.checkpoint()  # one slice a step: requests and replication run between
        self._apply(
            self.coordinator.finish_load(partition, now_ms=self._clock_ms()), from_run_loop=True
        )
        # an empty partition's load is routine (a broker may lead dozens of them at start):
        # only a load that replayed something is worth the operator's console
        logger.log(
            logging.INFO if records else logging.DEBUG,
            "offsets partition %d loaded in leader epoch %d: %d records in %d ms",
            partition, epoch, records, self._clock_ms() - started,
        )
