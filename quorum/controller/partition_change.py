"""Leader and ISR changes of one partition as a PartitionChangeRecord.

``build_partition_change`` is the one place that decides a partition's next
leader (the facts are Kafka's PartitionChangeBuilder without eligible leader
replicas, at a metadata.version >= 3.6, so an ISR shrink alone does not bump
the leader epoch):

- A reassignment completes first when the target ISR allows it
  (``complete_reassignment``).
- Election: a *valid* leader is in the target ISR and acceptable (usually:
  an active broker). PREFERRED takes replicas[0] if valid, else keeps a valid
  current leader, else the first valid replica. ONLINE keeps a valid current
  leader, else the first valid replica in replica order. UNCLEAN is ONLINE,
  then, if nobody is valid, the first acceptable replica outside the ISR: the
  ISR becomes [that replica] and the leader recovery state RECOVERING
  (KIP-704). No election finds nobody: the leader becomes -1 (offline).
- A leader is never chosen outside the target ISR except by UNCLEAN.
- An empty target ISR is never written (Kafka without ELR): the last ISR
  member stays in the ISR while the partition has no leader.
- A replica set that drops a replica bumps the leader epoch (leader field set
  to the current leader) so the dropped replica's fetches are fenced.

Returns None when nothing would change.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Sequence

from quorum.controller.delta import NO_LEADER_CHANGE
from quorum.controller.image import (
    NO_LEADER,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from quorum.controller.topic_configs import unclean_election_enabled
from quorum.wire.messages.metadata_records import PartitionChangeRecord

__all__ = [
    "Election",
    "PartitionEntry",
    "PartitionExaminer",
    "broker_removal_examiner",
    "broker_unfence_examiner",
    "build_partition_change",
    "changes_for_broker_removal",
    "changes_for_broker_unfence",
    "complete_reassignment",
    "examine_all",
    "is_no_op",
]

Acceptable = Callable[[int], bool]


class Election(enum.Enum):
    PREFERRED = "preferred"
    ONLINE = "online"
    UNCLEAN = "unclean"


def is_no_op(record: PartitionChangeRecord) -> bool:
    return (
        record.isr is None
        and record.leader == NO_LEADER_CHANGE
        and record.replicas is None
        and record.removing_replicas is None
        and record.adding_replicas is None
        and record.leader_recovery_state == -1
    )


def complete_reassignment(
    replicas: Sequence[int],
    removing: Sequence[int],
    adding: Sequence[int],
    isr: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(replicas, isr) once the reassignment is done, or None while it is not.

    Kafka's PartitionReassignmentReplicas: during a move the replica list is
    target + removing; it is done when the ISR without the removed replicas
    is non-empty and holds every target replica (so every adding replica has
    caught up). Then the removed replicas leave both lists.
    """
    if not removing and not adding:
        return None
    gone = set(removing)
    new_isr = tuple(r for r in isr if r not in gone)
    new_replicas = tuple(r for r in replicas if r not in gone)
    if not new_isr or not new_replicas or not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr


def _elect(
    partition: PartitionRegistration,
    replicas: Sequence[int],
    isr: Sequence[int],
    acceptable: Acceptable,
    election: Election,
) -> tuple[int, bool]:
    """(leader, unclean) for the targets; NO_LEADER when nobody may lead."""

    def valid(replica: int) -> bool:
        return replica in isr and acceptable(replica)

    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if valid(partition.leader):
        return partition.leader, False
    found = next((r for r in replicas if valid(r)), None)
    if found is not None:
        return found, False
    if election is Election.UNCLEAN:
        found = next((r for r in replicas if acceptable(r)), None)
        if found is not None:
            return found, True
    return NO_LEADER, False


def build_partition_change(
    partition: PartitionRegistration,
    *,
    topic_id: uuid.UUID,
    partition_id: int,
    acceptable: Acceptable,
    election: Election = Election.ONLINE,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    recovery_state: LeaderRecoveryState | None = None,
) -> PartitionChangeRecord | None:
    """The record that moves ``partition`` to the targets (None: no change).

    Targets left as None keep the partition's current value.
    """
    t_isr = tuple(partition.isr if isr is None else isr)
    t_replicas = tuple(partition.replicas if replicas is None else replicas)
    t_removing = tuple(partition.removing_replicas if removing is None else removing)
    t_adding = tuple(partition.adding_replicas if adding is None else adding)
    completed = complete_reassignment(t_replicas, t_removing, t_adding, t_isr)
    if completed is not None:
        t_replicas, t_isr = completed
        t_removing, t_adding = (), ()

    new_leader, unclean = _elect(partition, t_replicas, t_isr, acceptable, election)
    leader = NO_LEADER_CHANGE if new_leader == partition.leader else new_leader
    record_isr: tuple[int, ...] | None = None
    recovery = -1
    if unclean:
        # data written only to the old ISR may be lost: the new leader's log wins
        # (it may be the current leader, when the target ISR left it out)
        record_isr = (new_leader,)
        if partition.leader_recovery_state != LeaderRecoveryState.RECOVERING:
            recovery = LeaderRecoveryState.RECOVERING
    if leader == NO_LEADER_CHANGE and not set(partition.replicas) <= set(t_replicas):
        leader = partition.leader  # fence the dropped replicas with a new leader epoch
    if record_isr is None and t_isr and t_isr != partition.isr:
        record_isr = t_isr
    target_recovery = partition.leader_recovery_state if recovery_state is None else recovery_state
    if recovery == -1 and target_recovery != partition.leader_recovery_state:
        recovery = target_recovery
    record = PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=record_isr,
        leader=leader,
        replicas=t_replicas if t_replicas and t_replicas != partition.replicas else None,
        removing_replicas=None if t_removing == partition.removing_replicas else t_removing,
        adding_replicas=None if t_adding == partition.adding_replicas else t_adding,
        leader_recovery_state=int(recovery),
    )
    return None if is_no_op(record) else record


def _election_for(image: MetadataImage, topic: str, unclean_default: bool) -> Election:
    if unclean_election_enabled(image, topic, unclean_default):
        return Election.UNCLEAN
    return Election.ONLINE


PartitionEntry = tuple[TopicImage, int, PartitionRegistration]
# one partition examined -> its change record, if it needs one (sliced scans use these)
PartitionExaminer = Callable[[PartitionEntry], PartitionChangeRecord | None]


def broker_removal_examiner(
    image: MetadataImage, broker_id: int, *, unclean_default: bool = False
) -> PartitionExaminer:
    """The change that takes ``broker_id`` out of one partition's ISR and leadership.

    For a broker being fenced, entering controlled shutdown or unregistering
    (the image may or may not show that yet). Each partition it leads gets the
    first acceptable ISR replica in replica order; acceptable = active and not
    ``broker_id``. As the last ISR member it stays in the ISR and the
    partition goes offline (leader -1), unless the topic allows unclean
    election (``unclean_default`` = the controller's static setting), as Kafka.
    """

    def acceptable(replica: int) -> bool:
        broker = image.broker(replica)
        return replica != broker_id and broker is not None and broker.is_active

    def examine(entry: PartitionEntry) -> PartitionChangeRecord | None:
        topic, index, partition = entry
        if broker_id not in partition.isr:
            return None
        return build_partition_change(
            partition,
            topic_id=topic.topic_id,
            partition_id=index,
            acceptable=acceptable,
            election=_election_for(image, topic.name, unclean_default),
            isr=[r for r in partition.isr if r != broker_id],
        )

    return examine


def broker_unfence_examiner(
    image: MetadataImage, broker_id: int, *, unclean_default: bool = False
) -> PartitionExaminer:
    """The change that gives one leaderless partition a leader once ``broker_id`` is active.

    Kafka runs the election over every leaderless partition with the unfenced
    broker acceptable: usually it becomes the leader where it is in the ISR.
    """

    def acceptable(replica: int) -> bool:
        broker = image.broker(replica)
        return replica == broker_id or (broker is not None and broker.is_active)

    def examine(entry: PartitionEntry) -> PartitionChangeRecord | None:
        topic, index, partition = entry
        if partition.has_leader:
            return None
        return build_partition_change(
            partition,
            topic_id=topic.topic_id,
            partition_id=index,
            acceptable=acceptable,
            election=_election_for(image, topic.name, unclean_default),
        )

    return examine


def examine_all(image: MetadataImage, examine: PartitionExaminer) -> list[PartitionChangeRecord]:
    """Every partition of ``image`` examined at once (small images, tests)."""
    return [r for entry in image.iter_partitions() if (r := examine(entry)) is not None]


def changes_for_broker_removal(
    image: MetadataImage, broker_id: int, *, unclean_default: bool = False
) -> list[PartitionChangeRecord]:
    """Every record ``broker_removal_examiner`` finds in ``image``."""
    return examine_all(
        image, broker_removal_examiner(image, broker_id, unclean_default=unclean_default)
    )


def changes_for_broker_unfence(
    image: MetadataImage, broker_id: int, *, unclean_default: bool = False
) -> list[PartitionChangeRecord]:
    """Every record ``broker_unfence_examiner`` finds in ``image``."""
    return examine_all(
        image, broker_unfence_examiner(image, broker_id, unclean_default=unclean_default)
    )
