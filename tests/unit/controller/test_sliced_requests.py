"""DeleteTopics, AlterPartitionReassignments, AlterPartition and the config commands in slices.

A request naming thousands of topics, partitions or config entries is examined
at most ``MAX_UNITS_PER_SLICE`` units per slice, its records framed as one
transaction when they span slices, and it answers and writes exactly what the
one-step form (``one_step_commands``) does on the same image; a small request
is still one slice without transaction markers.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from quorum.controller.alter_partition import alter_partition_steps
from quorum.controller.config_control import (
    describe_configs_steps,
    incremental_alter_configs_steps,
)
from quorum.controller.controller import QuorumController
from quorum.controller.image import ConfigResourceType, MetadataImage
from quorum.controller.operations import RECORDS_PER_SLICE, Operation, Slice, SliceBudget, Steps
from quorum.controller.reassignments import alter_partition_reassignments_steps
from quorum.controller.replication_control import (
    create_partitions_steps,
    create_topics_steps,
    delete_topics_steps,
)
from quorum.controller.results import ControllerContext, ControllerResult
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.controller.topic_configs import TOPIC_CONFIGS
from quorum.wire.error_codes import Errors
from quorum.wire.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartition,
    AlterPartitionRequestTopic,
)
from quorum.wire.messages.configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from quorum.wire.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestAssignment,
    CreatePartitionsRequestTopic,
)
from quorum.wire.messages.metadata_records import (
    BeginTransactionRecord,
    ConfigRecord,
    EndTransactionRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
)
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestAssignment,
    CreateTopicsRequestTopic,
    DeleteTopicsRequest,
)
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.large_images import large_image
from tests.unit.controller.one_step_commands import (
    alter_partition_in_one_step,
    alter_partition_reassignments_in_one_step,
    delete_topics_in_one_step,
    describe_configs_in_one_step,
    incremental_alter_configs_in_one_step,
)
from tests.unit.controller.replication_world import CONFIG

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
MARKERS = (BeginTransactionRecord, EndTransactionRecord)
Move = AlterPartitionReassignmentsRequestReassignablePartition
AlterableConfig = IncrementalAlterConfigsRequestAlterableConfig


def ctx() -> ControllerContext:
    return ControllerContext(config=CONFIG, now_ms=0, next_offset=0, rng=random.Random(0))


@functools.cache
def many_topics() -> MetadataImage:
    """3,000 one-partition topics (t0000..t2999, RF 3 over 4 brokers), each with retention.ms."""
    return large_image({f"t{i:04}": 1 for i in range(3000)}, brokers=4)


@functools.cache
def big_topic() -> MetadataImage:
    """"big" with 5,000 partitions (every 7th moving a replica), "other" with 10, 4 brokers."""
    return large_image({"big": 5000, "other": 10}, brokers=4, reassigning_every=7)


@attrs.frozen
class SlicedRun:
    proposals: list[list[MetadataRecord]]  # what each slice appended (markers included)
    units: list[int]  # each slice's work units
    response: Any

    @property
    def records(self) -> list[MetadataRecord]:
        return [r for proposal in self.proposals for r in proposal]

    @property
    def plain_records(self) -> list[MetadataRecord]:
        return [r for r in self.records if not isinstance(r, MARKERS)]


def run_in_slices(name: str, steps: Steps[Any]) -> SlicedRun:
    operation = Operation(name, steps)
    proposals: list[list[MetadataRecord]] = []
    units: list[int] = []
    while not operation.done:
        written = operation.step()
        if operation.done:  # the step that ends the generator: maybe an EndTransactionRecord
            if written:
                proposals[-1] += written
            break
        proposals.append(written)
        units.append(operation.last_units)
    return SlicedRun(proposals, units, operation.response)


Sliced = Callable[[MetadataImage, Any, int, ControllerContext], Steps[Any]]
OneStep = Callable[[MetadataImage, Any, int, ControllerContext], ControllerResult[Any]]


def assert_same_as_one_step(
    name: str, sliced: Sliced, one_step: OneStep, image: MetadataImage, request: Any, version: int
) -> SlicedRun:
    """Run ``request`` in slices: bounded slices, and the one-step answer and records."""
    run = run_in_slices(name, sliced(image, request, version, ctx()))
    expected = one_step(image, request, version, ctx())
    assert run.response == expected.response
    assert run.plain_records == list(expected.records)
    assert run.units and max(run.units) <= MAX_UNITS_PER_SLICE
    assert all(len(p) <= MAX_UNITS_PER_SLICE for p in run.proposals)  # one Raft batch each
    return run


def assert_one_transaction(run: SlicedRun) -> None:
    records = run.records
    assert isinstance(records[0], BeginTransactionRecord)
    assert isinstance(records[-1], EndTransactionRecord)
    assert not any(isinstance(r, MARKERS) for r in records[1:-1])
    assert sum(1 for p in run.proposals if any(not isinstance(r, MARKERS) for r in p)) > 1


def assert_one_slice_without_markers(run: SlicedRun) -> None:
    assert len(run.units) == 1
    assert not any(isinstance(r, MARKERS) for r in run.records)


# -- DeleteTopics -----------------------------------------------------------------------------


def test_deleting_3000_topics_examines_them_in_bounded_slices_and_writes_one_transaction() -> None:
    image = many_topics()
    names = [f"t{i:04}" for i in range(3000)]
    # a duplicate name answers INVALID_REQUEST (once) and deletes nothing; unknown names too
    request = DeleteTopicsRequest(topic_names=(*names, "nope", "t0042", "also-nope"))
    run = assert_same_as_one_step(
        "DeleteTopics", delete_topics_steps, delete_topics_in_one_step, image, request, 6
    )
    assert len(run.units) >= 6  # 3,003 names counted, 3,003 looked up, 2,999 records
    assert_one_transaction(run)
    assert len(run.plain_records) == 2999
    assert all(isinstance(r, RemoveTopicRecord) for r in run.plain_records)
    errors = {t.name: t.error_code for t in run.response.responses}
    assert len(errors) == 3002
    assert errors["t0042"] == Errors.INVALID_REQUEST
    assert errors["nope"] == errors["also-nope"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert errors["t2999"] == Errors.NONE


def test_deleting_a_few_topics_is_one_slice_without_transaction_markers() -> None:
    request = DeleteTopicsRequest(topic_names=("t0001", "t0002", "nope"))
    run = assert_same_as_one_step(
        "DeleteTopics", delete_topics_steps, delete_topics_in_one_step, many_topics(), request, 6
    )
    assert_one_slice_without_markers(run)
    assert len(run.records) == 2
    assert run.units == [3 + 3 + 2]  # counted, looked up, written


# -- AlterPartitionReassignments --------------------------------------------------------------


def _reassignment(index: int) -> AlterPartitionReassignmentsRequestReassignablePartition:
    if index % 14 == 0:  # moving: cancel every other moving partition
        return AlterPartitionReassignmentsRequestReassignablePartition(partition_index=index)
    if index % 11 == 0:  # the current replicas: nothing to move
        target = tuple((index + i) % 4 + 1 for i in range(3))
    else:
        target = tuple((index + i) % 4 + 1 for i in range(1, 4))
    return AlterPartitionReassignmentsRequestReassignablePartition(
        partition_index=index, replicas=target
    )


def _reassign_5000() -> AlterPartitionReassignmentsRequest:
    partitions = [_reassignment(i) for i in range(5000)]
    extra = [
        # named again: sees the move its earlier entry started, and cancels it
        Move(partition_index=1),
        Move(partition_index=7000, replicas=(1,)),
        Move(partition_index=2, replicas=(1, 99)),
        Move(partition_index=11),  # not moving
    ]
    Topic = AlterPartitionReassignmentsRequestReassignableTopic
    return AlterPartitionReassignmentsRequest(topics=(
        Topic(name="big", partitions=(*partitions, *extra)),
        Topic(name="nope", partitions=(
            AlterPartitionReassignmentsRequestReassignablePartition(partition_index=0),
        )),
    ))


def test_reassigning_5000_partitions_examines_them_in_bounded_slices() -> None:
    run = assert_same_as_one_step(
        "AlterPartitionReassignments", alter_partition_reassignments_steps,
        alter_partition_reassignments_in_one_step, big_topic(), _reassign_5000(), 0,
    )
    assert len(run.units) >= 10  # 5,006 entries examined, about 4,600 records
    assert_one_transaction(run)
    assert len(run.plain_records) > 4000
    assert all(isinstance(r, PartitionChangeRecord) for r in run.plain_records)
    big, nope = run.response.responses
    errors = [p.error_code for p in big.partitions]
    assert errors[:5000].count(Errors.NONE) == 5000
    assert errors[5000:] == [
        Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.INVALID_REPLICA_ASSIGNMENT,
        Errors.NO_REASSIGNMENT_IN_PROGRESS,
    ]
    assert [p.error_code for p in nope.partitions] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]


def test_reassigning_a_few_partitions_is_one_slice_without_transaction_markers() -> None:
    request = AlterPartitionReassignmentsRequest(topics=(
        AlterPartitionReassignmentsRequestReassignableTopic(
            name="big", partitions=(_reassignment(1), _reassignment(2), _reassignment(7))
        ),
    ))
    run = assert_same_as_one_step(
        "AlterPartitionReassignments", alter_partition_reassignments_steps,
        alter_partition_reassignments_in_one_step, big_topic(), request, 0,
    )
    assert_one_slice_without_markers(run)
    assert len(run.records) == 3


# -- AlterPartition ---------------------------------------------------------------------------


def _shrink(
    image: MetadataImage, topic: str, index: int, **changes: int
) -> AlterPartitionRequestPartition:
    """An ISR shrink to the leader and one follower, with the partition's current epochs."""
    found = image.topic(topic)
    assert found is not None
    partition = found.partitions[index]
    isr = [partition.leader, *(b for b in partition.isr if b != partition.leader)][:2]
    return AlterPartitionRequestPartition(
        partition_index=index,
        leader_epoch=changes.get("leader_epoch", partition.leader_epoch),
        partition_epoch=partition.partition_epoch,
        new_isr_with_epochs=tuple(
            AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=b) for b in isr
        ),
    )


def _alter_isrs_led_by_broker_1(image: MetadataImage) -> AlterPartitionRequest:
    big = image.topic("big")
    assert big is not None
    led = [i for i in range(5000) if big.partitions[i].leader == 1]
    not_led = next(i for i in range(5000) if big.partitions[i].leader != 1)
    partitions = [_shrink(image, "big", i) for i in led]
    partitions += [
        _shrink(image, "big", led[0]),  # again, with the partition epoch it had: stale now
        _shrink(image, "big", not_led),  # broker 1 is not its leader
        _shrink(image, "big", led[1], leader_epoch=big.partitions[led[1]].leader_epoch - 1),
    ]
    return AlterPartitionRequest(broker_id=1, broker_epoch=1, topics=(
        AlterPartitionRequestTopic(topic_id=big.topic_id, partitions=tuple(partitions)),
        AlterPartitionRequestTopic(topic_id=uuid.UUID(int=999), partitions=(partitions[0],)),
    ))


def test_an_alter_partition_of_1250_partitions_is_examined_in_bounded_slices() -> None:
    image = big_topic()
    request = _alter_isrs_led_by_broker_1(image)
    led = len(request.topics[0].partitions) - 3
    assert led > 1000
    run = assert_same_as_one_step(
        "AlterPartition", alter_partition_steps, alter_partition_in_one_step, image, request, 3
    )
    assert len(run.units) >= 3
    assert_one_transaction(run)
    assert len(run.plain_records) == led
    big, unknown = run.response.topics
    errors = [p.error_code for p in big.partitions]
    assert errors[:led] == [Errors.NONE] * led
    assert errors[led:] == [
        Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST, Errors.FENCED_LEADER_EPOCH
    ]
    assert [p.error_code for p in unknown.partitions] == [Errors.UNKNOWN_TOPIC_ID]
    assert all(len(p.isr) == 2 for p in big.partitions[:led])


def test_an_alter_partition_of_one_partition_is_one_slice_without_transaction_markers() -> None:
    image = big_topic()
    big = image.topic("big")
    assert big is not None
    request = AlterPartitionRequest(broker_id=1, broker_epoch=1, topics=(
        AlterPartitionRequestTopic(topic_id=big.topic_id, partitions=(_shrink(image, "big", 12),)),
    ))
    assert big.partitions[12].leader == 1
    run = assert_same_as_one_step(
        "AlterPartition", alter_partition_steps, alter_partition_in_one_step, image, request, 3
    )
    assert_one_slice_without_markers(run)
    assert len(run.records) == 1


def test_an_alter_partition_from_a_stale_broker_epoch_writes_nothing() -> None:
    image = big_topic()
    request = attrs.evolve(_alter_isrs_led_by_broker_1(image), broker_epoch=7)
    run = run_in_slices("AlterPartition", alter_partition_steps(image, request, 3, ctx()))
    assert run.units == [] and run.records == []  # answered before examining anything
    assert run.response == alter_partition_in_one_step(image, request, 3, ctx()).response
    assert run.response.error_code == Errors.STALE_BROKER_EPOCH


# -- IncrementalAlterConfigs ------------------------------------------------------------------


def _config(name: str, value: str | None, op: int = 0) -> AlterableConfig:
    return AlterableConfig(
        name=name, config_operation=op, value=value
    )


def _resource(
    kind: int, name: str, *configs: AlterableConfig
) -> IncrementalAlterConfigsRequestAlterConfigsResource:
    return IncrementalAlterConfigsRequestAlterConfigsResource(
        resource_type=kind, resource_name=name, configs=configs
    )


def _topic_change(i: int) -> IncrementalAlterConfigsRequestAlterConfigsResource:
    name = f"t{i:04}"
    if i % 97 == 0:
        return _resource(TOPIC, name, _config("retention.ms", None, op=1))
    if i % 113 == 0:
        return _resource(TOPIC, name, _config("retention.ms", "soon"))
    if i % 10 == 0:  # the value it has: no record
        return _resource(TOPIC, name, _config("retention.ms", str(i)))
    return _resource(
        TOPIC, name, _config("retention.ms", str(i * 1000)),
        _config("cleanup.policy", "compact", op=2),
    )


def _many_unknown(count: int, *, first: str = "z") -> tuple[AlterableConfig, ...]:
    # in no sorted order: the answer names the least bad key all the same
    return tuple(_config(f"{first}.{(i * 7919 + 1234) % count:05}", "1") for i in range(count))


def _alter_3000_topics() -> IncrementalAlterConfigsRequest:
    resources = [_topic_change(i) for i in range(2990)]
    resources += [
        _resource(TOPIC, "t0005", _config("segment.ms", "1")),  # named twice: both refused
        _resource(TOPIC, "nope", _config("retention.ms", "1")),
        _resource(TOPIC, "t2991", _config("min.insync.replicas", "4")),  # RF 3
        _resource(TOPIC, "t2992", *_many_unknown(2500), _config("retention.ms", "5")),
        _resource(TOPIC, "t2993", *_many_unknown(1200), _config("z.00007", "1", op=1)),
        _resource(TOPIC, "t2994", *_many_unknown(1500), _config("x", "1", op=9)),
        _resource(TOPIC, "t2995", _config("a", None), _config("b", None, op=1),
                  _config("c", None, op=2)),
        _resource(BROKER, "1", *_many_unknown(1500, first="q"), _config("log.retention.ms", "1")),
        _resource(BROKER, "", _config("log.retention.ms", "10"), _config("message.max.bytes", "x")),
        _resource(BROKER, "2", _config("log.retention.ms", "10")),
    ]
    return IncrementalAlterConfigsRequest(resources=tuple(resources))


def test_altering_configs_of_3000_topics_examines_them_in_bounded_slices() -> None:
    run = assert_same_as_one_step(
        "IncrementalAlterConfigs", incremental_alter_configs_steps,
        incremental_alter_configs_in_one_step, many_topics(), _alter_3000_topics(), 1,
    )
    assert len(run.units) >= 15  # about 18,000 resources, entries and records
    assert_one_transaction(run)
    assert len(run.plain_records) > 5000
    assert all(isinstance(r, ConfigRecord) for r in run.plain_records)
    answers = {(a.resource_type, a.resource_name): a for a in run.response.responses}
    assert answers[(TOPIC, "t0005")].error_code == Errors.INVALID_REQUEST
    assert answers[(TOPIC, "nope")].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert answers[(TOPIC, "t2991")].error_code == Errors.INVALID_CONFIG
    assert answers[(TOPIC, "t2992")].error_code == Errors.INVALID_CONFIG
    assert "z.00000" in (answers[(TOPIC, "t2992")].error_message or "")  # the least bad key
    assert answers[(TOPIC, "t2993")].error_message == "Error due to duplicate config keys"
    assert answers[(TOPIC, "t2994")].error_message == "Unknown operations type 9"
    assert answers[(TOPIC, "t2995")].error_message == "Null value not supported for : a, c"
    assert answers[(TOPIC, "t0010")].error_code == Errors.NONE
    assert answers[(BROKER, "1")].error_code == Errors.INVALID_REQUEST
    assert "q.00000" in (answers[(BROKER, "1")].error_message or "")
    assert answers[(BROKER, "")].error_code == Errors.INVALID_REQUEST
    assert answers[(BROKER, "2")].error_code == Errors.NONE
    assert answers[(TOPIC, "t0226")].error_code == Errors.INVALID_CONFIG  # 226 = 2 * 113


def test_validating_configs_of_3000_topics_writes_nothing_in_bounded_slices() -> None:
    request = attrs.evolve(_alter_3000_topics(), validate_only=True)
    run = assert_same_as_one_step(
        "IncrementalAlterConfigs", incremental_alter_configs_steps,
        incremental_alter_configs_in_one_step, many_topics(), request, 1,
    )
    assert run.records == [] and len(run.units) >= 10


def test_altering_the_configs_of_a_few_topics_is_one_slice_without_transaction_markers() -> None:
    request = IncrementalAlterConfigsRequest(resources=(_topic_change(1), _topic_change(2)))
    run = assert_same_as_one_step(
        "IncrementalAlterConfigs", incremental_alter_configs_steps,
        incremental_alter_configs_in_one_step, many_topics(), request, 1,
    )
    assert_one_slice_without_markers(run)
    assert len(run.records) == 4


# -- DescribeConfigs --------------------------------------------------------------------------


def _describe_3000_topics() -> DescribeConfigsRequest:
    def resource(i: int) -> DescribeConfigsRequestResource:
        keys = ("retention.ms", "segment.ms", "no.such.key") if i % 3 == 0 else ()
        return DescribeConfigsRequestResource(
            resource_type=TOPIC, resource_name=f"t{i:04}", configuration_keys=keys
        )

    many_keys = (*(f"k{i}" for i in range(2000)), "min.insync.replicas")
    return DescribeConfigsRequest(include_synonyms=True, resources=(
        *(resource(i) for i in range(3000)),
        DescribeConfigsRequestResource(
            resource_type=TOPIC, resource_name="t0001", configuration_keys=many_keys
        ),
        DescribeConfigsRequestResource(resource_type=TOPIC, resource_name="nope"),
        DescribeConfigsRequestResource(resource_type=BROKER, resource_name="1",
                                       configuration_keys=None),
        DescribeConfigsRequestResource(resource_type=BROKER, resource_name=""),
        DescribeConfigsRequestResource(resource_type=7, resource_name="x"),
    ))


def test_describing_3000_topics_examines_them_in_bounded_slices() -> None:
    run = assert_same_as_one_step(
        "DescribeConfigs", describe_configs_steps, describe_configs_in_one_step,
        many_topics(), _describe_3000_topics(), 4,
    )
    assert run.records == []
    assert len(run.units) >= 30  # 3,005 resources of 1 + 33 units, 5,003 keys
    results = run.response.results
    assert len(results) == 3005
    assert [c.name for c in results[0].configs] == ["retention.ms", "segment.ms"]
    assert len(results[1].configs) == len(TOPIC_CONFIGS)
    assert [c.name for c in results[3000].configs] == ["min.insync.replicas"]
    assert [r.error_code for r in results[3001:]] == [
        Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NONE, Errors.NONE, Errors.INVALID_REQUEST
    ]


def test_describing_a_few_topics_is_one_slice() -> None:
    request = DescribeConfigsRequest(resources=tuple(
        DescribeConfigsRequestResource(resource_type=TOPIC, resource_name=f"t{i:04}")
        for i in range(3)
    ))
    run = assert_same_as_one_step(
        "DescribeConfigs", describe_configs_steps, describe_configs_in_one_step,
        many_topics(), request, 4,
    )
    assert_one_slice_without_markers(run)
    assert run.records == []
    assert [len(r.configs) for r in run.response.results] == [len(TOPIC_CONFIGS)] * 3


# -- through the controller -------------------------------------------------------------------


@pytest.mark.parametrize("request_of", [
    lambda image: DeleteTopicsRequest(topic_names=tuple(sorted(image.topic_ids_by_name))),
    lambda image: _alter_3000_topics(),
    lambda image: _describe_3000_topics(),
], ids=["DeleteTopics", "IncrementalAlterConfigs", "DescribeConfigs"])
def test_the_controller_runs_large_requests_as_sliced_commands(
    request_of: Callable[[MetadataImage], Any],
) -> None:
    image = many_topics()
    controller = QuorumController(CONFIG, rng=random.Random(1))
    controller.load_snapshot(image)
    controller.activate(0, next_offset=image.provenance.offset, epoch=2)
    offset = image.provenance.offset + 1
    operation = controller.start(request_of(image), 4, now_ms=0, next_offset=offset)
    steps = 0
    while not operation.done:
        written = operation.step()
        assert len(written) <= RECORDS_PER_SLICE + 2
        assert operation.last_units <= MAX_UNITS_PER_SLICE
        offset += len(written)
        controller.appended(written, offset)  # every record replays onto the working image
        steps += 1
    assert steps > 5
    assert operation.response is not None


def test_the_controller_deletes_3000_topics_in_slices() -> None:
    image = many_topics()
    controller = QuorumController(CONFIG, rng=random.Random(1))
    controller.load_snapshot(image)
    controller.activate(0, next_offset=image.provenance.offset, epoch=2)
    request = DeleteTopicsRequest(topic_names=tuple(sorted(image.topic_ids_by_name)))
    result = controller.handle(request, 6, now_ms=0, next_offset=image.provenance.offset + 1)
    assert isinstance(result.records[0], BeginTransactionRecord)
    assert isinstance(result.records[-1], EndTransactionRecord)
    assert len(result.records) == 3002
    assert controller.working.topic_ids_by_name == {}
    assert {t.error_code for t in result.response.responses} == {Errors.NONE}


# -- the budget itself ------------------------------------------------------------------------


def test_a_budget_pauses_before_work_that_would_not_fit_and_writes_with_the_last_work() -> None:
    budget = SliceBudget(limit=10)

    def steps() -> Steps[None]:
        for units in (4, 4, 4, 10, 1):
            yield from budget.take(units)
        yield from budget.emit([RemoveTopicRecord(topic_id=uuid.UUID(int=i)) for i in range(12)])

    pieces = list(steps())
    assert [(len(p.records), p.more, p.work_units) for p in pieces] == [
        (0, True, 8), (0, True, 4), (0, True, 10), (9, True, 10), (3, False, 3),
    ]


def test_a_budget_with_nothing_to_write_reports_its_last_work_in_a_slice_of_its_own() -> None:
    budget = SliceBudget(limit=10)

    def steps() -> Steps[None]:
        yield from budget.take(3)
        yield from budget.emit(())

    assert list(steps()) == [Slice(more=False, units=3)]
    assert list(SliceBudget().emit(())) == []


# -- CreateTopics and CreatePartitions: the checks ---------------------------------------------


@functools.cache
def dotted_topics() -> MetadataImage:
    """3,000 one-partition topics named d.0000..d.2999 (dots: every new dotted name must be
    checked against them for a '.'/'_' collision), 4 brokers."""
    return large_image({f"d.{i:04}": 1 for i in range(3000)}, brokers=4)


def _new_topic(name: str, **fields: Any) -> CreateTopicsRequestTopic:
    return CreateTopicsRequestTopic(
        name=name, num_partitions=fields.pop("num_partitions", 1),
        replication_factor=fields.pop("replication_factor", 3), **fields,
    )


def test_creating_3000_dotted_topics_checks_collisions_in_bounded_slices() -> None:
    image = dotted_topics()
    topics = [_new_topic(f"n.{i:04}") for i in range(3000)]
    topics += [_new_topic("d_0042"), _new_topic("n_0007"), _new_topic("d.0001")]
    run = run_in_slices("CreateTopics", create_topics_steps(
        image, CreateTopicsRequest(topics=tuple(topics), timeout_ms=1000), 5, ctx()))
    assert max(run.units) <= MAX_UNITS_PER_SLICE
    # 3,003 names counted, 3,000 image names indexed, 3,003 topics checked before any record
    first_records = next(i for i, p in enumerate(run.proposals) if p)
    assert first_records >= 8
    assert_one_transaction(run)
    errors = {t.name: (t.error_code, t.error_message) for t in run.response.topics}
    assert errors["d_0042"] == (Errors.INVALID_TOPIC_EXCEPTION,
                                "Topic 'd_0042' collides with existing topic: d.0042 ('.' and "
                                "'_' are the same in metric names)")
    # a name created earlier in the same request collides too
    assert errors["n_0007"][0] == Errors.INVALID_TOPIC_EXCEPTION
    assert "n.0007" in str(errors["n_0007"][1])
    assert errors["d.0001"][0] == Errors.TOPIC_ALREADY_EXISTS
    assert sum(1 for code, _ in errors.values() if code == Errors.NONE) == 3000
    created = [r for r in run.plain_records if isinstance(r, TopicRecord)]
    assert [r.name for r in created] == [f"n.{i:04}" for i in range(3000)]


def test_a_manual_assignment_of_3000_partitions_is_checked_in_bounded_slices() -> None:
    image = many_topics()
    assignments = tuple(
        CreateTopicsRequestAssignment(partition_index=i, broker_ids=((i % 4) + 1, (i + 1) % 4 + 1))
        for i in range(3000)
    )
    request = CreateTopicsRequest(topics=(_new_topic(
        "manual", num_partitions=-1, replication_factor=-1, assignments=assignments,
    ),), timeout_ms=1000)
    run = run_in_slices("CreateTopics", create_topics_steps(image, request, 5, ctx()))
    assert max(run.units) <= MAX_UNITS_PER_SLICE
    # 3,000 assignments checked and 3,000 replica sets found active before any record
    assert next(i for i, p in enumerate(run.proposals) if p) >= 5
    assert run.response.topics[0].error_code == Errors.NONE
    partitions = [r for r in run.plain_records if isinstance(r, PartitionRecord)]
    assert [p.replicas for p in partitions] == [a.broker_ids for a in assignments]
    # a duplicate index late in the list is still found
    bad = (*assignments, CreateTopicsRequestAssignment(partition_index=2999, broker_ids=(1, 2)))
    refused = run_in_slices("CreateTopics", create_topics_steps(image, CreateTopicsRequest(
        topics=(_new_topic("manual", num_partitions=-1, replication_factor=-1,
                           assignments=bad),), timeout_ms=1000), 5, ctx()))
    assert max(refused.units) <= MAX_UNITS_PER_SLICE and not refused.records
    assert refused.response.topics[0].error_code == Errors.INVALID_REPLICA_ASSIGNMENT


def test_adding_3000_manually_assigned_partitions_is_checked_in_bounded_slices() -> None:
    image = many_topics()
    assignments = tuple(
        CreatePartitionsRequestAssignment(broker_ids=((i % 4) + 1, (i + 1) % 4 + 1, (i + 2) % 4 + 1))
        for i in range(3000)
    )
    request = CreatePartitionsRequest(topics=(CreatePartitionsRequestTopic(
        name="t0001", count=3001, assignments=assignments,
    ),), timeout_ms=1000, validate_only=False)
    run = run_in_slices("CreatePartitions", create_partitions_steps(image, request, 3, ctx()))
    assert max(run.units) <= MAX_UNITS_PER_SLICE
    assert next(i for i, p in enumerate(run.proposals) if p) >= 5
    assert run.response.results[0].error_code == Errors.NONE
    assert_one_transaction(run)
    added = [r for r in run.plain_records if isinstance(r, PartitionRecord)]
    assert [r.partition_id for r in added] == list(range(1, 3001))
    assert [r.replicas for r in added] == [a.broker_ids for a in assignments]
