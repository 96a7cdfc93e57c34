"""``ReplicaCore``: every partition one broker hosts, as one sans-I/O state machine.

Inputs are method calls with ``now_ms`` (see the package docstring for the
driving contract); each returns one ``ReplicaOutput``. The core owns the
partitions (``Partition``), the fetchers that follow other leaders (one
``ReplicaFetcher`` per source broker), the fetch session cache and the
purgatories of waiting produces and fetches (``Producing``, ``Serving``), and
the queue of ISR changes for the controller (``AlterPartitionQueue``). It
reads and writes partition logs through ``LogDirectory`` and nothing else.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Hashable, Sequence
from typing import Protocol

from broker.replica.alter_partition import AlterPartitionQueue
from broker.replica.config import ReplicaConfig
from broker.replica.deleting import Deleting
from broker.replica.fetcher import FetchedPartition, PartitionFetchState, ReplicaFetcher
from broker.replica.follower import apply_fetched, fetch_position, truncate_to_diverging_epoch
from broker.replica.manager import PartitionAssignment, PartitionKey
from broker.replica.output import (
    OutboundAlterPartition,
    OutboundFetch,
    Outbox,
    ReplicaOutput,
)
from broker.replica.partition import AssignmentOutcome, Partition, PartitionContext
from broker.replica.partition_table import PartitionTable
from broker.replica.producing import Producing
from broker.replica.serving import Serving
from broker.replica.session_cache import FetchSessionCache
from broker.replica.topic_configs import TopicConfigs, TopicLogConfigs
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.log import OffsetAndEpoch, ReplicatedLog
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    AlterPartitionResponse,
    DeleteRecordsRequest,
    FetchRequest,
    FetchResponse,
    ProduceRequest,
)

__all__ = ["ISR_CHECK_SLICE", "LogDirectory", "ReplicaCore"]

# partitions of one fetch answer a step applies (up to 1,000 come in one: at 130 us each on
# a loaded machine the whole answer held a broker's loop 390 ms); the rest in later steps
FETCH_APPLY_SLICE = 250

# led partitions whose ISR one poll checks (a broker may lead 30,000): a check costs
# 50-200 us in Python (a profile after a full restart at 100,000 partitions), and 2,000
# a poll made steps of 360-400 ms on a loaded machine
ISR_CHECK_SLICE = 500


class LogDirectory(Protocol):
    """Where a broker's partition logs live (files in log.dirs; memory in the simulator)."""

    def open_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog | None:
        """The partition's log if it has one (``name``: topic, index); None: a new
        partition, whose log is made by ``create_log`` at its first write."""
        ...

    def create_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        """A new partition's log, made now (its first write)."""
        ...

    def checkpointed_high_watermark(self, key: PartitionKey) -> int:
        """The last high watermark checkpointed for the partition (0 if none)."""
        ...

    def delete_log(self, key: PartitionKey) -> None:
        """The broker no longer hosts the partition."""
        ...


class ReplicaCore:
    def __init__(
        self,
        config: ReplicaConfig,
        logs: LogDirectory,
        rng: random.Random,
        *,
        log_configs: TopicLogConfigs | None = None,
    ) -> None:
        """``log_configs`` (the broker's log directory) gets each topic's log config."""
        self.config = config
        self.broker_id = config.broker_id
        self._logs = logs
        self._image = EMPTY_IMAGE
        self.partitions = PartitionTable()
        self._partition_context = PartitionContext(
            # one bound method for every partition
            self.broker_id, config.replica_lag_time_max_ms, self.is_isr_eligible,
            logs.create_log, config.producer_id_expiration_ms,
        )
        self._request_ids = itertools.count(1)
        self.fetchers: dict[int, ReplicaFetcher] = {}
        # source broker -> (its fetcher, the answer's partitions still to apply)
        self._applying: dict[int, tuple[ReplicaFetcher, deque[FetchedPartition]]] = {}
        self.producing = Producing(self.partitions.by_name, self.partitions.get)
        self.deleting = Deleting(self.partitions.by_name, self.partitions.get, lambda: self._image)
        self.serving = Serving(
            self.partitions.by_name,
            FetchSessionCache(
                config.max_incremental_fetch_session_cache_slots, rng, self._shared_name
            ),
            self.partitions.get,
        )
        self.alter_partitions = AlterPartitionQueue(
            self.broker_id, config.alter_partition_retry_backoff_ms
        )
        self._next_isr_check_ms: int | None = None
        self._next_producer_expiration_ms: int | None = None
        # led partitions whose ISR may hold a follower behind the log end: those touched
        # since (appends, new epochs, ISR answers) and those found lagging; only they can
        # leave the ISR (an ISR follower at the leader's end is caught up), so an idle
        # broker's check costs nothing (Kafka walks every led partition)
        self._isr_watch: dict[PartitionKey, None] = {}
        self._isr_check: list[PartitionKey] | None = None  # this check's partitions left
        self.topic_configs = TopicConfigs(config, log_configs)

    # -- views ---------------------------------------------------------------------------

    @property
    def broker_epoch(self) -> int:
        registration = self._image.broker(self.broker_id)
        return -1 if registration is None else registration.epoch

    def is_isr_eligible(self, broker_id: int) -> bool:
        """Kafka's isReplicaIsrEligible: registered, unfenced, not shutting down."""
        broker = self._image.broker(broker_id)
        return broker is not None and broker.is_active

    @property
    def isr_watched(self) -> int:
        """Led partitions the ISR check looks at (those that may have a follower behind)."""
        return len(self._isr_watch)

    def remove_expired_producers(self, now_ms: int) -> int:
        """Forget idempotent producers idle for producer.id.expiration.ms in every built
        producer state (Kafka's check every producer.id.expiration.check.interval.ms);
        how many went. A walk of the partitions, no log read."""
        return sum(
            p.producers.remove_expired(now_ms) for p in self.partitions if p.producers is not None
        )

    def snapshot_producer_states(self) -> int:
        """Write each built producer state to a snapshot at its log end (Kafka does at a
        clean shutdown: the next start reads the snapshot instead of the log); how many
        were written. Blocking file I/O: the driver calls it when it stops."""
        written = 0
        for partition in self.partitions:
            state = partition.producers
            if state is None or not partition.has_log:
                continue
            log = partition.log
            end = log.log_end_offset
            offsets = log.producer_snapshot_offsets()
            if state.end_offset != end or (offsets and offsets[-1] == end):
                continue  # not at the end (cannot happen once built), or written already
            state.truncate_head(log.log_start_offset)
            log.write_producer_snapshot(end, state.entries())
            written += 1
        return written

    def high_watermarks(self) -> dict[PartitionKey, int]:
        """Every hosted partition's high watermark (for the driver's checkpoint)."""
        return {p.key: p.high_watermark for p in self.partitions}

    # -- inputs --------------------------------------------------------------------------

    def apply_changes(
        self,
        changed: Sequence[PartitionAssignment],
        removed: Sequence[PartitionAssignment],
        image: MetadataImage,
        now_ms: int,
    ) -> ReplicaOutput:
        """A new metadata image: what it changed for this broker (``assignment_changes``)."""
        self._image = image
        outbox = Outbox()
        # a topic config changed: its partitions judge the next produce by the new one
        for topic, indexes, topic_config in self.topic_configs.refresh(image):
            for index in indexes:
                hosted = self.partitions.by_name(topic, index)
                if hosted is not None:
                    hosted.config = topic_config
                    outbox.touched.add(hosted.key)  # waiting produces see a new min ISR
        for assignment in removed:
            self._stop_hosting(assignment.key, outbox)
        for assignment in changed:
            self._apply_assignment(assignment, now_ms, outbox)
        if self._next_isr_check_ms is None:
            self._next_isr_check_ms = now_ms + self.config.isr_check_interval_ms
        if self._next_producer_expiration_ms is None:
            self._next_producer_expiration_ms = (
                now_ms + self.config.producer_id_expiration_check_interval_ms
            )
        return self._finish(now_ms, outbox)

    def produce(
        self, handle: Hashable, request: ProduceRequest, now_ms: int, *, internal: bool = False
    ) -> ReplicaOutput:
        """A Produce; ``internal``: the broker's own append to an internal topic."""
        outbox = Outbox()
        self.producing.produce(handle, request, now_ms, outbox, internal=internal)
        return self._finish(now_ms, outbox)

    def delete_records(
        self, handle: Hashable, request: DeleteRecordsRequest, now_ms: int
    ) -> ReplicaOutput:
        outbox = Outbox()
        self.deleting.delete_records(handle, request, now_ms, outbox)
        return self._finish(now_ms, outbox)

    def fetch(
        self, handle: Hashable, request: FetchRequest, version: int, now_ms: int
    ) -> ReplicaOutput:
        outbox = Outbox()
        self.serving.fetch(handle, request, version, now_ms, outbox)
        return self._finish(now_ms, outbox)

    def handle_fetch_response(
        self, source: int, request_id: int, response: FetchResponse, now_ms: int
    ) -> ReplicaOutput:
        """A fetch answer: its first ``FETCH_APPLY_SLICE`` partitions applied now, the rest
        by ``continue_fetch_response`` (the output's ``fetch_answers_left`` says so); the
        fetcher sends no next request until all are applied."""
        outbox = Outbox()
        fetcher = self.fetchers.get(source)
        if fetcher is not None:
            fetched = fetcher.handle_response(request_id, response, now_ms)
            if fetched:
                fetcher.hold()
                self._applying[source] = (fetcher, deque(fetched))
                self._apply_fetched_slice(source, now_ms, outbox)
        return self._finish(now_ms, outbox, answers_left=source in self._applying)

    def continue_fetch_response(self, source: int, now_ms: int) -> ReplicaOutput:
        """The next slice of an answer ``handle_fetch_response`` began to apply."""
        outbox = Outbox()
        self._apply_fetched_slice(source, now_ms, outbox)
        return self._finish(now_ms, outbox, answers_left=source in self._applying)

    def _apply_fetched_slice(self, source: int, now_ms: int, outbox: Outbox) -> None:
        pending = self._applying.get(source)
        if pending is None:
            return
        fetcher, left = pending
        if self.fetchers.get(source) is not fetcher:
            del self._applying[source]  # the link was dropped meanwhile: nothing to apply
            return
        for _ in range(min(FETCH_APPLY_SLICE, len(left))):
            fetched = left.popleft()
            # between two slices the image may have moved the partition on
            if fetcher.still_current(fetched, now_ms):
                self._apply_fetched(fetcher, fetched, now_ms, outbox)
        if not left:
            del self._applying[source]
            fetcher.release()

    def fetch_failed(self, source: int, request_id: int, now_ms: int) -> ReplicaOutput:
        fetcher = self.fetchers.get(source)
        if fetcher is not None:
            fetcher.request_failed(request_id, now_ms)
        return self._finish(now_ms, Outbox())

    def handle_alter_partition_response(
        self, request_id: int, response: AlterPartitionResponse, now_ms: int
    ) -> ReplicaOutput:
        outbox = Outbox()
        for answer in self.alter_partitions.handle_response(request_id, response, now_ms):
            partition = self.partitions.get(answer.key)
            if partition is None:
                continue
            moved, resend = partition.handle_alter_partition_result(
                answer.sent, answer.result, now_ms
            )
            outbox.touched.add(answer.key)
            if moved:
                outbox.moved(answer.key)
            if resend:
                outbox.isr_changes.append((answer.key, answer.sent))
        return self._finish(now_ms, outbox)

    def alter_partition_failed(self, request_id: int, now_ms: int) -> ReplicaOutput:
        self.alter_partitions.request_failed(request_id, now_ms)
        return self._finish(now_ms, Outbox())

    def log_starts_moved(self, keys: Sequence[PartitionKey], now_ms: int) -> ReplicaOutput:
        """Retention or DeleteRecords moved these partitions' log starts (outside the core):
        followers and waiting fetches hear of it."""
        outbox = Outbox()
        outbox.touched.update(k for k in keys if k in self.partitions)
        return self._finish(now_ms, outbox)

    def poll(self, now_ms: int) -> ReplicaOutput:
        """Timers: expired waits, the ISR check, backoffs, retries."""
        outbox = Outbox()
        self.producing.expire(now_ms, outbox)
        self.deleting.expire(now_ms, outbox)
        self.serving.expire(now_ms, outbox)
        if self._next_isr_check_ms is not None and now_ms >= self._next_isr_check_ms:
            self._check_isrs(now_ms, outbox)
        expiration = self._next_producer_expiration_ms
        if expiration is not None and now_ms >= expiration:
            self.remove_expired_producers(now_ms)
            self._next_producer_expiration_ms = (
                now_ms + self.config.producer_id_expiration_check_interval_ms
            )
        return self._finish(now_ms, outbox)

    def _check_isrs(self, now_ms: int, outbox: Outbox) -> None:
        """Kafka's maybeShrinkIsr over the watched led partitions, ``ISR_CHECK_SLICE`` per
        poll: a check that is not done asks to be polled again at once (the driver lets its
        other tasks run between polls). A high watermark held under the log end by a
        follower outside the ISR is tried again (nothing else would: that follower's
        caught-up time runs out, or its fence comes, without a fetch or an append). A
        partition whose ISR followers all have the log end, with no change in flight and
        its high watermark not held, leaves the watch until it is touched again."""
        if self._isr_check is None:
            self._isr_check = list(self._isr_watch)
        todo = self._isr_check
        watch = self._isr_watch
        for key in todo[-ISR_CHECK_SLICE:]:
            partition = self.partitions.get(key)
            if partition is None or not partition.is_leader:
                watch.pop(key, None)
                continue
            change = partition.maybe_shrink_isr(now_ms)
            if change is not None:
                outbox.isr_changes.append((key, change))
            elif partition.high_watermark_held():
                # a follower out of the ISR held it while caught up: time may have let go
                if partition.maybe_increment_high_watermark(now_ms):
                    outbox.moved(key)
            elif partition.isr_in_sync():
                watch.pop(key, None)
        del todo[-ISR_CHECK_SLICE:]
        if todo:
            self._next_isr_check_ms = now_ms
        else:
            self._isr_check = None
            self._next_isr_check_ms = now_ms + self.config.isr_check_interval_ms
            # a dict keeps its table after deletions: 100,000 entries watched once (a
            # creation) would stay allocated while the watch is nearly empty
            self._isr_watch = dict(watch)

    # -- assignments ---------------------------------------------------------------------

    def _stop_hosting(self, key: PartitionKey, outbox: Outbox) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove_partition(key)
        hosted = self.partitions.get(key)
        if hosted is not None:
            self.serving.stop_hosting(hosted)
        if self.partitions.remove(key) is not None:
            self._logs.delete_log(key)
        outbox.touched.add(key)

    def _shared_name(self, name: tuple[str, int]) -> tuple[str, int]:
        partition = self.partitions.by_name(*name)
        return name if partition is None else partition.name

    def _partition_for(self, assignment: PartitionAssignment) -> Partition:
        config = self.topic_configs.for_topic(self._image, assignment.topic)
        key = assignment.key  # one key object per partition, kept by the table and the log
        partition = self.partitions.get(key)
        if partition is None:
            name = (assignment.topic, assignment.partition)
            partition = Partition(
                key=key,
                name=name,
                log=self._logs.open_log(key, name),
                config=config,
                context=self._partition_context,
                high_watermark=self._logs.checkpointed_high_watermark(key),
            )
            self.partitions.add(partition)
        partition.config = config
        return partition

    def _apply_assignment(
        self, assignment: PartitionAssignment, now_ms: int, outbox: Outbox
    ) -> None:
        partition = self._partition_for(assignment)
        outcome = partition.apply_assignment(assignment, now_ms)
        outbox.touched.add(partition.key)
        if outcome is AssignmentOutcome.SKIPPED:
            return
        if partition.is_leader:
            self._stop_fetching(partition.key)
            if partition.maybe_increment_high_watermark(now_ms):
                outbox.moved(partition.key)
            return
        leader = assignment.leader
        fetcher = self._fetcher_of(partition.key)
        if leader < 0 or leader == self.broker_id:
            self._stop_fetching(partition.key)
        elif outcome is AssignmentOutcome.NEW_LEADER_EPOCH or fetcher is None:
            self._stop_fetching(partition.key)
            self._start_fetching(partition, leader)

    def _fetcher_of(self, key: PartitionKey) -> ReplicaFetcher | None:
        return next((f for f in self.fetchers.values() if key in f), None)

    def _stop_fetching(self, key: PartitionKey) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove_partition(key)

    def _start_fetching(self, partition: Partition, leader: int) -> None:
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = ReplicaFetcher(self.config, leader, self._request_ids)
        position = fetch_position(partition)
        fetcher.add_partition(
            PartitionFetchState(
                key=partition.key,
                name=partition.name,
                fetch_offset=position.fetch_offset,
                last_fetched_epoch=position.last_fetched_epoch,
                log_start_offset=position.log_start_offset,
                current_leader_epoch=partition.leader_epoch,
            )
        )

    # -- the follower side ---------------------------------------------------------------

    def _apply_fetched(
        self, fetcher: ReplicaFetcher, fetched: FetchedPartition, now_ms: int, outbox: Outbox
    ) -> None:
        partition = self.partitions.get(fetched.key)
        if partition is None or partition.is_leader:
            fetcher.remove_partition(fetched.key)
            return
        answer = fetched.answer
        error = Errors.from_code(answer.error_code)
        if error == Errors.NONE:
            if not self._follow(partition, fetched, now_ms, outbox):
                fetcher.delay(fetched.key, now_ms)
                return
        elif error == Errors.FENCED_LEADER_EPOCH and (
            fetched.requested.current_leader_epoch == partition.leader_epoch
        ):
            # the leader is in a newer epoch than our image: wait for the image
            fetcher.fail(fetched.key)
            return
        elif error == Errors.OFFSET_OUT_OF_RANGE and (
            0 <= fetched.requested.fetch_offset < answer.log_start_offset
        ):
            # the leader's log starts past ours (retention): start over where it starts
            partition.log.truncate_fully_and_start_at(answer.log_start_offset)
            partition.after_truncation()
        else:
            fetcher.delay(fetched.key, now_ms)
            return
        position = fetch_position(partition)
        fetcher.update_position(
            fetched.key,
            fetch_offset=position.fetch_offset,
            last_fetched_epoch=position.last_fetched_epoch,
            log_start_offset=position.log_start_offset,
        )

    def _follow(
        self, partition: Partition, fetched: FetchedPartition, now_ms: int, outbox: Outbox
    ) -> bool:
        """Apply one partition's records or divergence; False to back off."""
        answer = fetched.answer
        diverging = answer.diverging_epoch
        if diverging.epoch != -1 or diverging.end_offset != -1:
            # truncate now; the next fetch brings records and the high watermark
            truncate_to_diverging_epoch(
                partition, OffsetAndEpoch(diverging.end_offset, diverging.epoch)
            )
            outbox.touched.add(partition.key)
            return True
        if fetched.requested.fetch_offset != partition.log_end_offset:
            return True  # the log moved since the request: fetch again from its end
        outcome = apply_fetched(
            partition,
            records=answer.records,
            leader_high_watermark=answer.high_watermark,
            leader_log_start_offset=answer.log_start_offset,
            now_ms=now_ms,
        )
        if outcome.high_watermark_moved:
            outbox.moved(partition.key)
        return outcome.error is None

    # -- the output ----------------------------------------------------------------------

    def _finish(
        self, now_ms: int, outbox: Outbox, *, answers_left: bool = False
    ) -> ReplicaOutput:
        for key, change in outbox.isr_changes:
            partition = self.partitions.get(key)
            if partition is not None and not self.alter_partitions.submit(key, change):
                partition.abandon_isr_change()
        # set order, not sorted: sorting 100,000 keys per step cost more than the step
        watch = self._isr_watch
        if outbox.lagging:
            watch.update(dict.fromkeys(outbox.lagging))
        for key in outbox.touched:
            watch[key] = None  # the ISR check drops it if it is not led or all in sync
            self.producing.check(key, outbox)
            self.deleting.check(key, outbox)
            self.serving.check(key, now_ms, outbox)
        fetches = []
        for source, fetcher in sorted(self.fetchers.items()):
            built = fetcher.maybe_build_request(now_ms)
            if built is not None:
                fetches.append(OutboundFetch(source, built[0], built[1]))
        alter = self.alter_partitions.poll(now_ms, self.broker_epoch)
        return ReplicaOutput(
            fetches=tuple(fetches),
            alter_partition=None if alter is None else OutboundAlterPartition(*alter),
            produce_answers=tuple(outbox.produce_answers),
            fetch_answers=tuple(outbox.fetch_answers),
            delete_records_answers=tuple(outbox.delete_records_answers),
            high_watermarks_moved=tuple(outbox.high_watermarks_moved),
            next_deadline_ms=self._next_deadline_ms(now_ms),
            fetch_answers_left=tuple(self._applying) if answers_left else (),
        )

    def _next_deadline_ms(self, now_ms: int) -> int | None:
        deadlines = [
            self.producing.purgatory.next_deadline_ms(),
            self.deleting.purgatory.next_deadline_ms(),
            self.serving.purgatory.next_deadline_ms(),
            self.alter_partitions.next_deadline_ms(),
            *(fetcher.next_deadline_ms(now_ms) for fetcher in self.fetchers.values()),
            self._next_isr_check_ms,
            self._next_producer_expiration_ms,
        ]
        found = [d for d in deadlines if d is not None]
        return min(found) if found else None

    def __repr__(self) -> str:
        return f"ReplicaCore(broker {self.broker_id}, {len(self.partitions)} partitions)"
