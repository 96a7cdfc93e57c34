"""Leader elections: the ElectLeaders API, preferred-leader rebalancing, the
unclean-election scan, and the list of offline partitions.

ElectLeaders (Kafka's ReplicationControlManager.electLeaders): election type
0 PREFERRED, 1 UNCLEAN; a null topic list means every partition, and then
partitions that need nothing are left out of the answer. Per partition:
UNKNOWN_TOPIC_OR_PARTITION; ELECTION_NOT_NEEDED (PREFERRED: the preferred
replica leads already; UNCLEAN: there is a leader); no record possible ->
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE.

An UNCLEAN ElectLeaders is an operator's explicit choice and runs whatever
the topic config says (kraft-facts 5.6); the automatic paths
(``unclean_leader_changes``, broker removal, AlterPartition) elect outside
the ISR only where ``unclean.leader.election.enable`` allows it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from quorum.controller.delta import merge_partition_change
from quorum.controller.image import MetadataImage, PartitionRegistration, TopicPartition
from quorum.controller.operations import SliceBudget, Steps, at_once
from quorum.controller.partition_change import (
    Election,
    PartitionEntry,
    PartitionExaminer,
    build_partition_change,
    examine_all,
)
from quorum.controller.partition_map import items_in_order
from quorum.controller.results import ControllerContext
from quorum.controller.topic_configs import unclean_election_enabled
from quorum.wire.error_codes import Errors
from quorum.wire.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from quorum.wire.messages.metadata_records import PartitionChangeRecord

__all__ = [
    "ELECTION_TYPES",
    "elect_leaders",
    "elect_leaders_steps",
    "offline_partitions",
    "preferred_leader_changes",
    "preferred_leader_examiner",
    "unclean_leader_changes",
    "unclean_leader_examiner",
]

ELECTION_TYPES: Final = {0: Election.PREFERRED, 1: Election.UNCLEAN}


def _active_in(image: MetadataImage) -> Callable[[int], bool]:
    def acceptable(replica: int) -> bool:
        broker = image.broker(replica)
        return broker is not None and broker.is_active

    return acceptable


def _elect_one(
    image: MetadataImage,
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    election: Election,
) -> tuple[Errors, PartitionChangeRecord | None]:
    if election is Election.PREFERRED and partition.leader == partition.preferred_leader:
        return Errors.ELECTION_NOT_NEEDED, None
    if election is Election.UNCLEAN and partition.has_leader:
        return Errors.ELECTION_NOT_NEEDED, None
    record = build_partition_change(
        partition, topic_id=topic_id, partition_id=index,
        acceptable=_active_in(image), election=election,
    )
    if record is not None:
        return Errors.NONE, record
    if election is Election.PREFERRED:
        return Errors.PREFERRED_LEADER_NOT_AVAILABLE, None
    return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, None


def _targets(
    image: MetadataImage, request: ElectLeadersRequest
) -> Iterator[tuple[str, Iterable[int], bool]]:
    """(topic, partitions, report ELECTION_NOT_NEEDED) in answer order."""
    if request.topic_partitions is None:
        for name in sorted(image.topic_ids_by_name):
            topic = image.topics_by_id[image.topic_ids_by_name[name]]
            # lazily, in index order: the scan takes them a slice at a time
            yield name, (index for index, _ in items_in_order(topic.partitions)), False
    else:
        for entry in request.topic_partitions:
            yield entry.topic, entry.partitions, True


def elect_leaders_steps(
    image: MetadataImage, request: ElectLeadersRequest, version: int, ctx: ControllerContext
) -> Steps[ElectLeadersResponse]:
    """ElectLeaders; over every partition (a null topic list) the scan runs in slices."""
    election = ELECTION_TYPES.get(request.election_type)
    if election is None:
        return ElectLeadersResponse(error_code=Errors.INVALID_REQUEST)
    records: list[PartitionChangeRecord] = []
    changed: dict[tuple[uuid.UUID, int], PartitionRegistration] = {}
    results = []
    budget = SliceBudget()
    for name, indexes, report_not_needed in _targets(image, request):
        topic = image.topic(name)
        answers = []
        for index in indexes:
            yield from budget.take()
            current = None if topic is None else changed.get(
                (topic.topic_id, index), topic.partition(index)
            )
            if topic is None or current is None:
                error, message = Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition {name}-{index}"
            else:
                error, record = _elect_one(image, topic.topic_id, index, current, election)
                message = None
                if record is not None:
                    records.append(record)
                    changed[(topic.topic_id, index)] = merge_partition_change(current, record)
            if error == Errors.ELECTION_NOT_NEEDED and not report_not_needed:
                continue
            answers.append(ElectLeadersResponsePartitionResult(
                partition_id=index, error_code=error, error_message=message
            ))
        results.append(ElectLeadersResponseReplicaElectionResult(
            topic=name, partition_result=tuple(answers)
        ))
    yield from budget.emit(records)
    return ElectLeadersResponse(replica_election_results=tuple(results))


elect_leaders = at_once("ElectLeaders", elect_leaders_steps)


def preferred_leader_examiner(image: MetadataImage) -> PartitionExaminer:
    """auto.leader.rebalance for one partition: move leadership back to the preferred
    replica where it is active and in the ISR but does not lead."""
    acceptable = _active_in(image)

    def examine(entry: PartitionEntry) -> PartitionChangeRecord | None:
        topic, index, partition = entry
        preferred = partition.preferred_leader
        if partition.leader == preferred or preferred not in partition.isr:
            return None
        if not acceptable(preferred):
            return None
        return build_partition_change(
            partition, topic_id=topic.topic_id, partition_id=index,
            acceptable=acceptable, election=Election.PREFERRED,
        )

    return examine


def preferred_leader_changes(image: MetadataImage) -> list[PartitionChangeRecord]:
    return examine_all(image, preferred_leader_examiner(image))


def unclean_leader_examiner(
    image: MetadataImage, *, unclean_default: bool = False
) -> PartitionExaminer:
    """A leader for one leaderless partition of a topic whose effective
    unclean.leader.election.enable is true (topic config, then the cluster-wide
    dynamic broker config, then ``unclean_default`` = the static setting)."""
    acceptable = _active_in(image)

    def examine(entry: PartitionEntry) -> PartitionChangeRecord | None:
        topic, index, partition = entry
        if partition.has_leader or not unclean_election_enabled(image, topic.name, unclean_default):
            return None
        return build_partition_change(
            partition, topic_id=topic.topic_id, partition_id=index,
            acceptable=acceptable, election=Election.UNCLEAN,
        )

    return examine


def unclean_leader_changes(
    image: MetadataImage, *, unclean_default: bool = False
) -> list[PartitionChangeRecord]:
    return examine_all(image, unclean_leader_examiner(image, unclean_default=unclean_default))


def offline_partitions(image: MetadataImage) -> list[TopicPartition]:
    """Partitions without a leader, by topic name then index."""
    return [
        TopicPartition(topic.name, index)
        for topic, index, partition in image.iter_partitions()
        if not partition.has_leader
    ]
