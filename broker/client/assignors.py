"""Partition assignors that the group leader runs (pure): ``range`` and ``roundrobin``.

An assignor takes the number of partitions of every subscribed topic and
each member's ``Subscription`` and returns each member's partitions. The
leader of a generation runs the assignor that every member named
(JoinGroup's chosen protocol) and sends the result through SyncGroup.
Kafka's algorithms, from apache/kafka ``RangeAssignor.java``,
``RoundRobinAssignor.java`` and ``AbstractPartitionAssignor.MemberInfo``:

* members are ordered static ones first (by ``group.instance.id``), then
  the others by member id, so a static member keeps its place across
  restarts;
* ``range``: per topic, the partitions in order cut into one range per
  subscribed member; the first ``partitions % members`` members get one
  extra (rack-aware matching is not done: pykraft's client sends no rack);
* ``roundrobin``: every partition of every subscribed topic (topics sorted)
  dealt in turn to the next member subscribed to its topic.

``cooperative-sticky`` lives in ``sticky_assignor``. Every assignor says
which rebalance protocols it supports: the consumer uses COOPERATIVE only
when every configured assignor supports it (Kafka's
``ConsumerCoordinator``), so the default ``range, cooperative-sticky`` is
EAGER.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, Protocol

from broker.client.consumer_protocol import Subscription
from broker.client.types import TopicPartition

__all__ = [
    "ASSIGNOR_NAMES",
    "Assignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "member_order",
]

Assignments = dict[str, list[TopicPartition]]


class RebalanceProtocol(enum.IntEnum):
    """Ordered as Kafka's: the group uses the highest every assignor supports."""

    EAGER = 0
    COOPERATIVE = 1


class Assignor(Protocol):
    @property
    def name(self) -> str:
        """What JoinGroup calls its protocol (``range``)."""

    @property
    def protocols(self) -> tuple[RebalanceProtocol, ...]:
        """The rebalance protocols it supports."""

    def user_data(self, generation: int) -> bytes | None:
        """What this member adds to its subscription for this assignor."""

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignments:
        """Each member's partitions; every member of ``subscriptions`` is a key."""


def member_order(member_id: str, subscription: Subscription) -> tuple[int, str]:
    """Kafka's ``MemberInfo.compareTo``: static members first, by instance id."""
    if subscription.group_instance_id is not None:
        return (0, subscription.group_instance_id)
    return (1, member_id)


def _sorted_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m]))


class RangeAssignor:
    name = "range"
    protocols = (RebalanceProtocol.EAGER,)

    def user_data(self, generation: int) -> bytes | None:
        return None

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignments:
        out: Assignments = {member: [] for member in subscriptions}
        ordered = _sorted_members(subscriptions)
        for topic, count in partitions_per_topic.items():
            members = [m for m in ordered if topic in subscriptions[m].topics]
            if not members or count <= 0:
                continue
            per_member, extra = divmod(count, len(members))
            start = 0
            for index, member in enumerate(members):
                length = per_member + (1 if index < extra else 0)
                out[member] += [TopicPartition(topic, p) for p in range(start, start + length)]
                start += length
        return out


class RoundRobinAssignor:
    name = "roundrobin"
    protocols = (RebalanceProtocol.EAGER,)

    def user_data(self, generation: int) -> bytes | None:
        return None

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignments:
        out: Assignments = {member: [] for member in subscriptions}
        ordered = _sorted_members(subscriptions)
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        turn = 0
        for topic in topics:
            for partition in range(partitions_per_topic.get(topic, 0)):
                # the next member in the circle subscribed to this topic (one exists: a
                # member named the topic)
                while topic not in subscriptions[ordered[turn % len(ordered)]].topics:
                    turn += 1
                out[ordered[turn % len(ordered)]].append(TopicPartition(topic, partition))
                turn += 1
        return out


# partition.assignment.strategy: Kafka's short names and class names of the built-in assignors
ASSIGNOR_NAMES: Final[Mapping[str, str]] = {
    "range": "range",
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "roundrobin": "roundrobin",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
