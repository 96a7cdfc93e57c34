"""The one-step forms of five controller commands, as they were before they were sliced.

Each computes its whole result in one call. The tests of the sliced commands
(``test_sliced_requests``) check that a command run slice by slice answers and
writes exactly what these do on the same image and request. The per-item
helpers they call are the commands' own (unchanged by the slicing), except
IncrementalAlterConfigs' per-resource checks, whose slicing rewrote them: their
one-step form is kept here whole.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping

from quorum.controller.alter_partition import _answer, _find_topic
from quorum.controller.alter_partition import _change as _isr_change
from quorum.controller.alter_partition import _validate as _validate_isr
from quorum.controller.config_control import (
    _describe_one,
    _described,
    _new_value,
    _replication_factor,
    resource_problem,
)
from quorum.controller.delta import NO_LEADER_CHANGE, merge_partition_change
from quorum.controller.image import (
    ConfigResource,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
)
from quorum.controller.reassignments import _cancel
from quorum.controller.reassignments import _change as _reassignment_change
from quorum.controller.rejections import Rejected
from quorum.controller.results import ControllerContext, ControllerResult
from quorum.controller.topic_configs import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    check_topic_configs,
    validate_config_value,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartition,
    AlterPartitionResponseTopic,
)
from quorum.wire.messages.configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResponseResourceResult,
    DescribeConfigsResponseResult,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResource,
)
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    PartitionChangeRecord,
    RemoveTopicRecord,
)
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseReassignablePartition,
    AlterPartitionReassignmentsResponseReassignableTopic,
)
from quorum.wire.messages.topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseTopic,
)
from quorum.wire.metadata_serde import MetadataRecord

__all__ = [
    "alter_partition_in_one_step",
    "alter_partition_reassignments_in_one_step",
    "delete_topics_in_one_step",
    "describe_configs_in_one_step",
    "incremental_alter_configs_in_one_step",
]


def delete_topics_in_one_step(
    image: MetadataImage, request: DeleteTopicsRequest, version: int, ctx: ControllerContext
) -> ControllerResult[DeleteTopicsResponse]:
    counts = Counter(request.topic_names)
    records: list[MetadataRecord] = []
    results: dict[str, DeleteTopicsResponseTopic] = {}
    for name in request.topic_names:
        if name in results:
            continue
        error = Errors.NONE
        topic = image.topic(name)
        if counts[name] > 1:
            error = Errors.INVALID_REQUEST
        elif topic is None:
            error = Errors.UNKNOWN_TOPIC_OR_PARTITION
        else:
            records.append(RemoveTopicRecord(topic_id=topic.topic_id))
        results[name] = DeleteTopicsResponseTopic(name=name, error_code=error)
    return ControllerResult(tuple(records), DeleteTopicsResponse(responses=tuple(results.values())))


def alter_partition_reassignments_in_one_step(
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
                    record = _reassignment_change(
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


def alter_partition_in_one_step(
    image: MetadataImage, request: AlterPartitionRequest, version: int, ctx: ControllerContext
) -> ControllerResult[AlterPartitionResponse]:
    sender = image.broker(request.broker_id)
    if sender is None or sender.epoch != request.broker_epoch:
        return ControllerResult.answer(AlterPartitionResponse(error_code=Errors.STALE_BROKER_EPOCH))
    records: list[PartitionChangeRecord] = []
    changed: dict[tuple[uuid.UUID, int], PartitionRegistration] = {}
    topics = []
    for data in request.topics:
        topic = _find_topic(image, data, version)
        answers = []
        for part in data.partitions:
            if topic is None:
                error = Errors.UNKNOWN_TOPIC_ID if version > 1 else Errors.UNKNOWN_TOPIC_OR_PARTITION
                answers.append(_answer(part.partition_index, error))
                continue
            key = (topic.topic_id, part.partition_index)
            current = changed.get(key, topic.partition(part.partition_index))
            error = _validate_isr(image, request.broker_id, current, part, version)
            if error != Errors.NONE or current is None:
                answers.append(_answer(part.partition_index, error))
                continue
            record = _isr_change(image, topic, current, part, version, ctx)
            if record is not None:
                records.append(record)
                current = changed[key] = merge_partition_change(current, record)
                if record.leader not in (NO_LEADER_CHANGE, request.broker_id):
                    error = Errors.NEW_LEADER_ELECTED if version > 1 else Errors.FENCED_LEADER_EPOCH
                    answers.append(_answer(part.partition_index, error))
                    continue
            answers.append(AlterPartitionResponsePartition(
                partition_index=part.partition_index,
                error_code=Errors.NONE,
                leader_id=current.leader,
                leader_epoch=current.leader_epoch,
                isr=current.isr,
                leader_recovery_state=current.leader_recovery_state,
                partition_epoch=current.partition_epoch,
            ))
        topics.append(AlterPartitionResponseTopic(
            topic_name=data.topic_name, topic_id=data.topic_id, partitions=tuple(answers)
        ))
    return ControllerResult(tuple(records), AlterPartitionResponse(topics=tuple(topics)))


# -- IncrementalAlterConfigs: the per-resource checks in their one-step form -----------------

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _check_shape(resource: IncrementalAlterConfigsRequestAlterConfigsResource) -> None:
    counts = Counter(c.name for c in resource.configs)
    if any(n > 1 for n in counts.values()):
        raise Rejected(Errors.INVALID_REQUEST, "Error due to duplicate config keys")
    for config in resource.configs:
        if config.config_operation not in OPS:
            raise Rejected(
                Errors.INVALID_REQUEST, f"Unknown operations type {config.config_operation}"
            )
    nulls = [c.name for c in resource.configs if c.config_operation != DELETE and c.value is None]
    if nulls:
        raise Rejected(Errors.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")


def _validate(
    image: MetadataImage, key: ConfigResource, merged: Mapping[str, str], touched: set[str]
) -> None:
    topic = key.type == ConfigResourceType.TOPIC
    table = TOPIC_CONFIGS if topic else BROKER_CONFIGS
    for name in sorted(touched & set(merged)):
        problem = validate_config_value(table, name, merged[name])
        if problem is not None:
            raise Rejected(Errors.INVALID_CONFIG if topic else Errors.INVALID_REQUEST, problem)
    if not topic:
        return
    factor = _replication_factor(image, key.name)
    problem = check_topic_configs(merged, factor)
    if problem is not None:
        raise Rejected(Errors.INVALID_CONFIG, problem)
    if image.topic(key.name) is None:
        raise Rejected(
            Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{key.name}' does not exist."
        )


def _alter_one(
    image: MetadataImage,
    resource: IncrementalAlterConfigsRequestAlterConfigsResource,
    ctx: ControllerContext,
) -> list[ConfigRecord]:
    rejected = resource_problem(image, resource.resource_type, resource.resource_name, ctx)
    if rejected is not None:
        raise rejected
    _check_shape(resource)
    key = ConfigResource(ConfigResourceType(resource.resource_type), resource.resource_name)
    table = TOPIC_CONFIGS if key.type == ConfigResourceType.TOPIC else BROKER_CONFIGS
    existing = image.configs.get(key, {})
    merged = dict(existing)
    records = []
    for config in resource.configs:
        current = existing.get(config.name)
        value = _new_value(table.get(config.name), config.config_operation, current, config.value)
        if value is None:
            merged.pop(config.name, None)
        else:
            merged[config.name] = value
        if value != current or key.type == ConfigResourceType.BROKER:
            records.append(ConfigRecord(
                resource_type=key.type, resource_name=key.name, name=config.name, value=value
            ))
    touched = {c.name for c in resource.configs}
    unknown = sorted(touched - set(BROKER_CONFIGS))
    if key.type == ConfigResourceType.BROKER and unknown:
        raise Rejected(
            Errors.INVALID_REQUEST,
            f"Cannot update {unknown[0]} dynamically (dynamic broker configs: "
            f"{', '.join(sorted(BROKER_CONFIGS))})",
        )
    _validate(image, key, merged, touched)
    return records


def incremental_alter_configs_in_one_step(
    image: MetadataImage,
    request: IncrementalAlterConfigsRequest,
    version: int,
    ctx: ControllerContext,
) -> ControllerResult[IncrementalAlterConfigsResponse]:
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    records: list[ConfigRecord] = []
    answers = []
    for resource in request.resources:
        error, message = Errors.NONE, None
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise Rejected(Errors.INVALID_REQUEST, "Each resource must appear at most once.")
            records += _alter_one(image, resource, ctx)
        except Rejected as rejected:
            error, message = rejected.error, rejected.message
        answers.append(IncrementalAlterConfigsResponseAlterConfigsResource(
            error_code=error,
            error_message=message,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
        ))
    response = IncrementalAlterConfigsResponse(responses=tuple(answers))
    return ControllerResult(() if request.validate_only else tuple(records), response)


def describe_configs_in_one_step(
    image: MetadataImage, request: DescribeConfigsRequest, version: int, ctx: ControllerContext
) -> ControllerResult[DescribeConfigsResponse]:
    results = []
    for resource in request.resources:
        error, message = Errors.NONE, None
        configs: tuple[DescribeConfigsResponseResourceResult, ...] = ()
        try:
            values = _describe_one(image, resource, ctx)
        except Rejected as rejected:
            error, message = rejected.error, rejected.message
        else:
            keys = resource.configuration_keys
            configs = tuple(
                _described(v, request, version) for v in values if not keys or v.name in keys
            )
        results.append(DescribeConfigsResponseResult(
            error_code=error,
            error_message=message,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
            configs=configs,
        ))
    return ControllerResult.answer(DescribeConfigsResponse(results=tuple(results)))
