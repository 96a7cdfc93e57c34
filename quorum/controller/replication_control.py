"""CreateTopics, DeleteTopics and CreatePartitions as controller commands.

Each is a pure function of (image, request, version, ctx) that returns the
records to append and the response (event sourcing: nothing changes until the
records are replayed). Every check runs before any record is produced, per
topic: a multi-topic request may succeed for some topics and fail for others,
and a failed topic writes nothing. A topic is created whole (TopicRecord, its
ConfigRecords and all its PartitionRecords in one result) or not at all.
Within one request later topics see the earlier ones (names and ids in use).
DeleteTopics looks its names up in slices of at most ``MAX_UNITS_PER_SLICE``
(``quorum.controller.operations.SliceBudget``) before writing its records.

Kafka's rules (ReplicationControlManager, ControllerApis) with one addition:
when neither the broker settings nor the request set ``min.insync.replicas``,
the topic gets an explicit ``min.insync.replicas`` = a majority of its
replication factor (rf // 2 + 1). Kafka's default is 1, with which acks=all
acknowledges writes held by a single replica; see topic_configs.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping

import attrs

from quorum.controller.image import ConfigResourceType, MetadataImage
from quorum.controller.operations import RECORDS_PER_SLICE, Slice, SliceBudget, Steps, at_once
from quorum.controller.rejections import Rejected
from quorum.controller.replica_assignment import (
    active_replicas,
    assignment_problem,
    partition_record,
    placement_on_active_brokers,
)
from quorum.controller.results import ControllerContext
from quorum.controller.topic_configs import (
    CLUSTER_DEFAULT,
    MIN_INSYNC_REPLICAS,
    TOPIC_CONFIGS,
    check_topic_configs,
    majority,
    resolve_topic_configs,
    validate_config_value,
)
from quorum.controller.topic_names import (
    CLUSTER_METADATA_TOPIC,
    CollisionIndex,
    topic_name_problem,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
)
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    CreateTopicsResponseConfig,
    CreateTopicsResponseTopic,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseTopic,
)
from quorum.wire.metadata_serde import MetadataRecord
from quorum.wire.uuids import METADATA_TOPIC_ID, ZERO_UUID, uuid_to_str

__all__ = [
    "create_partitions",
    "create_partitions_steps",
    "create_topics",
    "create_topics_steps",
    "delete_topics",
    "delete_topics_steps",
]

DUPLICATE_NAME = "Duplicate topic name: it may appear only once in a request."


# -- CreateTopics ---------------------------------------------------------------------------


@attrs.define
class _Batch:
    """What one request has created so far (later topics must see it)."""

    image: MetadataImage
    names: set[str] = attrs.field(factory=set)
    ids: set[uuid.UUID] = attrs.field(factory=set)
    # the image's names and this request's by their '.'-as-'_' form; None until a
    # requested name needs it
    collisions: CollisionIndex | None = None

    def index_collisions(self, budget: SliceBudget) -> Generator[Slice, None, None]:
        """The collision index of the image's topics, a unit a name (once a request)."""
        index = CollisionIndex()
        for name in self.image.topic_ids_by_name:
            yield from budget.take()
            index.add(name)
        for name in self.names:
            index.add(name)
        self.collisions = index

    def add_name(self, name: str) -> None:
        self.names.add(name)
        if self.collisions is not None:
            self.collisions.add(name)

    def new_topic_id(self, ctx: ControllerContext) -> uuid.UUID:
        while True:
            candidate = uuid.UUID(bytes=ctx.rng.randbytes(16))
            taken = candidate in self.ids or candidate in self.image.topics_by_id
            reserved = candidate in (ZERO_UUID, METADATA_TOPIC_ID)
            # Kafka never hands out an id whose text starts with '-' (reads as a flag)
            if not (taken or reserved or uuid_to_str(candidate).startswith("-")):
                self.ids.add(candidate)
                return candidate


def _check_name(batch: _Batch, name: str) -> None:
    if name == CLUSTER_METADATA_TOPIC:
        raise Rejected(Errors.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
    problem = topic_name_problem(name)
    if problem is not None:
        raise Rejected(Errors.INVALID_TOPIC_EXCEPTION, problem)
    if batch.image.topic(name) is not None or name in batch.names:
        raise Rejected(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    assert batch.collisions is not None or ("." not in name and "_" not in name)
    other = None if batch.collisions is None else batch.collisions.colliding(name)
    if other is not None:
        raise Rejected(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic '{name}' collides with existing topic: {other} ('.' and '_' are "
            "the same in metric names)",
        )


def _requested_configs(topic: CreateTopicsRequestTopic) -> dict[str, str]:
    configs: dict[str, str] = {}
    nulls = [c.name for c in topic.configs if c.value is None]
    if nulls:
        raise Rejected(
            Errors.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}"
        )
    for config in topic.configs:
        assert config.value is not None
        configs[config.name] = config.value  # a repeated key: the last wins, as in Kafka
    for name, value in configs.items():
        problem = validate_config_value(TOPIC_CONFIGS, name, value)
        if problem is not None:
            raise Rejected(Errors.INVALID_CONFIG, problem)
    return configs


def _manual_assignments(
    image: MetadataImage, topic: CreateTopicsRequestTopic, budget: SliceBudget
) -> Generator[Slice, None, list[tuple[int, ...]]]:
    if topic.replication_factor != -1 or topic.num_partitions != -1:
        raise Rejected(
            Errors.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor and "
            "number of partitions were not both set to -1.",
        )
    by_index: dict[int, tuple[int, ...]] = {}
    factor: int | None = None
    for assignment in topic.assignments:
        yield from budget.take()
        index, replicas = assignment.partition_index, tuple(assignment.broker_ids)
        if index in by_index:
            raise Rejected(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {index}",
            )
        problem = assignment_problem(image, replicas, factor)
        if problem is None and not active_replicas(image, replicas):
            problem = (
                f"All brokers specified in the manual partition assignment for partition "
                f"{index} are fenced or in controlled shutdown."
            )
        if problem is not None:
            raise Rejected(Errors.INVALID_REPLICA_ASSIGNMENT, problem)
        by_index[index], factor = replicas, len(replicas)
    if sorted(by_index) != list(range(len(by_index))):
        raise Rejected(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return [by_index[i] for i in range(len(by_index))]


def _placement(
    batch: _Batch, topic: CreateTopicsRequestTopic, ctx: ControllerContext, budget: SliceBudget
) -> Generator[Slice, None, tuple[int, int, Callable[[int], tuple[int, ...]]]]:
    """(partition count, replication factor, partition -> replicas) for a new topic."""
    if topic.assignments:
        manual = yield from _manual_assignments(batch.image, topic, budget)
        return len(manual), len(manual[0]), manual.__getitem__
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise Rejected(
            Errors.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise Rejected(
            Errors.INVALID_PARTITIONS,
            "Number of partitions must be larger than 0, or -1 to use the default value.",
        )
    count = ctx.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    factor = topic.replication_factor
    if factor == -1:
        factor = ctx.config.default_replication_factor
    return count, factor, placement_on_active_brokers(batch.image, count, factor, ctx)


def _with_min_insync(
    image: MetadataImage, configs: dict[str, str], factor: int, ctx: ControllerContext
) -> dict[str, str]:
    # pykraft's safer default (see the module docstring): when no broker setting
    # (static or cluster-wide dynamic) and no request config names it, the topic
    # records min.insync.replicas = majority of RF explicitly, so every broker
    # enforces the same value whatever its own defaults are
    explicit = (
        MIN_INSYNC_REPLICAS in configs
        or ctx.config.min_insync_replicas is not None
        or MIN_INSYNC_REPLICAS in image.configs.get(CLUSTER_DEFAULT, {})
    )
    return configs if explicit else {**configs, MIN_INSYNC_REPLICAS: str(majority(factor))}


@attrs.frozen
class _TopicPlan:
    """A checked topic: its records are generated on demand (``records``)."""

    image: MetadataImage
    name: str
    topic_id: uuid.UUID
    configs: Mapping[str, str]
    partition_count: int
    replicas_of: Callable[[int], tuple[int, ...]]

    @property
    def record_count(self) -> int:
        return 1 + len(self.configs) + self.partition_count

    def records(self) -> Iterator[MetadataRecord]:
        name, topic_id = self.name, self.topic_id
        yield TopicRecord(name=name, topic_id=topic_id)
        for key, value in sorted(self.configs.items()):
            yield ConfigRecord(
                resource_type=ConfigResourceType.TOPIC, resource_name=name, name=key, value=value
            )
        for index in range(self.partition_count):
            yield partition_record(self.image, topic_id, index, self.replicas_of(index))


def _plan_topic(
    batch: _Batch,
    topic: CreateTopicsRequestTopic,
    version: int,
    ctx: ControllerContext,
    budget: SliceBudget,
) -> Generator[Slice, None, tuple[_TopicPlan, CreateTopicsResponseTopic]]:
    """Every check of one topic: a unit, and one more per config and per manual
    assignment (placement itself is computed later, per partition)."""
    image, name = batch.image, topic.name
    yield from budget.take()
    if batch.collisions is None and ("." in name or "_" in name):
        yield from batch.index_collisions(budget)
    _check_name(batch, name)
    for _ in topic.configs:
        yield from budget.take()
    configs = _requested_configs(topic)
    count, factor, replicas_of = yield from _placement(batch, topic, ctx, budget)
    if topic.assignments:
        for index in range(count):
            yield from budget.take()
            if not active_replicas(image, replicas_of(index)):
                raise Rejected(
                    Errors.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {factor} time(s): all brokers are "
                    "currently fenced or in controlled shutdown.",
                )
    problem = check_topic_configs(configs, factor)
    if problem is not None:
        raise Rejected(Errors.INVALID_CONFIG, problem)
    configs = _with_min_insync(image, configs, factor, ctx)
    topic_id = batch.new_topic_id(ctx)
    batch.add_name(name)
    plan = _TopicPlan(image, name, topic_id, configs, count, replicas_of)
    result = CreateTopicsResponseTopic(name=name, error_code=Errors.NONE, error_message=None)
    if version >= 5:
        result = attrs.evolve(
            result,
            num_partitions=count,
            replication_factor=factor,
            configs=_response_configs(image, configs, factor, ctx),
        )
    return plan, result


def _response_configs(
    image: MetadataImage, configs: Mapping[str, str], factor: int, ctx: ControllerContext
) -> tuple[CreateTopicsResponseConfig, ...]:
    return tuple(
        CreateTopicsResponseConfig(
            name=c.name, value=c.value, read_only=False, config_source=c.source,
            is_sensitive=False,
        )
        for c in resolve_topic_configs(image, configs, ctx.config, factor)
    )


def create_topics_steps(
    image: MetadataImage, request: CreateTopicsRequest, version: int, ctx: ControllerContext
) -> Steps[CreateTopicsResponse]:
    """Check every topic, then write the created ones' records in bounded slices.

    More than one slice of records goes out as one metadata transaction
    (``quorum.controller.operations``): all the topics of the request appear
    together or not at all.
    """
    budget = SliceBudget()
    counts: Counter[str] = Counter()
    for topic in request.topics:
        yield from budget.take()
        counts[topic.name] += 1
    batch = _Batch(image)
    plans: list[_TopicPlan] = []
    results: dict[str, CreateTopicsResponseTopic] = {}
    for topic in request.topics:
        if topic.name in results:
            continue  # a duplicate: answered once, as Kafka does
        if counts[topic.name] > 1:
            results[topic.name] = _topic_error(topic.name, Errors.INVALID_REQUEST, DUPLICATE_NAME)
            continue
        try:
            plan, results[topic.name] = yield from _plan_topic(batch, topic, version, ctx, budget)
        except Rejected as rejected:
            results[topic.name] = _topic_error(topic.name, rejected.error, rejected.message)
            continue
        plans.append(plan)
    response = CreateTopicsResponse(topics=tuple(results.values()))
    if request.validate_only or not plans:
        return response
    total = sum(plan.record_count for plan in plans)
    yield from _emit(itertools.chain.from_iterable(plan.records() for plan in plans), total)
    return response


create_topics = at_once("CreateTopics", create_topics_steps)


def _topic_error(name: str, error: Errors, message: str) -> CreateTopicsResponseTopic:
    return CreateTopicsResponseTopic(name=name, error_code=error, error_message=message)


# -- DeleteTopics ---------------------------------------------------------------------------


def delete_topics_steps(
    image: MetadataImage, request: DeleteTopicsRequest, version: int, ctx: ControllerContext
) -> Steps[DeleteTopicsResponse]:
    """Count the names, then look each up (a unit each, paused as the budget runs out);
    then write the RemoveTopicRecords (a transaction when they span several slices)."""
    budget = SliceBudget()
    counts: Counter[str] = Counter()
    for name in request.topic_names:
        yield from budget.take()
        counts[name] += 1
    records: list[MetadataRecord] = []
    results: dict[str, DeleteTopicsResponseTopic] = {}
    for name in request.topic_names:
        yield from budget.take()
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
    yield from budget.emit(records)
    return DeleteTopicsResponse(responses=tuple(results.values()))


delete_topics = at_once("DeleteTopics", delete_topics_steps)


# -- CreatePartitions -----------------------------------------------------------------------


@attrs.frozen
class _NewPartitions:
    """A checked CreatePartitions topic: its records are generated on demand."""

    image: MetadataImage
    topic_id: uuid.UUID
    first: int
    count: int
    replicas_of: Callable[[int], tuple[int, ...]]

    def records(self) -> Iterator[MetadataRecord]:
        for index in range(self.first, self.first + self.count):
            yield partition_record(self.image, self.topic_id, index, self.replicas_of(index))


def _new_partitions(
    image: MetadataImage,
    topic: CreatePartitionsRequestTopic,
    ctx: ControllerContext,
    budget: SliceBudget,
) -> Generator[Slice, None, _NewPartitions]:
    """The checks of one topic: a unit, and two more per manual assignment."""
    yield from budget.take()
    found = image.topic(topic.name)
    if found is None:
        raise Rejected(
            Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic.name}' does not exist."
        )
    current = len(found.partitions)
    if topic.count <= current:
        raise Rejected(
            Errors.INVALID_PARTITIONS,
            f"Topic {topic.name} currently has {current} partition(s); {topic.count} would "
            "not be an increase.",
        )
    additional = topic.count - current
    first = found.partitions[0]
    factor = len(first.replicas) - len(first.removing_replicas)
    if topic.assignments is None:
        # automatic placement uses active brokers only; it continues partition 0's pattern
        replicas_of = placement_on_active_brokers(image, additional, factor, ctx, [first.replicas])
        return _NewPartitions(image, found.topic_id, current, additional, replicas_of)
    assignments = yield from _manual_new_partitions(
        image, topic, additional, factor, current, budget
    )
    for replicas in assignments:
        yield from budget.take()
        if not active_replicas(image, replicas):
            raise Rejected(
                Errors.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {factor} time(s): all brokers are "
                "currently fenced or in controlled shutdown.",
            )
    return _NewPartitions(
        image, found.topic_id, current, additional, lambda p: assignments[p - current]
    )


def _manual_new_partitions(
    image: MetadataImage,
    topic: CreatePartitionsRequestTopic,
    additional: int,
    factor: int,
    current: int,
    budget: SliceBudget,
) -> Generator[Slice, None, list[tuple[int, ...]]]:
    assert topic.assignments is not None
    if len(topic.assignments) != additional:
        raise Rejected(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"Attempted to add {additional} additional partition(s), but "
            f"{len(topic.assignments)} assignment(s) were specified.",
        )
    assignments = []
    for offset, assignment in enumerate(topic.assignments):
        yield from budget.take()
        replicas = tuple(assignment.broker_ids)
        problem = assignment_problem(image, replicas, factor)
        if problem is None and not active_replicas(image, replicas):
            problem = (
                f"All brokers specified in the manual partition assignment for partition "
                f"{current + offset} are fenced or in controlled shutdown."
            )
        if problem is not None:
            raise Rejected(Errors.INVALID_REPLICA_ASSIGNMENT, problem)
        assignments.append(replicas)
    return assignments


def create_partitions_steps(
    image: MetadataImage, request: CreatePartitionsRequest, version: int, ctx: ControllerContext
) -> Steps[CreatePartitionsResponse]:
    """Check every topic, then write the new partitions in bounded slices (a
    transaction when they span several)."""
    budget = SliceBudget()
    counts: Counter[str] = Counter()
    for topic in request.topics:
        yield from budget.take()
        counts[topic.name] += 1
    plans: list[_NewPartitions] = []
    results: dict[str, CreatePartitionsResponseTopicResult] = {}
    for topic in request.topics:
        if topic.name in results:
            continue
        error, message = Errors.NONE, None
        try:
            if counts[topic.name] > 1:
                raise Rejected(Errors.INVALID_REQUEST, DUPLICATE_NAME)
            plans.append((yield from _new_partitions(image, topic, ctx, budget)))
        except Rejected as rejected:
            error, message = rejected.error, rejected.message
        results[topic.name] = CreatePartitionsResponseTopicResult(
            name=topic.name, error_code=error, error_message=message
        )
    response = CreatePartitionsResponse(results=tuple(results.values()))
    if not request.validate_only:
        total = sum(plan.count for plan in plans)
        yield from _emit(itertools.chain.from_iterable(p.records() for p in plans), total)
    return response


create_partitions = at_once("CreatePartitions", create_partitions_steps)


def _emit(records: Iterator[MetadataRecord], total: int) -> Generator[Slice, None, None]:
    """``total`` records generated on demand, ``RECORDS_PER_SLICE`` per slice."""
    written = 0
    while chunk := list(itertools.islice(records, RECORDS_PER_SLICE)):
        written += len(chunk)
        yield Slice(chunk, more=written < total)
