"""``ReplicaDriver``: the trio shell around the broker's ``ReplicaCore``.

The core (``broker.replica``) is a sans-I/O state machine; this module is
everything around it that waits. Trio runs one task at a time in one thread,
so every input is a synchronous call of the core followed at once by
performing its ``ReplicaOutput`` (``_step``): the core is never entered twice
and nothing is queued between an input and its effects. The inputs:

* the metadata image's changes, which ``BrokerMetadataMachine`` hands to
  ``apply`` in the Raft core's task: they are only queued there, and a task
  of this driver applies them in slices of ``apply_slice`` partitions with a
  checkpoint between slices, so a topic of 100,000 partitions never stalls
  the broker's other tasks. Nothing is applied before ``activate`` (the
  broker registered and caught up, as Kafka's replica manager waits for the
  broker to leave RECOVERY): before that, the image's own registration of
  this broker may be a previous incarnation's;
* Produce and Fetch requests from the broker listener (``produce``,
  ``fetch``), answered through the connection's ``ResponseSlot`` (the
  handle the core gives back); an acks=0 produce has no slot;
* answers to the core's own requests: follower fetches, one link task per
  source broker (``broker.replica.links``), and AlterPartition to the active
  controller over the controller channel's ALTER_PARTITION lane;
* time: one timer task calls ``poll`` at the core's next deadline.

Partition logs are written and read inside the step, in the trio thread
(appends to the page cache; Kafka's durability is replication). The high
watermarks are checkpointed every ``checkpoint_interval_ms`` in a worker
thread (Kafka's ``replica.high.watermark.checkpoint.interval.ms``).
"""

from __future__ import annotations

import abc
import gc
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import trio

from broker.controller_channel import (
    BrokerControllerChannel,
    ControllerLane,
    ControllerUnavailableError,
)
from broker.data_metrics import DataPlaneCounters, PartitionCensus, data_plane_families
from broker.replica import OutboundAlterPartition, ReplicaCore, ReplicaOutput
from broker.replica.links import FetchLinks, PeerAddress
from broker.replica.log_cleaning import LogCleaning, run_log_cleaner
from broker.replica.manager import PartitionAssignment, PartitionKey
from quorum.controller.image import MetadataImage
from quorum.metrics import STEP_WORK
from quorum.metrics.exposition import Family
from quorum.node.connection import ResponseSlot
from quorum.wire.messages import (
    DeleteRecordsRequest,
    FetchRequest,
    ProduceRequest,
    ProduceResponse,
)

__all__ = ["InternalProduceSlot", "LogMaintenance", "ReplicaDriver"]

logger = logging.getLogger(__name__)

ALTER_PARTITION_VERSION = 3


@attrs.frozen
class LogMaintenance:
    retention_check_interval_ms: int
    # removes the directories of partitions no longer hosted (blocking: a worker thread)
    remove_deleted: Callable[[], object]
    # the log cleaner of compacted partitions (``broker.replica.log_cleaning``); None: off
    cleaning: LogCleaning | None = None


class InternalProduceSlot(abc.ABC):
    """Where the answer to one of the broker's own produces goes (``produce(internal=True)``:
    the group coordinator's appends to ``__consumer_offsets``)."""

    @abc.abstractmethod
    def complete(self, response: ProduceResponse) -> None:
        """The produce's answer: once the high watermark passed it, or with its error."""


@attrs.frozen
class _Changes:
    changed: Sequence[PartitionAssignment]
    removed: Sequence[PartitionAssignment]
    image: MetadataImage


class ReplicaDriver:
    """Owns the ``ReplicaCore``; a ``ReplicaManager`` for the metadata machine."""

    def __init__(
        self,
        core: ReplicaCore,
        *,
        clock_ms: Callable[[], int],
        # called with the core's {PartitionKey: high watermark}, in a worker thread
        checkpoint: Callable[[Mapping[Any, int]], None] | None = None,
        maintenance: LogMaintenance | None = None,
        # a new replica costs 35-50 us on a loaded 2-core machine (its log view, follower
        # state, session entry): 250 a slice keeps a slice near 10 ms (500 made steps of
        # 180 ms on a machine three times slower)
        apply_slice: int = 250,
        checkpoint_interval_ms: int = 5_000,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self.core = core
        self._clock_ms = clock_ms
        self._checkpoint = checkpoint
        self._maintenance = maintenance
        self._apply_slice = apply_slice
        self._checkpoint_interval_ms = checkpoint_interval_ms
        self._request_timeout_ms = request_timeout_ms
        self._pending: deque[_Changes] = deque()
        self._pending_wake = trio.Event()
        self._active = trio.Event()
        self._deadline_ms: float = math.inf
        self._deadline_changed = trio.Event()
        # source brokers whose fetch answer's next slice is scheduled
        self._answers_left: set[int] = set()
        self._nursery: trio.Nursery | None = None
        self._controller: BrokerControllerChannel | None = None
        self._links: FetchLinks | None = None
        self._hw_dirty = False
        # one checkpoint write at a time: the last one at shutdown waits for a periodic one
        # still in its thread (both write the same temporary file)
        self._checkpoint_lock = trio.Lock()
        self.steps = 0
        # set (and replaced) after each slice of the image's changes is applied
        self.applied = trio.Event()
        self._applied_listeners: list[Callable[[], None]] = []
        self.counters = DataPlaneCounters()
        # when each waiting request arrived
        self._started: dict[ResponseSlot | InternalProduceSlot, int] = {}

    # -- the ReplicaManager side (the Raft core's task: no waiting) --------------------------

    def apply(
        self,
        changed: Sequence[PartitionAssignment],
        removed: Sequence[PartitionAssignment],
        image: MetadataImage,
    ) -> None:
        self._pending.append(_Changes(tuple(changed), tuple(removed), image))
        self._pending_wake.set()

    def image_published(self, image: MetadataImage) -> None:
        """Every new image, changed assignments or not: the core judges ISR eligibility (a
        broker registered again, unfenced or shutting down) by the latest image."""
        if not self._pending or self._pending[-1].image is not image:
            self._pending.append(_Changes((), (), image))
            self._pending_wake.set()

    @property
    def pending_changes(self) -> int:
        return sum(len(c.changed) + len(c.removed) for c in self._pending)

    def on_applied(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (no waiting in it) after every slice of assignment changes the
        core applied: leaderships gained and lost are in the core by then."""
        self._applied_listeners.append(listener)

    def activate(self) -> None:
        """The broker is registered and caught up: start applying the image's changes."""
        self._active.set()

    # -- the listener side ------------------------------------------------------------------

    def produce(
        self,
        slot: ResponseSlot | InternalProduceSlot | None,
        request: ProduceRequest,
        *,
        internal: bool = False,
    ) -> None:
        """A Produce request; ``slot`` is None for acks=0 (no answer is ever sent).

        ``internal``: the group coordinator's append to ``__consumer_offsets``, its
        ``slot`` an ``InternalProduceSlot``.
        """
        self.counters.produced(request)
        if slot is not None:
            self._started[slot] = self._clock_ms()
        self._step(lambda now: self.core.produce(slot, request, now, internal=internal), "produce")

    def fetch(self, slot: ResponseSlot, request: FetchRequest, version: int) -> None:
        self.counters.fetch_requests += 1
        self._started[slot] = self._clock_ms()
        self._step(lambda now: self.core.fetch(slot, request, version, now), "fetch")

    def delete_records(self, slot: ResponseSlot, request: DeleteRecordsRequest) -> None:
        """DeleteRecords: answered once every replica's log start moved (or it timed out)."""
        self._step(lambda now: self.core.delete_records(slot, request, now), "delete records")

    def log_starts_moved(self, keys: Sequence[PartitionKey]) -> None:
        """Log starts moved outside the core (retention): followers hear of it."""
        if keys:
            self._step(lambda now: self.core.log_starts_moved(keys, now), "log starts moved")

    async def metric_families(self) -> list[Family]:
        """The data plane's families; the partitions counted a slice at a time, with a
        checkpoint between (the hosted partitions as the scrape began)."""
        census = PartitionCensus()
        partitions = list(self.core.partitions)
        for start in range(0, len(partitions), self._apply_slice):
            census.add(partitions[start:start + self._apply_slice])
            await trio.lowlevel.checkpoint()
        return data_plane_families(census, self.counters, self._clock_ms())

    # -- running ----------------------------------------------------------------------------

    async def run(
        self,
        *,
        controller: BrokerControllerChannel,
        peers: Callable[[int], PeerAddress | None],
        client_id: str,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._controller = controller
            self._links = FetchLinks(
                nursery,
                peers=peers,
                client_id=client_id,
                timeout_ms=self._request_timeout_ms,
                on_response=lambda source, request_id, response: self._step(
                    lambda now: self.core.handle_fetch_response(source, request_id, response, now),
                    "fetch response",
                ),
                on_failure=lambda source, request_id: self._step(
                    lambda now: self.core.fetch_failed(source, request_id, now), "fetch failed"
                ),
            )
            nursery.start_soon(self._apply_changes)
            nursery.start_soon(self._timer)
            if self._checkpoint is not None:
                nursery.start_soon(self._checkpoints)
            if self._maintenance is not None:
                nursery.start_soon(self._maintain_logs, self._maintenance)
                if self._maintenance.cleaning is not None:
                    nursery.start_soon(
                        run_log_cleaner,
                        self._maintenance.cleaning,
                        lambda: list(self.core.partitions),
                        self._clock_ms,
                    )
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None
                await self._links.aclose()
                if self._checkpoint is not None and self._hw_dirty:
                    with trio.CancelScope(shield=True):
                        await self._write_checkpoint()

    # -- steps ------------------------------------------------------------------------------

    def _step(self, step: Callable[[int], ReplicaOutput], what: str) -> None:
        """One input of the core (``what``: its kind, for a stall warning), and its output
        performed before anything else runs."""
        if self._nursery is None:
            return  # stopped (or not started): nothing is served, fetched or sent
        self.steps += 1
        started = time.perf_counter()
        self._perform(step(self._clock_ms()))
        STEP_WORK.note("replica", what, time.perf_counter() - started)

    def _perform(self, output: ReplicaOutput) -> None:
        assert self._links is not None and self._nursery is not None
        for fetch in output.fetches:
            self._links.send(fetch)
        if output.alter_partition is not None:
            shrinks, expands = self.counters.isr_shrinks, self.counters.isr_expands
            self.counters.isr_change_asked(output.alter_partition.request, self._isr_size)
            logger.info(
                "asking the controller for ISR changes: %d shrinks, %d expansions",
                self.counters.isr_shrinks - shrinks, self.counters.isr_expands - expands,
            )
            self._nursery.start_soon(self._alter_partition, output.alter_partition)
        now = self._clock_ms()
        counters = self.counters
        for answer in output.produce_answers:
            if isinstance(answer.handle, (ResponseSlot, InternalProduceSlot)):
                answer.handle.complete(answer.response)
                counters.produce_time.record(now, now - self._started.pop(answer.handle, now))
        for fetched in output.fetch_answers:
            counters.fetched(fetched.response)
            if isinstance(fetched.handle, ResponseSlot):
                fetched.handle.complete(fetched.response)
                counters.fetch_time.record(now, now - self._started.pop(fetched.handle, now))
        for deleted in output.delete_records_answers:
            if isinstance(deleted.handle, ResponseSlot):
                deleted.handle.complete(deleted.response)
        if output.high_watermarks_moved:
            self._hw_dirty = True
        for source in output.fetch_answers_left:
            if source not in self._answers_left:
                self._answers_left.add(source)
                self._nursery.start_soon(self._continue_fetch_answer, source)
        deadline = math.inf if output.next_deadline_ms is None else output.next_deadline_ms
        if deadline != self._deadline_ms:
            self._deadline_ms = deadline
            self._deadline_changed.set()

    async def _continue_fetch_answer(self, source: int) -> None:
        """The next slice of a large fetch answer, after the other tasks had a turn."""
        await trio.lowlevel.checkpoint()
        self._answers_left.discard(source)
        self._step(lambda now: self.core.continue_fetch_response(source, now), "fetch response")

    def _isr_size(self, key: PartitionKey) -> int | None:
        partition = self.core.partitions.get(key)
        return None if partition is None else len(partition.isr_state.isr)

    async def _timer(self) -> None:
        while True:
            self._deadline_changed = trio.Event()
            wait_s = (self._deadline_ms - self._clock_ms()) / 1000
            if wait_s <= 0:
                self._step(self.core.poll, "timers")
                await trio.lowlevel.checkpoint()
                continue
            with trio.move_on_after(wait_s):
                await self._deadline_changed.wait()

    async def _apply_changes(self) -> None:
        await self._active.wait()
        while True:
            while not self._pending:
                self._pending_wake = trio.Event()
                await self._pending_wake.wait()
            changes = self._pending.popleft()
            # removals first, then the changes, each in bounded slices
            size = self._apply_slice
            for start in range(0, len(changes.removed), size):
                self._apply_part((), changes.removed[start:start + size], changes.image)
                await trio.lowlevel.checkpoint()
            for start in range(0, max(len(changes.changed), 1), size):
                self._apply_part(changes.changed[start:start + size], (), changes.image)
                await trio.lowlevel.checkpoint()

    def _apply_part(
        self,
        changed: Sequence[PartitionAssignment],
        removed: Sequence[PartitionAssignment],
        image: MetadataImage,
    ) -> None:
        self._step(
            lambda now: self.core.apply_changes(changed, removed, image, now), "assignments"
        )
        if changed:
            # hosted partitions live as long as the assignment: out of the collector's
            # generations, or each full collection walks every replica (a slice of 1,000
            # new replicas took 0.6 s instead of 20 ms at 33,000 hosted)
            gc.freeze()
        self.applied.set()
        self.applied = trio.Event()
        for listener in self._applied_listeners:
            listener()

    async def _alter_partition(self, outbound: OutboundAlterPartition) -> None:
        assert self._controller is not None
        try:
            response = await self._controller.call(
                outbound.request,
                lane=ControllerLane.ALTER_PARTITION,
                timeout_ms=self._request_timeout_ms,
                version=ALTER_PARTITION_VERSION,
            )
        except ControllerUnavailableError as exc:
            logger.info("AlterPartition not delivered (%s); the core retries", exc)
            self._step(
                lambda now: self.core.alter_partition_failed(outbound.request_id, now),
                "AlterPartition failed",
            )
            return
        self._step(lambda now: self.core.handle_alter_partition_response(
            outbound.request_id, response, now
        ), "AlterPartition response")

    async def _maintain_logs(self, maintenance: LogMaintenance) -> None:
        """Retention (Kafka's ``log.retention.check.interval.ms`` task): whole segments past
        ``retention.ms`` or ``retention.bytes`` and below the high watermark are deleted, a
        slice of partitions at a time; deleted partitions' directories are removed in a
        worker thread."""
        while True:
            await trio.sleep(maintenance.retention_check_interval_ms / 1000)
            # a log never written has nothing to delete (most of 100,000 idle replicas)
            partitions = [p for p in self.core.partitions if p.has_log]
            for start in range(0, len(partitions), self._apply_slice):
                now = self._clock_ms()
                moved = []
                for partition in partitions[start:start + self._apply_slice]:
                    if self.core.partitions.get(partition.key) is not partition:
                        continue  # stopped hosting it meanwhile
                    try:
                        if partition.log.delete_old_segments(  # type: ignore[attr-defined]
                            now, high_watermark=partition.high_watermark
                        ):
                            moved.append(partition.key)
                    except OSError as exc:
                        logger.warning("retention of %s failed: %s", partition, exc)
                self.log_starts_moved(moved)
                await trio.lowlevel.checkpoint()
            await trio.to_thread.run_sync(maintenance.remove_deleted)

    async def _checkpoints(self) -> None:
        while True:
            await trio.sleep(self._checkpoint_interval_ms / 1000)
            if self._hw_dirty:
                await self._write_checkpoint()

    async def _write_checkpoint(self) -> None:
        assert self._checkpoint is not None
        async with self._checkpoint_lock:
            self._hw_dirty = False
            marks = self.core.high_watermarks()
            try:
                await trio.to_thread.run_sync(self._checkpoint, marks)
            except OSError as exc:
                self._hw_dirty = True
                logger.warning("high watermark checkpoint not written: %s", exc)
