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

AlterPartitionReassignments examines its partitions in slices of at most
``MAX_UNITS_PER_SLICE`` (``quorum.controller.operations.SliceBudget``), then
writes their records (one transaction when they span several slices).

ListPartitionReassignments with a null topic list examines every partition:
``list_partition_reassignments_steps`` scans them in slices
(``quorum.controller.operations.scan_in_slices``), so the active controller
serves fetches and heartbeats meanwhile; named partitions are bounded by the
request and answered in one slice.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable

from quorum.controller.delta import merge_partition_change
from quorum.controller.image import MetadataImage, PartitionRegistration, TopicImage
from quorum.controller.operations import (
    Operation,
    SliceBudget,
    Steps,
    at_once,
    run_to_end,
    scan_in_slices,
)
from quorum.controller.partition_change import Election, build_partition_change
from quorum.controller.rejections import Rejected
from quorum.controller.replica_assignment import assignment_problem
from quorum.controller.results import ControllerContext, ControllerResult
from quorum.controller.topic_configs import unclean_election_enabled
from quorum.wire.error_codes import Errors
from quorum.wire.messages.metadata_records import PartitionChangeRecord
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
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
    "alter_partition_reassignments_steps",
    "list_partition_reassignments",
    "list_partition_reassignments_steps",
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


def _reassigned(
    image: MetadataImage,
    topic: TopicImage | None,
    name: str,
    part: AlterPartitionReassignmentsRequestReassignablePartition,
    current: PartitionRegistration | None,
    ctx: ControllerContext,
) -> PartitionChangeRecord | None:
    """One partition's move or cancel (Rejected: why not)."""
    if topic is None or current is None:
        raise Rejected(
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {name}-{part.partition_index}.",
        )
    if part.replicas is None:
        return _cancel(image, topic, part.partition_index, current, ctx)
    return _change(image, topic, part.partition_index, current, part.replicas, ctx)


def alter_partition_reassignments_steps(
    image: MetadataImage,
    request: AlterPartitionReassignmentsRequest,
    version: int,
    ctx: ControllerContext,
) -> Steps[AlterPartitionReassignmentsResponse]:
    """Examine each topic and partition (a unit each, paused as the budget runs out), then
    write the PartitionChangeRecords (a transaction when they span several slices).
    A partition named again sees the change its earlier entry made."""
    budget = SliceBudget()
    records: list[PartitionChangeRecord] = []
    changed: dict[tuple[uuid.UUID, int], PartitionRegistration] = {}
    responses = []
    for entry in request.topics:
        yield from budget.take()
        topic = image.topic(entry.name)
        answers = []
        for part in entry.partitions:
            yield from budget.take()
            error, message, index = Errors.NONE, None, part.partition_index
            current = None
            if topic is not None:
                current = changed.get((topic.topic_id, index), topic.partition(index))
            try:
                record = _reassigned(image, topic, entry.name, part, current, ctx)
            except Rejected as rejected:
                error, message = rejected.error, rejected.message
            else:
                if record is not None:
                    assert topic is not None and current is not None
                    records.append(record)
                    changed[(topic.topic_id, index)] = merge_partition_change(current, record)
            answers.append(AlterPartitionReassignmentsResponseReassignablePartition(
                partition_index=part.partition_index, error_code=error, error_message=message
            ))
        responses.append(AlterPartitionReassignmentsResponseReassignableTopic(
            name=entry.name, partitions=tuple(answers)
        ))
    yield from budget.emit(records)
    return AlterPartitionReassignmentsResponse(error_message=None, responses=tuple(responses))


alter_partition_reassignments = at_once(
    "AlterPartitionReassignments", alter_partition_reassignments_steps
)


_Ongoing = ListPartitionReassignmentsResponseOngoingPartitionReassignment
_OngoingTopic = ListPartitionReassignmentsResponseOngoingTopicReassignment


def _ongoing_partition(index: int, partition: PartitionRegistration | None) -> _Ongoing | None:
    if partition is None or not partition.is_reassigning:
        return None
    return _ongoing(index, partition)


def _ongoing(index: int, partition: PartitionRegistration) -> _Ongoing:
    return _Ongoing(
        partition_index=index,
        replicas=partition.replicas,
        adding_replicas=partition.adding_replicas,
        removing_replicas=partition.removing_replicas,
    )


def _ongoing_in(
    item: tuple[TopicImage, int, PartitionRegistration],
) -> tuple[str, _Ongoing] | None:
    partition = item[2]
    # most partitions are not moving: the cheapest test first (this runs per partition)
    if not (partition.adding_replicas or partition.removing_replicas):
        return None
    return item[0].name, _ongoing(item[1], partition)


def _named_ongoing(
    image: MetadataImage, request: ListPartitionReassignmentsRequest
) -> list[_OngoingTopic]:
    found = []
    for entry in request.topics or ():
        topic = image.topic(entry.name)
        if topic is None:
            continue
        partitions = tuple(
            ongoing for index in entry.partition_indexes
            if (ongoing := _ongoing_partition(index, topic.partition(index))) is not None
        )
        if partitions:
            found.append(_OngoingTopic(name=topic.name, partitions=partitions))
    return found


def list_partition_reassignments_steps(
    image: MetadataImage,
    request: ListPartitionReassignmentsRequest,
    version: int,
    ctx: ControllerContext,
) -> Steps[ListPartitionReassignmentsResponse]:
    """_Ongoing reassignments: all (topics null, scanned in slices) or of the named
    partitions; unknown topics and partitions are left out, as in Kafka."""
    if request.topics is not None:
        found = _named_ongoing(image, request)
    else:
        # iter_partitions: topics by name, partitions by index, so each topic's come together
        every = yield from scan_in_slices(image.iter_partitions(), _ongoing_in)
        found = [
            _OngoingTopic(name=name, partitions=tuple(ongoing for _, ongoing in entries))
            for name, entries in itertools.groupby(every, key=lambda pair: pair[0])
        ]
    return ListPartitionReassignmentsResponse(error_message=None, topics=tuple(found))


def list_partition_reassignments(
    image: MetadataImage,
    request: ListPartitionReassignmentsRequest,
    version: int,
    ctx: ControllerContext,
) -> ControllerResult[ListPartitionReassignmentsResponse]:
    """``list_partition_reassignments_steps`` at once (tests, tools)."""
    steps = list_partition_reassignments_steps(image, request, version, ctx)
    return run_to_end(Operation("ListPartitionReassignments", steps))
