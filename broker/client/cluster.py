"""What a client knows of the cluster, and when it must ask again (sans-I/O).

``ClusterView`` is an immutable picture built from Metadata responses:
brokers, the controller id, and per partition its leader, leader epoch,
replicas and ISR. ``MetadataTracker`` owns the current view and decides
when to refresh it, as Kafka's ``Metadata`` class does:

* a topic the client needs is missing or has a partition without a leader;
* an answer carried an error that means the view is stale
  (``STALE_METADATA_ERRORS``: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
  UNKNOWN_LEADER_EPOCH, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION...)
  or a connection to a leader broke;
* ``metadata.max.age.ms`` passed since the last refresh.

Refreshes that are needed again at once wait ``retry.backoff.ms`` after the
previous attempt, so a topic that does not exist yet is not asked about in
a busy loop. A partition whose answer carries a smaller leader epoch than
one already seen is kept as it was (KIP-320): a broker that lags behind the
controller must not move a client back to an old leader.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
)
from quorum.wire.uuids import ZERO_UUID

__all__ = [
    "STALE_METADATA_ERRORS",
    "BrokerInfo",
    "ClusterView",
    "MetadataTracker",
    "PartitionInfo",
    "TopicInfo",
    "cluster_view_from_metadata",
]

NO_LEADER: Final = -1

STALE_METADATA_ERRORS: Final = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.REPLICA_NOT_AVAILABLE,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.OFFSET_NOT_AVAILABLE,
        Errors.NOT_CONTROLLER,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.NETWORK_EXCEPTION,
    }
)


@attrs.frozen
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@attrs.frozen(kw_only=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: Errors = Errors.NONE

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@attrs.frozen(kw_only=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID = ZERO_UUID
    is_internal: bool = False
    # ordered by partition index
    partitions: tuple[PartitionInfo, ...] = ()
    error: Errors = Errors.NONE


@attrs.frozen(kw_only=True)
class ClusterView:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: Mapping[int, BrokerInfo] = attrs.field(factory=dict)
    # topics the last answers described without a topic-level error
    topics: Mapping[str, TopicInfo] = attrs.field(factory=dict)
    # topics the last answers refused, with the error (UNKNOWN_TOPIC_OR_PARTITION...)
    topic_errors: Mapping[str, Errors] = attrs.field(factory=dict)

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        topic = self.topics.get(tp.topic)
        if topic is None:
            return None
        parts = topic.partitions
        if 0 <= tp.partition < len(parts) and parts[tp.partition].partition == tp.partition:
            return parts[tp.partition]  # the usual case: every index present, in order
        return next((p for p in parts if p.partition == tp.partition), None)

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        return None if info is None else len(info.partitions)

    def leader_of(self, tp: TopicPartition) -> BrokerInfo | None:
        """The partition's leader, if known and among the brokers of the answer."""
        partition = self.partition(tp)
        if partition is None or partition.leader == NO_LEADER:
            return None
        return self.brokers.get(partition.leader)

    def leader_epoch_of(self, tp: TopicPartition) -> int:
        partition = self.partition(tp)
        return -1 if partition is None else partition.leader_epoch

    def available_partitions(self, topic: str) -> tuple[int, ...]:
        """Partitions of ``topic`` whose leader is a known broker."""
        info = self.topics.get(topic)
        if info is None:
            return ()
        return tuple(
            p.partition for p in info.partitions
            if p.leader != NO_LEADER and p.leader in self.brokers
        )

    def is_complete_for(self, topic: str) -> bool:
        """Whether every partition of ``topic`` has a known leader."""
        info = self.topics.get(topic)
        return info is not None and len(self.available_partitions(topic)) == len(info.partitions)


def _partition(topic: str, raw: MetadataResponsePartition) -> PartitionInfo:
    return PartitionInfo(
        topic=topic,
        partition=raw.partition_index,
        leader=raw.leader_id,
        leader_epoch=raw.leader_epoch,
        replicas=tuple(raw.replica_nodes),
        isr=tuple(raw.isr_nodes),
        offline_replicas=tuple(raw.offline_replicas),
        error=Errors.from_code(raw.error_code),
    )


def cluster_view_from_metadata(response: MetadataResponse) -> ClusterView:
    """The view one Metadata answer gives (topics it does not mention are absent)."""
    topics: dict[str, TopicInfo] = {}
    errors: dict[str, Errors] = {}
    for raw in response.topics:
        name = raw.name or ""
        error = Errors.from_code(raw.error_code)
        if error is not Errors.NONE:
            errors[name] = error
            continue
        partitions = sorted((_partition(name, p) for p in raw.partitions),
                            key=lambda p: p.partition)
        topics[name] = TopicInfo(
            name=name, topic_id=raw.topic_id, is_internal=raw.is_internal,
            partitions=tuple(partitions),
        )
    return ClusterView(
        cluster_id=response.cluster_id,
        controller_id=response.controller_id,
        brokers={b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in response.brokers},
        topics=topics,
        topic_errors=errors,
    )


def _keep_newer_epochs(old: TopicInfo, new: TopicInfo) -> TopicInfo:
    """``new``, except partitions whose leader epoch went back: those stay as they were."""
    if len(old.partitions) > len(new.partitions) or old.topic_id != new.topic_id:
        return new  # recreated or an older picture of the topic: nothing to compare
    before = {p.partition: p for p in old.partitions}
    merged = tuple(
        before[p.partition]
        if p.partition in before and 0 <= p.leader_epoch < before[p.partition].leader_epoch
        else p
        for p in new.partitions
    )
    return attrs.evolve(new, partitions=merged)


class MetadataTracker:
    """The current ClusterView and the decision when to refresh it (one owner)."""

    def __init__(
        self,
        *,
        metadata_max_age_ms: int,
        retry_backoff_ms: int,
        all_topics: bool = False,
        allow_auto_topic_creation: bool = True,
    ) -> None:
        self.view = ClusterView()
        self._max_age_ms = metadata_max_age_ms
        self._backoff_ms = retry_backoff_ms
        self._all_topics = all_topics
        self._auto_create = allow_auto_topic_creation
        self._wanted: set[str] = set()
        self._update_requested = True  # the first answer is always needed
        self._last_success_ms: float | None = None
        self._last_attempt_ms: float | None = None
        # why the next refresh is due (the latest few, for logs and tests)
        self.reasons: deque[str] = deque(["no metadata yet"], maxlen=8)

    @property
    def wanted_topics(self) -> frozenset[str]:
        return frozenset(self._wanted)

    def add_topics(self, topics: Iterable[str]) -> None:
        """Topics this client needs; one it has never seen makes a refresh due."""
        for topic in topics:
            if topic not in self._wanted:
                self._wanted.add(topic)
                if topic not in self.view.topics:
                    self.request_update(f"topic {topic} is new to this client")

    def want_all_topics(self, wanted: bool) -> None:
        """Ask for every topic (a consumer subscribed to a pattern) or only the wanted ones."""
        if wanted and not self._all_topics:
            self.request_update("subscribed to a pattern: every topic is needed")
        self._all_topics = wanted

    def retain_topics(self, topics: Iterable[str]) -> None:
        """Forget every wanted topic not in ``topics`` (the consumer's new assignment)."""
        self._wanted.intersection_update(topics)

    def request_update(self, reason: str) -> None:
        self._update_requested = True
        self.reasons.append(reason)

    def observe_error(self, error: Errors, where: str) -> bool:
        """Note an error from an answer; True if it makes a refresh due."""
        if error in STALE_METADATA_ERRORS:
            self.request_update(f"{error.name} from {where}")
            return True
        return False

    def _incomplete(self) -> bool:
        return any(not self.view.is_complete_for(topic) for topic in self._wanted)

    def time_to_update_ms(self, now_ms: float) -> float:
        """How long until a refresh is due (0: now)."""
        if self._update_requested or self._incomplete():
            if self._last_attempt_ms is None:
                return 0.0
            return max(0.0, self._last_attempt_ms + self._backoff_ms - now_ms)
        assert self._last_success_ms is not None, "no request pending means one answer came"
        return max(0.0, self._last_success_ms + self._max_age_ms - now_ms)

    def needs_update(self, now_ms: float) -> bool:
        return self.time_to_update_ms(now_ms) == 0.0

    def metadata_request(self) -> MetadataRequest:
        """What to ask: every topic (admin), or the wanted ones (none: just brokers)."""
        topics = None if self._all_topics else tuple(
            MetadataRequestTopic(name=name) for name in sorted(self._wanted)
        )
        return MetadataRequest(topics=topics, allow_auto_topic_creation=self._auto_create)

    def attempted(self, now_ms: float) -> None:
        """A refresh was sent (successful or not, the next waits the backoff)."""
        self._last_attempt_ms = now_ms

    def update(self, response: MetadataResponse, now_ms: float) -> ClusterView:
        """Fold one answer into the view; returns the new view."""
        fresh = cluster_view_from_metadata(response)
        old = self.view
        if self._all_topics:
            topics = dict(fresh.topics)
        else:
            topics = {name: info for name, info in old.topics.items() if name in self._wanted}
            for name in fresh.topic_errors:
                topics.pop(name, None)
        for name, info in fresh.topics.items():
            previous = old.topics.get(name)
            topics[name] = info if previous is None else _keep_newer_epochs(previous, info)
        self.view = ClusterView(
            cluster_id=fresh.cluster_id,
            controller_id=fresh.controller_id,
            brokers=fresh.brokers or old.brokers,
            topics=topics,
            topic_errors=fresh.topic_errors,
        )
        self._last_attempt_ms = now_ms
        self._last_success_ms = now_ms
        self._update_requested = False
        self.reasons.clear()
        return self.view
