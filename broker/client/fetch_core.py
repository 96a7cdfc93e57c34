"""The consumer's fetch decisions (sans-I/O): which requests to send, what answers mean.

``FetchCore`` owns the ``Positions`` of the assigned partitions and the
fetched data not yet handed out. The trio shell asks it for plans, sends
them and gives the answers back:

* ``fetch_plans``: one FetchRequest per leader broker, covering its
  fetchable partitions that have no unread data and no fetch in flight
  (session id 0: a full fetch every time; ``current_leader_epoch`` from the
  metadata; isolation read_uncommitted);
* ``handle_fetch_response``: per partition, as Kafka's ``FetchCollector``:
  data becomes a ``CompletedFetch``; NOT_LEADER_OR_FOLLOWER,
  FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION and the like ask for a
  metadata refresh; OFFSET_OUT_OF_RANGE resets by ``auto.offset.reset``
  (``none``: an OffsetOutOfRangeError for the caller); CORRUPT_MESSAGE and
  unexpected errors are raised to the caller;
* ``reset_plans`` / ``handle_reset_response``: ListOffsets (earliest or
  latest) for partitions without a position;
* ``on_metadata``, ``validation_plans`` / ``handle_validation_results``:
  after a leader change, OffsetForLeaderEpoch (KIP-320) and truncation of
  the position when the log diverged below it.

Errors meant for the caller are kept and raised by ``raise_pending_error``
at the next poll, as Kafka's consumer raises them from ``poll``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from broker.client.cluster import ClusterView
from broker.client.errors import (
    KafkaError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    error_from_code,
)
from broker.client.fetch_records import CompletedFetch, FetchedBatch
from broker.client.positions import FetchPosition, Positions, Truncation
from broker.client.settings import ConsumerSettings, OffsetResetStrategy
from broker.client.types import ConsumerRecord, TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponsePartition,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
)

__all__ = [
    "CONSUMER_REPLICA_ID",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "EpochEndOffset",
    "FetchCore",
    "FetchPlan",
    "ResetPlan",
    "ValidationPlan",
    "list_offsets_request",
]

CONSUMER_REPLICA_ID: Final = -1
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
_TIMESTAMPS: Final = {
    OffsetResetStrategy.EARLIEST: EARLIEST_TIMESTAMP,
    OffsetResetStrategy.LATEST: LATEST_TIMESTAMP,
}
# errors after which the partition is fetched again once the metadata is fresh
_REFRESH: Final = frozenset({
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.REPLICA_NOT_AVAILABLE, Errors.KAFKA_STORAGE_ERROR,
    Errors.FENCED_LEADER_EPOCH, Errors.OFFSET_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.UNKNOWN_TOPIC_ID, Errors.INCONSISTENT_TOPIC_ID, Errors.LEADER_NOT_AVAILABLE,
})
# a reset or validation whose request is in flight is not planned again
_IN_FLIGHT: Final = float("inf")
# errors after which the partition is simply fetched again (Kafka logs them)
_RETRY: Final = frozenset({Errors.UNKNOWN_LEADER_EPOCH, Errors.UNKNOWN_SERVER_ERROR})


@attrs.frozen
class FetchPlan:
    node: int
    request: FetchRequest
    positions: Mapping[TopicPartition, FetchPosition]


@attrs.frozen
class ResetPlan:
    node: int
    request: ListOffsetsRequest
    strategies: Mapping[TopicPartition, OffsetResetStrategy]


@attrs.frozen
class ValidationPlan:
    """OffsetForLeaderEpoch to ``node``: for each partition, its position's epoch."""

    node: int
    positions: Mapping[TopicPartition, FetchPosition]


@attrs.frozen
class EpochEndOffset:
    """One partition of an OffsetForLeaderEpoch answer."""

    error: Errors
    leader_epoch: int
    end_offset: int


def _by_leader(
    view: ClusterView, tps: Iterable[TopicPartition]
) -> tuple[dict[int, list[TopicPartition]], bool]:
    """Partitions grouped by leader; True if some have no known leader."""
    grouped: dict[int, list[TopicPartition]] = {}
    leaderless = False
    for tp in tps:
        leader = view.leader_of(tp)
        if leader is None:
            leaderless = True
        else:
            grouped.setdefault(leader.node_id, []).append(tp)
    return grouped, leaderless


class FetchCore:
    def __init__(self, settings: ConsumerSettings) -> None:
        self.settings = settings
        self.positions = Positions(settings.auto_offset_reset)
        self._completed: deque[CompletedFetch] = deque()
        self._fetching: set[int] = set()
        self._pending_error: KafkaError | None = None
        # set when an answer says the metadata is stale; the shell clears it
        self.metadata_errors: list[tuple[Errors, TopicPartition]] = []

    # -- the caller's operations ---------------------------------------------------------

    def assign(self, tps: Iterable[TopicPartition]) -> None:
        self.positions.assign(tps)
        self._completed = deque(c for c in self._completed if self.positions.is_assigned(c.tp))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"seek offset must not be negative, not {offset}")
        self.positions.seek(tp, offset)
        self._drop_buffered([tp])

    def request_reset(self, tps: Iterable[TopicPartition], strategy: OffsetResetStrategy) -> None:
        tps = list(tps)
        self.positions.request_reset(tps, strategy)
        self._drop_buffered(tps)

    def _drop_buffered(self, tps: Iterable[TopicPartition]) -> None:
        gone = set(tps)
        self._completed = deque(c for c in self._completed if c.tp not in gone)

    def raise_pending_error(self) -> None:
        error, self._pending_error = self._pending_error, None
        if error is not None:
            raise error
        missing = self.positions.missing_positions()
        if missing:
            raise NoOffsetForPartitionError((tp.topic, tp.partition) for tp in missing)

    # -- fetching ------------------------------------------------------------------------

    def fetch_plans(self, view: ClusterView) -> tuple[list[FetchPlan], bool]:
        """Requests to send now; True if some partition waits for a leader."""
        buffered = {c.tp for c in self._completed}
        ready = dict(
            (tp, pos) for tp, pos in self.positions.fetchable() if tp not in buffered
        )
        grouped, leaderless = _by_leader(view, ready)
        plans = []
        for node, tps in grouped.items():
            if node in self._fetching:
                continue
            self._fetching.add(node)
            positions = {tp: ready[tp] for tp in tps}
            plans.append(FetchPlan(node, self._fetch_request(view, positions), positions))
        return plans, leaderless

    def _fetch_request(
        self, view: ClusterView, positions: Mapping[TopicPartition, FetchPosition]
    ) -> FetchRequest:
        settings = self.settings
        by_topic: dict[str, list[FetchRequestPartition]] = {}
        for tp, position in positions.items():
            by_topic.setdefault(tp.topic, []).append(FetchRequestPartition(
                partition=tp.partition,
                current_leader_epoch=view.leader_epoch_of(tp),
                fetch_offset=position.offset,
                last_fetched_epoch=-1,
                log_start_offset=-1,
                partition_max_bytes=settings.max_partition_fetch_bytes,
            ))
        return FetchRequest(
            replica_id=CONSUMER_REPLICA_ID,
            max_wait_ms=settings.fetch_max_wait_ms,
            min_bytes=settings.fetch_min_bytes,
            max_bytes=settings.fetch_max_bytes,
            isolation_level=int(settings.isolation_level),
            session_id=0,
            session_epoch=-1,
            topics=tuple(
                FetchRequestTopic(topic=topic, partitions=tuple(parts))
                for topic, parts in by_topic.items()
            ),
            rack_id=settings.client_rack,
        )

    def handle_fetch_response(self, plan: FetchPlan, response: FetchResponse) -> None:
        self._fetching.discard(plan.node)
        if response.error_code != Errors.NONE:
            self._fetch_failed(plan, Errors.from_code(response.error_code))
            return
        for topic in response.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                requested = plan.positions.get(tp)
                if requested is None:
                    continue  # not asked for: ignore, as Kafka does
                self._partition_answer(tp, requested, part)

    def _partition_answer(
        self, tp: TopicPartition, requested: FetchPosition, part: FetchResponsePartition
    ) -> None:
        current = (
            self.positions.position(tp) if self.positions.is_assigned(tp) else None
        )
        if current is None or current.offset != requested.offset:
            return  # a seek, a reset or a new assignment since the request: stale data
        error = Errors.from_code(part.error_code)
        if error is Errors.NONE:
            self.positions.update_log_bounds(
                tp, part.high_watermark, part.log_start_offset, part.last_stable_offset
            )
            if part.records:
                self._completed.append(CompletedFetch(
                    tp, requested.offset, part.records, check_crcs=self.settings.check_crcs
                ))
        elif error in _REFRESH:
            self.metadata_errors.append((error, tp))
        elif error is Errors.OFFSET_OUT_OF_RANGE:
            if self.positions.out_of_range(tp, requested.offset):
                self._keep_error(OffsetOutOfRangeError({(tp.topic, tp.partition): requested.offset}))
        elif error not in _RETRY:
            self._keep_error(error_from_code(error, None, context=f"fetch of {tp}"))

    def handle_fetch_failure(self, plan: FetchPlan, error: KafkaError) -> None:
        """The request got no answer (broken connection, timeout)."""
        self._fetching.discard(plan.node)
        self._fetch_failed(plan, error.error or Errors.NETWORK_EXCEPTION)

    def _fetch_failed(self, plan: FetchPlan, error: Errors) -> None:
        for tp in plan.positions:
            self.metadata_errors.append((error, tp))

    def _keep_error(self, error: KafkaError) -> None:
        if self._pending_error is None:
            self._pending_error = error

    def has_buffered(self) -> bool:
        return bool(self._completed)

    def poll_records(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` fetched records, positions moved past them."""
        return self._drain(max_records, lambda fetch, n: fetch.next_records(n))

    def poll_batches(self, max_records: int) -> list[FetchedBatch]:
        """Whole fetched batches holding up to about ``max_records`` records (at least one)."""
        return self._drain(max_records, lambda fetch, n: fetch.next_batches(n))

    def _drain(self, max_records: int, take: Callable[[CompletedFetch, int], list[Any]]) -> list[Any]:
        out: list[Any] = []
        while self._completed and len(out) < max_records:
            fetch = self._completed[0]
            position = self.positions.position(fetch.tp)
            if position is None or position.offset != fetch.next_offset:
                self._completed.popleft()  # the position moved meanwhile
                continue
            try:
                taken = take(fetch, max_records - len(out))
            except KafkaError:
                self._completed.popleft()
                raise
            if fetch.next_offset != position.offset:
                self.positions.advance(fetch.tp, fetch.next_offset, fetch.last_epoch)
            out += taken
            if fetch.exhausted:
                self._completed.popleft()
        return out

    # -- resets --------------------------------------------------------------------------

    def reset_plans(self, view: ClusterView, now_ms: float) -> tuple[list[ResetPlan], bool]:
        self.positions.missing_positions()
        wanted = self.positions.awaiting_reset(now_ms)
        grouped, leaderless = _by_leader(view, wanted)
        plans = []
        for node, tps in grouped.items():
            # in flight: not planned again until the answer (or a failure's backoff)
            self.positions.backoff(tps, _IN_FLIGHT)
            strategies = {tp: wanted[tp] for tp in tps}
            timestamps = {tp: _TIMESTAMPS[strategy] for tp, strategy in strategies.items()}
            request = list_offsets_request(view, timestamps, int(self.settings.isolation_level))
            plans.append(ResetPlan(node, request, strategies))
        return plans, leaderless

    def handle_reset_response(
        self, plan: ResetPlan, response: ListOffsetsResponse, view: ClusterView, now_ms: float
    ) -> None:
        answered: set[TopicPartition] = set()
        for topic in response.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                strategy = plan.strategies.get(tp)
                if strategy is None:
                    continue
                answered.add(tp)
                error = Errors.from_code(part.error_code)
                if error is Errors.NONE:
                    partition = view.partition(tp)
                    self.positions.complete_reset(
                        tp, strategy, part.offset, offset_epoch=part.leader_epoch,
                        leader=-1 if partition is None else partition.leader,
                        leader_epoch=-1 if partition is None else partition.leader_epoch,
                    )
                elif error.retriable:
                    self.metadata_errors.append((error, tp))
                    self.positions.backoff([tp], now_ms + self.settings.retry_backoff_ms)
                else:
                    self._keep_error(error_from_code(error, None, context=f"reset of {tp}"))
        missing = [tp for tp in plan.strategies if tp not in answered]
        self.positions.backoff(missing, now_ms + self.settings.retry_backoff_ms)

    def handle_reset_failure(self, plan: ResetPlan, error: KafkaError, now_ms: float) -> None:
        for tp in plan.strategies:
            self.metadata_errors.append((error.error or Errors.NETWORK_EXCEPTION, tp))
        self.positions.backoff(plan.strategies, now_ms + self.settings.retry_backoff_ms)

    # -- validation (KIP-320) ------------------------------------------------------------

    def on_metadata(self, view: ClusterView, can_validate: Callable[[int], bool]) -> None:
        """Metadata arrived: positions confirmed with an older leader await validation."""
        for tp in self.positions.assigned:
            partition = view.partition(tp)
            if partition is None or partition.leader < 0:
                continue
            self.positions.leader_changed(
                tp, partition.leader, partition.leader_epoch,
                can_validate=can_validate(partition.leader),
            )

    def validation_plans(self, view: ClusterView, now_ms: float) -> list[ValidationPlan]:
        wanted = self.positions.awaiting_validation(now_ms)
        grouped, _ = _by_leader(view, wanted)
        for tps in grouped.values():
            self.positions.backoff(tps, _IN_FLIGHT)
        return [ValidationPlan(node, {tp: wanted[tp] for tp in tps}) for node, tps in grouped.items()]

    def skip_validation(self, plan: ValidationPlan) -> None:
        """The leader has no OffsetForLeaderEpoch v3+: the positions stand (as in Kafka)."""
        for tp, requested in plan.positions.items():
            self.positions.skip_validation(tp, requested)

    def handle_validation_results(
        self, plan: ValidationPlan, results: Mapping[TopicPartition, EpochEndOffset], now_ms: float
    ) -> None:
        truncations: list[Truncation] = []
        retry: list[TopicPartition] = []
        for tp, requested in plan.positions.items():
            result = results.get(tp)
            if result is None or result.error is not Errors.NONE:
                if result is not None and result.error in _REFRESH:
                    self.metadata_errors.append((result.error, tp))
                retry.append(tp)
                continue
            truncation = self.positions.complete_validation(
                tp, requested, result.end_offset, result.leader_epoch
            )
            if truncation is not None:
                truncations.append(truncation)
        self.positions.backoff(retry, now_ms + self.settings.retry_backoff_ms)
        if truncations:
            self._keep_error(LogTruncationError({
                (t.tp.topic, t.tp.partition): t.divergent_offset for t in truncations
            }))

    def handle_validation_failure(self, plan: ValidationPlan, error: KafkaError, now_ms: float) -> None:
        for tp in plan.positions:
            self.metadata_errors.append((error.error or Errors.NETWORK_EXCEPTION, tp))
        self.positions.backoff(plan.positions, now_ms + self.settings.retry_backoff_ms)


def list_offsets_request(
    view: ClusterView, timestamps: Mapping[TopicPartition, int], isolation_level: int = 0
) -> ListOffsetsRequest:
    """ListOffsets for ``timestamps`` (-1 latest, -2 earliest, >= 0 by time), as a consumer."""
    by_topic: dict[str, list[ListOffsetsRequestPartition]] = {}
    for tp, timestamp in timestamps.items():
        by_topic.setdefault(tp.topic, []).append(ListOffsetsRequestPartition(
            partition_index=tp.partition,
            current_leader_epoch=view.leader_epoch_of(tp),
            timestamp=timestamp,
        ))
    return ListOffsetsRequest(
        replica_id=CONSUMER_REPLICA_ID,
        isolation_level=isolation_level,
        topics=tuple(
            ListOffsetsRequestTopic(name=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )
