"""What this broker hosts, from the metadata image: the interface the data plane fills in.

A broker hosts a replica of every partition whose replica list names it
(adding and removing replicas of a reassignment included: both lists are part
of ``replicas``). ``assignments_of(image, broker_id)`` lists them with what a
replica needs to act (leader, leader epoch, partition epoch, ISR, replicas,
and whether this broker leads). ``assignment_changes(old, new, broker_id)``
says what a new image changed for this broker: partitions it now hosts or
whose assignment moved (a new leader, epoch or ISR), and partitions it no
longer hosts (the topic was deleted or the replica moved away). It compares
only the topics the new image did not share with the old one: a delta copies
a topic's partition map only when one of its partitions changed.

A ``ReplicaManager`` receives each change with ``apply``: the broker's
``ReplicaDriver`` (``broker.replica.driver``) turns them into leader and
follower replicas, fetchers and log truncation. ``RecordingReplicaManager``
keeps the current table, which is what tests of the metadata path read.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from quorum.controller.image import MetadataImage, PartitionRegistration, TopicImage
from quorum.log.log_dir import PartitionKey  # one key class for the core and the log directory

__all__ = [
    "AssignmentChanges",
    "PartitionAssignment",
    "PartitionKey",
    "PartitionRole",
    "RecordingReplicaManager",
    "ReplicaManager",
    "assignment_changes",
    "assignment_of",
    "assignments_of",
]


class PartitionRole(enum.Enum):
    LEADER = "leader"
    FOLLOWER = "follower"


@attrs.frozen(kw_only=True)
class PartitionAssignment:
    topic: str
    topic_id: uuid.UUID
    partition: int
    leader: int  # -1: no leader
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    role: PartitionRole

    @property
    def key(self) -> PartitionKey:
        return PartitionKey(self.topic_id, self.partition)

    def __str__(self) -> str:
        return (
            f"{self.topic}-{self.partition} {self.role.value} (leader {self.leader}, "
            f"epoch {self.leader_epoch}, isr {list(self.isr)})"
        )


@attrs.frozen
class AssignmentChanges:
    """What one new image changed for one broker, in partition order."""

    # partitions the broker now hosts, or whose leader, epochs, ISR or replicas moved
    changed: tuple[PartitionAssignment, ...] = ()
    # partitions it hosted and no longer does (their last assignment)
    removed: tuple[PartitionAssignment, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)


class ReplicaManager(Protocol):
    def apply(
        self,
        changed: Sequence[PartitionAssignment],
        removed: Sequence[PartitionAssignment],
        image: MetadataImage,
    ) -> None:
        """Act on part of ``image``'s changes (called in the task that owns the Raft core:
        no waiting). One image's changes may come in several calls, each with that image."""
        ...


def _assignment(
    topic: TopicImage, index: int, partition: PartitionRegistration, broker_id: int
) -> PartitionAssignment:
    return PartitionAssignment(
        topic=topic.name,
        topic_id=topic.topic_id,
        partition=index,
        leader=partition.leader,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
        isr=partition.isr,
        replicas=partition.replicas,
        role=PartitionRole.LEADER if partition.leader == broker_id else PartitionRole.FOLLOWER,
    )


def assignment_of(
    topic: TopicImage, index: int, partition: PartitionRegistration, broker_id: int
) -> PartitionAssignment | None:
    """What ``broker_id`` hosts of one partition (None: it holds no replica of it)."""
    if broker_id not in partition.replicas:
        return None
    return _assignment(topic, index, partition, broker_id)


def _topic_assignments(
    topic: TopicImage, broker_id: int
) -> dict[PartitionKey, PartitionAssignment]:
    return {
        PartitionKey(topic.topic_id, index): _assignment(topic, index, partition, broker_id)
        for index, partition in topic.partitions.items()
        if broker_id in partition.replicas
    }


def assignments_of(image: MetadataImage, broker_id: int) -> dict[PartitionKey, PartitionAssignment]:
    """Every partition ``broker_id`` hosts in ``image``."""
    table: dict[PartitionKey, PartitionAssignment] = {}
    for topic in image.topics_by_id.values():
        table.update(_topic_assignments(topic, broker_id))
    return table


def assignment_changes(
    old_image: MetadataImage, new_image: MetadataImage, broker_id: int
) -> AssignmentChanges:
    """What ``new_image`` changed for ``broker_id`` compared with ``old_image``."""
    old_topics, new_topics = old_image.topics_by_id, new_image.topics_by_id
    changed: list[PartitionAssignment] = []
    removed: list[PartitionAssignment] = []
    for topic_id in old_topics.keys() | new_topics.keys():
        old_topic, new_topic = old_topics.get(topic_id), new_topics.get(topic_id)
        if old_topic is new_topic:
            continue  # shared by both images: nothing in it changed
        before = {} if old_topic is None else _topic_assignments(old_topic, broker_id)
        after = {} if new_topic is None else _topic_assignments(new_topic, broker_id)
        changed += [a for key, a in after.items() if before.get(key) != a]
        removed += [a for key, a in before.items() if key not in after]
    return AssignmentChanges(tuple(sorted(changed, key=_order)), tuple(sorted(removed, key=_order)))


def _order(assignment: PartitionAssignment) -> tuple[str, int, uuid.UUID]:
    return assignment.topic, assignment.partition, assignment.topic_id


class RecordingReplicaManager:
    """Keeps the current assignment table and every change it was given."""

    def __init__(self) -> None:
        self._table: dict[PartitionKey, PartitionAssignment] = {}
        self.history: list[AssignmentChanges] = []

    @property
    def table(self) -> Mapping[PartitionKey, PartitionAssignment]:
        return self._table

    def apply(
        self,
        changed: Sequence[PartitionAssignment],
        removed: Sequence[PartitionAssignment],
        image: MetadataImage | None = None,
    ) -> None:
        for assignment in removed:
            assert self._table.pop(assignment.key, None) is not None, (
                f"{assignment} was removed but never assigned"
            )
        for assignment in changed:
            self._table[assignment.key] = assignment
        self.history.append(AssignmentChanges(tuple(changed), tuple(removed)))

    def leaders(self) -> list[PartitionAssignment]:
        return self._with_role(PartitionRole.LEADER)

    def followers(self) -> list[PartitionAssignment]:
        return self._with_role(PartitionRole.FOLLOWER)

    def _with_role(self, role: PartitionRole) -> list[PartitionAssignment]:
        return sorted((a for a in self._table.values() if a.role is role), key=_order)
