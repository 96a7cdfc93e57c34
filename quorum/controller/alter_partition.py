"""AlterPartition: a partition leader asks the controller to change its ISR.

Checks run in Kafka's order (kraft-facts 5.5), the first failure answers:
request broker epoch (whole request: STALE_BROKER_EPOCH); unknown topic
(UNKNOWN_TOPIC_ID for v2+, by id; UNKNOWN_TOPIC_OR_PARTITION for v0-1, by
name); unknown partition; a leader or partition epoch *greater* than ours
(NOT_CONTROLLER: we are probably a stale controller); a smaller leader epoch
(FENCED_LEADER_EPOCH); sender not the leader (INVALID_REQUEST); a smaller
partition epoch (INVALID_UPDATE_VERSION); an ISR not within the replicas or
without the leader (INVALID_REQUEST); RECOVERING with more than one ISR
member, or RECOVERED -> RECOVERING (INVALID_REQUEST); a new ISR member that
is unregistered, fenced, shutting down or of another broker epoch
(INELIGIBLE_REPLICA; OPERATION_NOT_ATTEMPTED for v0-1).

An accepted ISR change writes one PartitionChangeRecord whose leader is -2
(no change); replay bumps the partition epoch. When the new ISR completes a
reassignment the record also finishes it; if that moves leadership away from
the sender the answer is NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH for v0-1)
while the record is still written, as Kafka does. Later partitions of one
request see the changes made by earlier ones.

The partitions are examined in slices of at most ``MAX_UNITS_PER_SLICE``
(``quorum.controller.operations.SliceBudget``), then their records written (one
transaction when they span several slices).
"""

from __future__ import annotations

import uuid

from quorum.controller.delta import NO_LEADER_CHANGE, merge_partition_change
from quorum.controller.image import (
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from quorum.controller.operations import SliceBudget, Steps, at_once
from quorum.controller.partition_change import Election, build_partition_change
from quorum.controller.results import ControllerContext
from quorum.controller.topic_configs import unclean_election_enabled
from quorum.wire.error_codes import Errors
from quorum.wire.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartition,
    AlterPartitionRequestTopic,
    AlterPartitionResponse,
    AlterPartitionResponsePartition,
    AlterPartitionResponseTopic,
)
from quorum.wire.messages.metadata_records import PartitionChangeRecord
from quorum.wire.uuids import ZERO_UUID

__all__ = ["alter_partition", "alter_partition_steps", "requested_isr"]


def requested_isr(
    partition: AlterPartitionRequestPartition, version: int
) -> tuple[AlterPartitionRequestBrokerState, ...]:
    """The new ISR with broker epochs; v0-2 carry bare ids (epoch -1 = not checked)."""
    if version >= 3:
        return partition.new_isr_with_epochs
    return tuple(AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=-1)
                 for b in partition.new_isr)


def _ineligible(image: MetadataImage, isr: tuple[AlterPartitionRequestBrokerState, ...]) -> bool:
    for state in isr:
        broker = image.broker(state.broker_id)
        if broker is None or broker.in_controlled_shutdown or broker.fenced:
            return True
        if state.broker_epoch != -1 and state.broker_epoch != broker.epoch:
            return True
    return False


def _validate(
    image: MetadataImage,
    sender: int,
    current: PartitionRegistration | None,
    data: AlterPartitionRequestPartition,
    version: int,
) -> Errors:
    if current is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if data.leader_epoch > current.leader_epoch or data.partition_epoch > current.partition_epoch:
        return Errors.NOT_CONTROLLER
    if data.leader_epoch < current.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if sender != current.leader:
        return Errors.INVALID_REQUEST
    if data.partition_epoch < current.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    isr = requested_isr(data, version)
    ids = [s.broker_id for s in isr]
    if len(set(ids)) != len(ids) or not set(ids) <= set(current.replicas):
        return Errors.INVALID_REQUEST
    if current.leader not in ids:
        return Errors.INVALID_REQUEST
    recovering = data.leader_recovery_state == LeaderRecoveryState.RECOVERING
    if data.leader_recovery_state not in (0, 1) or (recovering and len(ids) > 1):
        return Errors.INVALID_REQUEST
    if recovering and current.leader_recovery_state == LeaderRecoveryState.RECOVERED:
        return Errors.INVALID_REQUEST
    if _ineligible(image, isr):
        return Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED
    return Errors.NONE


def _find_topic(
    image: MetadataImage, data: AlterPartitionRequestTopic, version: int
) -> TopicImage | None:
    if version > 1:
        return None if data.topic_id == ZERO_UUID else image.topics_by_id.get(data.topic_id)
    return image.topic(data.topic_name)


def _answer(index: int, error: Errors) -> AlterPartitionResponsePartition:
    return AlterPartitionResponsePartition(partition_index=index, error_code=error)


def _change(
    image: MetadataImage,
    topic: TopicImage,
    current: PartitionRegistration,
    data: AlterPartitionRequestPartition,
    version: int,
    ctx: ControllerContext,
) -> PartitionChangeRecord | None:
    def acceptable(replica: int) -> bool:
        broker = image.broker(replica)
        return broker is not None and broker.is_active

    unclean = unclean_election_enabled(
        image, topic.name, ctx.config.unclean_leader_election_enable
    )
    return build_partition_change(
        current,
        topic_id=topic.topic_id,
        partition_id=data.partition_index,
        acceptable=acceptable,
        election=Election.UNCLEAN if unclean else Election.ONLINE,
        isr=[s.broker_id for s in requested_isr(data, version)],
        recovery_state=LeaderRecoveryState(data.leader_recovery_state),
    )


def _answered(
    image: MetadataImage,
    request: AlterPartitionRequest,
    topic: TopicImage,
    part: AlterPartitionRequestPartition,
    version: int,
    ctx: ControllerContext,
    changed: dict[tuple[uuid.UUID, int], PartitionRegistration],
) -> tuple[AlterPartitionResponsePartition, PartitionChangeRecord | None]:
    """One partition's answer and record (None: no change); notes the change in ``changed``."""
    key = (topic.topic_id, part.partition_index)
    current = changed.get(key, topic.partition(part.partition_index))
    error = _validate(image, request.broker_id, current, part, version)
    if error != Errors.NONE or current is None:
        return _answer(part.partition_index, error), None
    record = _change(image, topic, current, part, version, ctx)
    if record is not None:
        current = changed[key] = merge_partition_change(current, record)
        if record.leader not in (NO_LEADER_CHANGE, request.broker_id):
            # completing a reassignment moved leadership: the sender must refetch
            error = Errors.NEW_LEADER_ELECTED if version > 1 else Errors.FENCED_LEADER_EPOCH
            return _answer(part.partition_index, error), record
    return AlterPartitionResponsePartition(
        partition_index=part.partition_index,
        error_code=Errors.NONE,
        leader_id=current.leader,
        leader_epoch=current.leader_epoch,
        isr=current.isr,
        leader_recovery_state=current.leader_recovery_state,
        partition_epoch=current.partition_epoch,
    ), record


def alter_partition_steps(
    image: MetadataImage, request: AlterPartitionRequest, version: int, ctx: ControllerContext
) -> Steps[AlterPartitionResponse]:
    """Examine each topic and partition (a unit each, paused as the budget runs out), then
    write the PartitionChangeRecords (a transaction when they span several slices)."""
    sender = image.broker(request.broker_id)
    if sender is None or sender.epoch != request.broker_epoch:
        return AlterPartitionResponse(error_code=Errors.STALE_BROKER_EPOCH)
    budget = SliceBudget()
    records: list[PartitionChangeRecord] = []
    # partitions changed earlier in this request: later entries validate against them
    changed: dict[tuple[uuid.UUID, int], PartitionRegistration] = {}
    topics = []
    for data in request.topics:
        yield from budget.take()
        topic = _find_topic(image, data, version)
        answers = []
        for part in data.partitions:
            yield from budget.take()
            if topic is None:
                error = Errors.UNKNOWN_TOPIC_ID if version > 1 else Errors.UNKNOWN_TOPIC_OR_PARTITION
                answers.append(_answer(part.partition_index, error))
                continue
            answer, record = _answered(image, request, topic, part, version, ctx, changed)
            answers.append(answer)
            if record is not None:
                records.append(record)
        topics.append(AlterPartitionResponseTopic(
            topic_name=data.topic_name, topic_id=data.topic_id, partitions=tuple(answers)
        ))
    yield from budget.emit(records)
    return AlterPartitionResponse(topics=tuple(topics))


alter_partition = at_once("AlterPartition", alter_partition_steps)
