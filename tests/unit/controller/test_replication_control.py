"""CreateTopics, DeleteTopics and CreatePartitions against folded images."""

from __future__ import annotations

import random
from collections import Counter

import attrs
import pytest

from quorum.controller.image import ConfigResourceType
from quorum.controller.replication_control import (
    create_partitions,
    create_topics,
    delete_topics,
)
from quorum.controller.results import ControllerResult
from quorum.wire.codec import decode, encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestAssignment,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
)
from quorum.wire.messages.metadata_records import ConfigRecord, PartitionRecord, TopicRecord
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from quorum.wire.uuids import ZERO_UUID
from tests.unit.controller.replication_world import World, new_topic


def world_with(*brokers: int) -> World:
    world = World()
    world.register(*brokers)
    return world


def create(
    world: World,
    *topics: CreateTopicsRequestTopic,
    version: int = 5,
    validate_only: bool = False,
) -> ControllerResult[CreateTopicsResponse]:
    request = CreateTopicsRequest(topics=topics, validate_only=validate_only)
    return world.run(create_topics, request, version)


def errors(result: ControllerResult[CreateTopicsResponse]) -> dict[str, int]:
    return {t.name: t.error_code for t in result.response.topics}


def test_a_new_topic_is_one_topic_record_its_configs_and_all_its_partitions() -> None:
    world = world_with(1, 2, 3)
    result = create(world, new_topic("orders", partitions=4, rf=3))
    kinds = [type(r) for r in result.records]
    assert kinds == [TopicRecord, ConfigRecord] + [PartitionRecord] * 4
    topic = world.topic("orders")
    assert topic.topic_id != ZERO_UUID
    for index, p in topic.partitions.items():
        assert p.isr == p.replicas and len(p.replicas) == 3
        assert p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
        assert index in range(4)
    (answer,) = result.response.topics
    assert answer.error_code == Errors.NONE
    assert (answer.num_partitions, answer.replication_factor) == (4, 3)


def test_min_insync_replicas_defaults_to_a_majority_of_the_replication_factor() -> None:
    world = world_with(1, 2, 3, 4, 5)
    create(world, new_topic("rf1", rf=1), new_topic("rf3", rf=3), new_topic("rf5", rf=5))
    assert world.image.topic_configs("rf1")["min.insync.replicas"] == "1"
    assert world.image.topic_configs("rf3")["min.insync.replicas"] == "2"
    assert world.image.topic_configs("rf5")["min.insync.replicas"] == "3"


def test_an_explicit_min_insync_replicas_wins_over_the_majority_default() -> None:
    world = world_with(1, 2, 3)
    create(world, new_topic("t", rf=3, configs={"min.insync.replicas": "1"}))
    assert world.image.topic_configs("t") == {"min.insync.replicas": "1"}
    configured = World(config=attrs.evolve(world.config, min_insync_replicas=2))
    configured.register(1, 2, 3)
    create(configured, new_topic("t", rf=3))
    assert configured.image.topic_configs("t") == {}  # the broker setting applies


def test_a_thirty_partition_topic_on_three_brokers_gives_each_broker_ten_leaders() -> None:
    world = world_with(1, 2, 3)
    create(world, new_topic("wide", partitions=30, rf=3))
    leaders = Counter(p.leader for p in world.topic("wide").partitions.values())
    assert leaders == {1: 10, 2: 10, 3: 10}


def test_a_replication_factor_above_the_active_brokers_is_refused_and_writes_nothing() -> None:
    world = world_with(1, 2, 3)
    world.fence(3)
    result = create(world, new_topic("t", rf=3))
    assert errors(result) == {"t": Errors.INVALID_REPLICATION_FACTOR}
    assert result.records == ()
    assert "only 2 broker(s) are active" in (result.response.topics[0].error_message or "")


@pytest.mark.parametrize("rf", [0, -2])
def test_a_non_positive_replication_factor_is_refused(rf: int) -> None:
    result = create(world_with(1), new_topic("t", rf=rf))
    assert errors(result) == {"t": Errors.INVALID_REPLICATION_FACTOR}


@pytest.mark.parametrize("count", [0, -3])
def test_a_non_positive_partition_count_is_refused(count: int) -> None:
    result = create(world_with(1), new_topic("t", partitions=count))
    assert errors(result) == {"t": Errors.INVALID_PARTITIONS}


def test_minus_one_takes_partitions_and_replication_factor_from_the_config() -> None:
    world = World(config=attrs.evolve(World().config, num_partitions=3, default_replication_factor=2))
    world.register(1, 2)
    create(world, new_topic("t", partitions=-1, rf=-1))
    topic = world.topic("t")
    assert len(topic.partitions) == 3
    assert all(len(p.replicas) == 2 for p in topic.partitions.values())


@pytest.mark.parametrize(
    "name", ["", ".", "..", "x" * 250, "has space", "slash/name", "ümlaut", "tab\t"]
)
def test_an_illegal_topic_name_is_refused(name: str) -> None:
    result = create(world_with(1), new_topic(name))
    assert errors(result) == {name: Errors.INVALID_TOPIC_EXCEPTION}
    assert result.records == ()


def test_legal_names_include_dots_dashes_underscores_and_249_characters() -> None:
    world = world_with(1)
    names = ["a.b-c_D9", "y" * 249, "...", "-dash"]
    result = create(world, *(new_topic(n) for n in names))
    assert set(errors(result).values()) == {Errors.NONE}


def test_names_that_differ_only_by_dot_and_underscore_collide() -> None:
    world = world_with(1)
    create(world, new_topic("metrics.cpu"))
    result = create(world, new_topic("metrics_cpu"), new_topic("a.b"), new_topic("a_b"))
    assert errors(result) == {
        "metrics_cpu": Errors.INVALID_TOPIC_EXCEPTION,
        "a.b": Errors.NONE,
        "a_b": Errors.INVALID_TOPIC_EXCEPTION,  # collides with a.b of this very request
    }


def test_an_existing_topic_is_refused_and_left_alone() -> None:
    world = world_with(1)
    create(world, new_topic("t"))
    before = world.topic("t")
    result = create(world, new_topic("t", partitions=5))
    assert errors(result) == {"t": Errors.TOPIC_ALREADY_EXISTS}
    assert world.topic("t") == before


def test_a_name_repeated_in_one_request_is_refused_once_and_not_created() -> None:
    world = world_with(1)
    result = create(world, new_topic("dup"), new_topic("ok"), new_topic("dup", partitions=2))
    assert [(t.name, t.error_code) for t in result.response.topics] == [
        ("dup", Errors.INVALID_REQUEST),
        ("ok", Errors.NONE),
    ]
    assert world.image.topic("dup") is None and world.image.topic("ok") is not None


def test_the_metadata_topic_cannot_be_created() -> None:
    result = create(world_with(1), new_topic("__cluster_metadata"))
    assert errors(result) == {"__cluster_metadata": Errors.INVALID_REQUEST}


def test_validate_only_answers_as_a_real_create_but_writes_nothing() -> None:
    world = world_with(1, 2, 3)
    dry = create(world, new_topic("t", partitions=2, rf=3), validate_only=True)
    assert dry.records == () and world.image.topic("t") is None
    real = create(world, new_topic("t", partitions=2, rf=3))
    assert dry.response == real.response


def test_topic_ids_are_random_per_seed_unique_and_never_zero() -> None:
    world = world_with(1)
    create(world, *(new_topic(f"t{i}") for i in range(20)))
    ids = [world.topic(f"t{i}").topic_id for i in range(20)]
    assert len(set(ids)) == 20 and ZERO_UUID not in ids
    again = world_with(1)
    create(again, *(new_topic(f"t{i}") for i in range(20)))
    assert [again.topic(f"t{i}").topic_id for i in range(20)] == ids


class RepeatingRandom(random.Random):
    """Hands out the same 16 bytes a few times, then random ones."""

    def __init__(self, repeat: bytes, times: int) -> None:
        super().__init__(1)
        self.repeat, self.times = repeat, times

    def randbytes(self, n: int) -> bytes:
        if self.times > 0 and n == 16:
            self.times -= 1
            return self.repeat
        return super().randbytes(n)


def test_a_topic_id_already_in_use_or_reserved_is_drawn_again() -> None:
    world = world_with(1)
    world.rng = RepeatingRandom(bytes(16), 3)  # the zero uuid, three times
    create(world, new_topic("a"))
    taken = world.topic("a").topic_id
    world.rng = RepeatingRandom(taken.bytes, 5)
    create(world, new_topic("b"), new_topic("c"))
    ids = {world.topic(n).topic_id for n in "abc"}
    assert len(ids) == 3 and ZERO_UUID not in ids


def test_manual_assignments_set_replicas_isr_and_leader() -> None:
    world = world_with(1, 2, 3)
    create(world, new_topic("m", assignments=[(3, 1), (2, 3)]))
    topic = world.topic("m")
    assert topic.partitions[0].replicas == (3, 1) and topic.partitions[0].leader == 3
    assert topic.partitions[1].isr == (2, 3)


def test_a_manual_replica_on_a_fenced_broker_is_outside_the_isr() -> None:
    world = world_with(1, 2, 3)
    world.fence(2)
    create(world, new_topic("m", assignments=[(2, 1)]))
    p = world.partition("m")
    assert p.replicas == (2, 1) and p.isr == (1,) and p.leader == 1


@pytest.mark.parametrize(
    ("assignments", "why"),
    [
        ([(1, 1)], "more than once"),
        ([(1, 9)], "no such broker"),
        ([(1, 2), (1,)], "not consistent"),
        ([()], "empty replica list"),
    ],
)
def test_a_bad_manual_assignment_is_refused(assignments: list[tuple[int, ...]], why: str) -> None:
    result = create(world_with(1, 2), new_topic("m", assignments=assignments))
    assert errors(result) == {"m": Errors.INVALID_REPLICA_ASSIGNMENT}
    assert why in (result.response.topics[0].error_message or "")
    assert result.records == ()


def test_manual_partitions_must_be_numbered_from_zero_without_gaps_or_repeats() -> None:
    world = world_with(1, 2)
    gap = attrs.evolve(
        new_topic("g", assignments=[(1,), (2,)]),
        assignments=(
            new_topic("x", assignments=[(1,)]).assignments[0],
            attrs.evolve(new_topic("x", assignments=[(2,)]).assignments[0], partition_index=2),
        ),
    )
    repeat = attrs.evolve(gap, name="r", assignments=(gap.assignments[0], gap.assignments[0]))
    result = create(world, gap, repeat)
    assert errors(result) == {
        "g": Errors.INVALID_REPLICA_ASSIGNMENT, "r": Errors.INVALID_REPLICA_ASSIGNMENT
    }


def test_manual_assignments_need_minus_one_partitions_and_replication_factor() -> None:
    topic = attrs.evolve(new_topic("m", assignments=[(1,)]), replication_factor=1)
    assert errors(create(world_with(1), topic)) == {"m": Errors.INVALID_REQUEST}


def test_manual_assignments_on_fenced_brokers_only_are_refused() -> None:
    world = world_with(1, 2)
    world.fence(1)
    result = create(world, new_topic("m", assignments=[(1,)]))
    assert errors(result) == {"m": Errors.INVALID_REPLICA_ASSIGNMENT}


@pytest.mark.parametrize(
    "configs",
    [
        {"no.such.config": "1"},
        {"retention.ms": "soon"},
        {"cleanup.policy": "delete,shred"},
        {"min.insync.replicas": "0"},
        {"min.insync.replicas": "4"},  # larger than RF 3: pykraft refuses
        {"retention.ms": None},
    ],
)
def test_bad_topic_configs_are_refused_with_invalid_config(configs: dict[str, str | None]) -> None:
    result = create(world_with(1, 2, 3), new_topic("t", rf=3, configs=configs))
    assert errors(result) == {"t": Errors.INVALID_CONFIG}
    assert result.records == ()


def test_topic_configs_are_written_and_echoed_with_their_sources_in_v5() -> None:
    world = world_with(1, 2, 3)
    result = create(world, new_topic("t", rf=3, configs={"retention.ms": "1000"}))
    assert world.image.topic_configs("t") == {"retention.ms": "1000", "min.insync.replicas": "2"}
    configs = {c.name: c for c in result.response.topics[0].configs or ()}
    assert configs["retention.ms"].value == "1000" and configs["retention.ms"].config_source == 1
    assert configs["segment.bytes"].value == str(1 << 30) and configs["segment.bytes"].config_source == 5
    assert configs["min.insync.replicas"].value == "2"


def test_a_bad_topic_does_not_stop_the_good_ones_in_one_request() -> None:
    world = world_with(1, 2)
    result = create(world, new_topic("good", rf=2), new_topic("bad", rf=3), new_topic("ok2"))
    assert errors(result) == {
        "good": Errors.NONE, "bad": Errors.INVALID_REPLICATION_FACTOR, "ok2": Errors.NONE
    }
    assert world.image.topic("bad") is None
    assert {r.name for r in result.records if isinstance(r, TopicRecord)} == {"good", "ok2"}


def test_old_versions_answer_without_the_v5_fields() -> None:
    result = create(world_with(1), new_topic("t"), version=4)
    (answer,) = result.response.topics
    assert answer.error_code == Errors.NONE and answer.num_partitions == -1


# -- DeleteTopics ---------------------------------------------------------------------------


def test_deleting_a_topic_removes_it_and_its_configs() -> None:
    world = world_with(1, 2, 3)
    create(world, new_topic("t", rf=3, configs={"retention.ms": "5"}))
    result = world.run(delete_topics, DeleteTopicsRequest(topic_names=("t",)), 4)
    assert [(r.name, r.error_code) for r in result.response.responses] == [("t", Errors.NONE)]
    assert world.image.topic("t") is None
    assert world.image.topic_configs("t") == {}
    create(world, new_topic("t", rf=1))  # the name is free again, with fresh configs
    assert world.image.topic_configs("t") == {"min.insync.replicas": "1"}


def test_deleting_an_unknown_or_repeated_topic_is_refused() -> None:
    world = world_with(1)
    create(world, new_topic("a"), new_topic("b"))
    request = DeleteTopicsRequest(topic_names=("a", "nope", "b", "a"))
    result = world.run(delete_topics, request, 4)
    assert [(r.name, r.error_code) for r in result.response.responses] == [
        ("a", Errors.INVALID_REQUEST),
        ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ("b", Errors.NONE),
    ]
    assert world.image.topic("a") is not None and world.image.topic("b") is None


# -- CreatePartitions -----------------------------------------------------------------------


def grow(name: str, count: int, assignments: list[tuple[int, ...]] | None = None) -> CreatePartitionsRequestTopic:
    return CreatePartitionsRequestTopic(
        name=name,
        count=count,
        assignments=None if assignments is None else tuple(
            CreatePartitionsRequestAssignment(broker_ids=a) for a in assignments
        ),
    )


def partitions(
    world: World, *topics: CreatePartitionsRequestTopic, validate_only: bool = False
) -> ControllerResult[CreatePartitionsResponse]:
    request = CreatePartitionsRequest(topics=topics, validate_only=validate_only)
    return world.run(create_partitions, request, 3)


def partition_errors(result: ControllerResult[CreatePartitionsResponse]) -> dict[str, int]:
    return {t.name: t.error_code for t in result.response.results}


def test_partitions_are_added_with_the_topics_replication_factor() -> None:
    world = world_with(1, 2, 3)
    create(world, new_topic("t", partitions=2, rf=2))
    result = partitions(world, grow("t", 5))
    assert partition_errors(result) == {"t": Errors.NONE}
    topic = world.topic("t")
    assert sorted(topic.partitions) == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 2 and p.isr == p.replicas for p in topic.partitions.values())


@pytest.mark.parametrize("count", [2, 1])
def test_the_partition_count_must_grow(count: int) -> None:
    world = world_with(1)
    create(world, new_topic("t", partitions=2))
    result = partitions(world, grow("t", count))
    assert partition_errors(result) == {"t": Errors.INVALID_PARTITIONS}
    assert result.records == ()


def test_partitions_of_an_unknown_or_repeated_topic_are_refused() -> None:
    world = world_with(1)
    create(world, new_topic("t"))
    result = partitions(world, grow("nope", 3), grow("t", 2), grow("t", 3))
    assert partition_errors(result) == {
        "nope": Errors.UNKNOWN_TOPIC_OR_PARTITION, "t": Errors.INVALID_REQUEST
    }
    assert len(world.topic("t").partitions) == 1


def test_manual_new_partitions_are_checked_like_new_topics() -> None:
    world = world_with(1, 2, 3)
    create(world, new_topic("t", rf=2, assignments=[(1, 2)]))
    cases = {
        "count": grow("t", 3, [(1, 2)]),
        "rf": grow("t", 2, [(1, 2, 3)]),
        "unknown": grow("t", 2, [(1, 7)]),
    }
    for case, topic in cases.items():
        result = partitions(world, topic)
        assert partition_errors(result) == {"t": Errors.INVALID_REPLICA_ASSIGNMENT}, case
    result = partitions(world, grow("t", 2, [(3, 1)]))
    assert partition_errors(result) == {"t": Errors.NONE}
    assert world.partition("t", 1).replicas == (3, 1)


def test_new_partitions_need_enough_active_brokers() -> None:
    world = world_with(1, 2)
    create(world, new_topic("t", rf=2))
    world.fence(2)
    assert partition_errors(partitions(world, grow("t", 2))) == {
        "t": Errors.INVALID_REPLICATION_FACTOR
    }


def test_validate_only_partitions_write_nothing() -> None:
    world = world_with(1)
    create(world, new_topic("t"))
    result = partitions(world, grow("t", 4), validate_only=True)
    assert partition_errors(result) == {"t": Errors.NONE}
    assert result.records == () and len(world.topic("t").partitions) == 1


def test_config_records_name_the_topic_resource() -> None:
    world = world_with(1)
    result = create(world, new_topic("t", configs={"cleanup.policy": "compact"}))
    configs = [r for r in result.records if isinstance(r, ConfigRecord)]
    assert {(c.resource_type, c.resource_name) for c in configs} == {
        (ConfigResourceType.TOPIC, "t")
    }


@pytest.mark.parametrize("version", range(6))
def test_create_answers_encode_at_every_version(version: int) -> None:
    world = world_with(1, 2)
    result = create(world, new_topic("x", rf=2), new_topic("bad name"), version=version)
    decoded = decode(CreateTopicsResponse, version, encode(result.response, version))
    assert [t.error_code for t in decoded.topics] == [
        Errors.NONE, Errors.INVALID_TOPIC_EXCEPTION
    ]
    if version >= 5:
        assert decoded.topics[0].replication_factor == 2


@pytest.mark.parametrize("version", range(5))
def test_delete_answers_encode_at_every_version(version: int) -> None:
    world = world_with(1)
    create(world, new_topic("t"))
    request = DeleteTopicsRequest(topic_names=("t", "nope"))
    response = world.run(delete_topics, request, version).response
    decoded = decode(DeleteTopicsResponse, version, encode(response, version))
    assert [r.error_code for r in decoded.responses] == [
        Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION
    ]


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_answers_encode_at_every_version(version: int) -> None:
    world = world_with(1)
    create(world, new_topic("t"))
    request = CreatePartitionsRequest(topics=(grow("t", 2), grow("nope", 2)))
    response = world.run(create_partitions, request, version).response
    decoded = decode(CreatePartitionsResponse, version, encode(response, version))
    assert [r.error_code for r in decoded.results] == [
        Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION
    ]
