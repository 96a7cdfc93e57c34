"""AlterPartitionReassignments and ListPartitionReassignments.

A reassignment (Kafka's PartitionReassignmentReplicas) moves a partition
from its current replicas to a target list in up to two records:

1. start: replicas = target + removing (the current replicas not in the
   target, sorted), adding = target replicas not yet replicas (sorted),
   removing = current replicas not in the target;
2. finish, once the ISR without the removing replicas is non-empty and holds
   every target replica: replicas = target, ISR minus the removing replicas,
   adding and removing cleared, a new leader if the leader was removed, and a
   leader epoch bump (dropped replicas are fenced).

Step 2 happens in AlterPartition when the leader reports the grown ISR
(``partition_change.build_partition_change`` completes it), or at once when
the ISR already qualifies (a reordering of the same replicas).

A new target while a reassignment runs is computed against the replica list
of the moment (target + removing), as in Kafka; unlike Kafka, adding and
removing are always replaced by the new target's, so a new target equal to
the current list ends the reassignment instead of resuming the old one.

Cancel (replicas null, Kafka's PartitionReassignmentRevert): the replicas
being added leave the replica list and the ISR; if that would empty the ISR,
the first original replica becomes the ISR, which is an unclean election and
is refused (INVALID_REPLICA_ASSIGNMENT) unless the topic allows unclean
elections.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from quorum.controller.delta import merge_partition_change
from quorum.controller.image import MetadataImage, PartitionRegistration, TopicImage
from quorum.controller.partition_change import Election, build_partition_change
from quorum.controller.rejections import Rejected
from quorum.controller.replica_assignment import assignment_problem
from quorum.controller.results import ControllerContext, ControllerResult
from quorum.controller.topic_configs import unclean_election_enabled
from quorum.wire.error_codes import Errors
from quorum.wire.messages.metadata_records import PartitionChangeRecord
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseReassignablePartition,
    AlterPartitionReassignmentsResponseReassignableTopic,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponseOngoingPartitionReassignment,
    ListPartitionReassignmentsResponseOngoingTopicReassignment,
)

__all__ = [
    "alter_partition_reassignments",
    "list_partition_reassignments",
    "reassignment_targets",
]


def reassignment_targets(
    current: tuple[int, ...], target: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas during the move, adding, removing) from current to target."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return target + removing, adding, removing


def _acceptable(image: MetadataImage) -> Callable[[int], bool]:
    def acceptable(replica: int) -> bool:
        broker = image.broker(replica)
        return broker is not None and broker.is_active

    return acceptable


def _unclean(image: MetadataImage, topic: str, ctx: ControllerContext) -> bool:
    return unclean_election_enabled(image, topic, ctx.config.unclean_leader_election_enable)


def _election(image: MetadataImage, topic: str, ctx: ControllerContext) -> Election:
    return Election.UNCLEAN if _unclean(image, topic, ctx) else Election.ONLINE


def _change(
    image: MetadataImage,
    topic: TopicImage,
    index: int,
    current: PartitionRegistration,
    target: tuple[int, ...],
    ctx: ControllerContext,
) -> PartitionChangeRecord | None:
    problem = assignment_problem(image, target, None)
    if problem is not None:
        raise Rejected(Errors.INVALID_REPLICA_ASSIGNMENT, problem)
    replicas, adding, removing = reassignment_targets(current.replicas, target)
    return build_partition_change(
        current, topic_id=topic.topic_id, partition_id=index,
        acceptable=_acceptable(image), election=_election(image, topic.name, ctx),
        replicas=replicas, adding=adding, removing=removing,
    )


def _cancel(
    image: MetadataImage,
    topic: TopicImage,
    index: int,
    current: PartitionRegistration,
    ctx: ControllerContext,
) -> PartitionChangeRecord | None:
    if not current.is_reassigning:
        raise Rejected(
            Errors.NO_REASSIGNMENT_IN_PROGRESS,
            f"No partition reassignment is in progress for {topic.name}-{index}.",
        )
    adding = set(current.adding_replicas)
    original = tuple(r for r in current.replicas if r not in adding)
    isr = tuple(r for r in current.isr if r not in adding)
    if not isr:
        if not _unclean(image, topic.name, ctx):
            raise Rejected(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {topic.name}-{index} because it "
                "would require an unclean leader election.",
            )
        isr = original[:1]
    return build_partition_change(
        current, topic_id=topic.topic_id, partition_id=index,
        acceptable=_acceptable(image), election=_election(image, topic.name, ctx),
        isr=isr, replicas=original, adding=(), removing=(),
    )


def alter_partition_reassignments(
    image: MetadataImage,
    request: AlterPartitionReassignmentsRequest,
    version: int,
    ctx: ControllerContext,
) -> ControllerResult[AlterPartitionReassignmentsResponse]:
    records: list[PartitionChangeRecord] = []
    changed: dict[tuple[uuid.UUID, int], PartitionRegistration] = {}
    responses = []
    for entry in request.topics:
        topic = image.topic(entry.name)
        answers = []
        for part in entry.partitions:
            error, message = Errors.NONE, None
            try:
                current = None if topic is None else changed.get(
                    (topic.topic_id, part.partition_index), topic.partition(part.partition_index)
                )
                if topic is None or current is None:
                    raise Rejected(
                        Errors.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Unable to find partition {entry.name}-{part.partition_index}.",
                    )
                if part.replicas is None:
                    record = _cancel(image, topic, part.partition_index, current, ctx)
                else:
                    record = _change(
                        image, topic, part.partition_index, current, part.replicas, ctx
                    )
                if record is not None:
                    records.append(record)
                    changed[(topic.topic_id, part.partition_index)] = merge_partition_change(
                        current, record
                    )
            except Rejected as rejected:
                error, message = rejected.error, rejected.message
            answers.append(AlterPartitionReassignmentsResponseReassignablePartition(
                partition_index=part.partition_index, error_code=error, error_message=message
            ))
        responses.append(AlterPartitionReassignmentsResponseReassignableTopic(
            name=entry.name, partitions=tuple(answers)
        ))
    response = AlterPartitionReassignmentsResponse(error_message=None, responses=tuple(responses))
    return ControllerResult(tuple(records), response)


def _ongoing(
    topic: TopicImage, indexes: tuple[int, ...] | None
) -> ListPartitionReassignmentsResponseOngoingTopicReassignment | None:
    wanted = sorted(topic.partitions) if indexes is None else indexes
    partitions = []
    for index in wanted:
        partition = topic.partition(index)
        if partition is None or not partition.is_reassigning:
            continue
        partitions.append(ListPartitionReassignmentsResponseOngoingPartitionReassignment(
            partition_index=index,
            replicas=partition.replicas,
            adding_replicas=partition.adding_replicas,
            removing_replicas=partition.removing_replicas,
        ))
    if not partitions:
        return None
    return ListPartitionReassignmentsResponseOngoingTopicReassignment(
        name=topic.name, partitions=tuple(partitions)
    )


def list_partition_reassignments(
    image: MetadataImage,
    request: ListPartitionReassignmentsRequest,
    version: int,
    ctx: ControllerContext,
) -> ControllerResult[ListPartitionReassignmentsResponse]:
    """Ongoing reassignments: all (topics null) or of the named partitions;
    unknown topics and partitions are left out, as in Kafka."""
    wanted: list[tuple[TopicImage, tuple[int, ...] | None]] = []
    if request.topics is None:
        wanted = [(t, None) for t in _topics_by_name(image)]
    else:
        for entry in request.topics:
            topic = image.topic(entry.name)
            if topic is not None:
                wanted.append((topic, entry.partition_indexes))
    found = [o for t, idx in wanted if (o := _ongoing(t, idx)) is not None]
    response = ListPartitionReassignmentsResponse(error_message=None, topics=tuple(found))
    return ControllerResult.answer(response)


def _topics_by_name(image: MetadataImage) -> list[TopicImage]:
    return [image.topics_by_id[image.topic_ids_by_name[n]] for n in sorted(image.topic_ids_by_name)]
