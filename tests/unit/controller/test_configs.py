"""Topic config rules, IncrementalAlterConfigs and DescribeConfigs."""

from __future__ import annotations

import pytest

from quorum.controller.config_control import describe_configs, incremental_alter_configs
from quorum.controller.image import ConfigResource, ConfigResourceType
from quorum.controller.topic_configs import TOPIC_CONFIGS, validate_config_value
from quorum.wire.codec import decode, encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages.configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseResourceResult,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)
from quorum.wire.messages.metadata_records import ConfigRecord
from tests.unit.controller.replication_world import World, new_topic

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
Op = tuple[str, int, str | None]


def world_with_topic() -> World:
    world = World()
    world.register(1, 2, 3)
    world.create(new_topic("t", rf=3, configs={"retention.ms": "1000"}))
    return world


def resource(kind: int, name: str, *ops: Op) -> IncrementalAlterConfigsRequestAlterConfigsResource:
    return IncrementalAlterConfigsRequestAlterConfigsResource(
        resource_type=kind,
        resource_name=name,
        configs=tuple(
            IncrementalAlterConfigsRequestAlterableConfig(name=n, config_operation=o, value=v)
            for n, o, v in ops
        ),
    )


def alter(
    world: World,
    *resources: IncrementalAlterConfigsRequestAlterConfigsResource,
    validate_only: bool = False,
) -> list[int]:
    request = IncrementalAlterConfigsRequest(resources=resources, validate_only=validate_only)
    result = world.run(incremental_alter_configs, request, 1)
    codes = [r.error_code for r in result.response.responses]
    if all(c != Errors.NONE for c in codes):
        assert result.records == (), "a rejected change writes nothing"
    return codes


# -- the config table -----------------------------------------------------------------------


def test_the_known_topic_configs_have_kafkas_defaults() -> None:
    defaults = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    long_max = "9223372036854775807"
    # Kafka 4.4.0's LogConfig.configDefCopy() (its 37 non-internal names, read from the jar),
    # with ServerLogConfigs' defaults
    assert len(defaults) == 37
    assert defaults == {
        "cleanup.policy": "delete",
        "compression.gzip.level": "-1",
        "compression.lz4.level": "9",
        "compression.type": "producer",
        "compression.zstd.level": "3",
        "delete.retention.ms": "86400000",
        "errors.deadletterqueue.group.enable": "false",
        "file.delete.delay.ms": "60000",
        "flush.messages": long_max,
        "flush.ms": long_max,
        "follower.replication.throttled.replicas": "",
        "index.interval.bytes": "4096",
        "leader.replication.throttled.replicas": "",
        "local.retention.bytes": "-2",
        "local.retention.ms": "-2",
        "max.compaction.lag.ms": long_max,
        "max.decompressed.message.bytes": "2147483639",
        "max.message.bytes": "1048588",
        "message.timestamp.after.max.ms": "3600000",
        "message.timestamp.before.max.ms": long_max,
        "message.timestamp.type": "CreateTime",
        "min.cleanable.dirty.ratio": "0.5",
        "min.compaction.lag.ms": "0",
        "min.insync.replicas": "1",
        "preallocate": "false",
        "remote.copy.lag.bytes": "-1",
        "remote.copy.lag.ms": "0",
        "remote.log.copy.disable": "false",
        "remote.log.delete.on.disable": "false",
        "remote.storage.enable": "false",
        "retention.bytes": "-1",
        "retention.ms": "604800000",
        "segment.bytes": "1073741824",
        "segment.index.bytes": "10485760",
        "segment.jitter.ms": "0",
        "segment.ms": "604800000",
        "unclean.leader.election.enable": "false",
    }


@pytest.mark.parametrize(
    ("name", "value", "ok"),
    [
        ("retention.ms", "-1", True),
        ("retention.ms", "-2", False),
        ("retention.ms", "9223372036854775807", True),
        ("retention.ms", "9223372036854775808", False),
        ("retention.bytes", "-5", True),
        ("segment.bytes", "13", False),
        ("segment.bytes", "2147483648", False),
        ("segment.ms", "0", False),
        ("min.insync.replicas", "2", True),
        ("min.insync.replicas", "0", False),
        ("unclean.leader.election.enable", "TRUE", True),
        ("unclean.leader.election.enable", "yes", False),
        ("cleanup.policy", "compact, delete", True),
        ("cleanup.policy", "", True),
        ("cleanup.policy", "shred", False),
        ("compression.type", "producer", True),
        ("compression.type", "zstd", False),  # valid in Kafka; pykraft does not recompress
        ("compression.type", "brotli", False),
        ("message.timestamp.type", "LogAppendTime", True),
        ("message.timestamp.type", "logappendtime", False),
        ("max.message.bytes", "-1", False),
        ("retention.ms", " 1000 ", True),
        ("no.such.key", "1", False),
    ],
)
def test_topic_config_values_are_checked_by_type_and_range(name: str, value: str, ok: bool) -> None:
    problem = validate_config_value(TOPIC_CONFIGS, name, value)
    assert (problem is None) == ok, problem
    if problem is not None:
        assert name in problem


# -- IncrementalAlterConfigs ----------------------------------------------------------------


def test_set_and_delete_write_config_records_that_replay_into_the_image() -> None:
    world = world_with_topic()
    codes = alter(world, resource(TOPIC, "t", ("retention.ms", SET, "5"), ("segment.ms", SET, "9")))
    assert codes == [Errors.NONE]
    assert world.image.topic_configs("t")["retention.ms"] == "5"
    assert world.image.topic_configs("t")["segment.ms"] == "9"
    alter(world, resource(TOPIC, "t", ("retention.ms", DELETE, None)))
    assert "retention.ms" not in world.image.topic_configs("t")


def test_setting_a_topic_config_to_its_current_value_writes_nothing() -> None:
    world = world_with_topic()
    request = IncrementalAlterConfigsRequest(resources=(
        resource(TOPIC, "t", ("retention.ms", SET, "1000")),
    ))
    assert world.run(incremental_alter_configs, request, 1).records == ()


def test_append_and_subtract_edit_a_list_starting_from_its_default() -> None:
    world = world_with_topic()
    alter(world, resource(TOPIC, "t", ("cleanup.policy", APPEND, "compact")))
    assert world.image.topic_configs("t")["cleanup.policy"] == "delete,compact"
    alter(world, resource(TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete")))
    assert world.image.topic_configs("t")["cleanup.policy"] == "compact"


def test_append_to_a_non_list_config_is_an_invalid_config() -> None:
    world = world_with_topic()
    assert alter(world, resource(TOPIC, "t", ("retention.ms", APPEND, "5"))) == [
        Errors.INVALID_CONFIG
    ]


@pytest.mark.parametrize(
    "op",
    [
        ("no.such.config", SET, "1"),
        ("retention.ms", SET, "later"),
        ("min.insync.replicas", SET, "4"),  # RF is 3
        ("compression.type", SET, "brotli"),
    ],
)
def test_bad_topic_values_are_invalid_config_and_change_nothing(op: Op) -> None:
    world = world_with_topic()
    before = dict(world.image.topic_configs("t"))
    assert alter(world, resource(TOPIC, "t", op)) == [Errors.INVALID_CONFIG]
    assert dict(world.image.topic_configs("t")) == before


def test_an_unknown_topic_is_unknown_topic_or_partition() -> None:
    world = world_with_topic()
    assert alter(world, resource(TOPIC, "nope", ("retention.ms", SET, "5"))) == [
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    ]


@pytest.mark.parametrize(
    "bad",
    [
        resource(TOPIC, "t", ("retention.ms", SET, "1"), ("retention.ms", DELETE, None)),
        resource(TOPIC, "t", ("retention.ms", 7, "1")),
        resource(TOPIC, "t", ("retention.ms", SET, None)),
        resource(TOPIC, "", ("retention.ms", SET, "1")),
        resource(8, "t", ("retention.ms", SET, "1")),
        resource(BROKER, "one", ("log.retention.ms", SET, "1")),
        resource(BROKER, "", ("num.network.threads", SET, "1")),
        resource(BROKER, "", ("log.retention.ms", SET, "soon")),
    ],
)
def test_malformed_resources_are_invalid_requests(
    bad: IncrementalAlterConfigsRequestAlterConfigsResource,
) -> None:
    assert alter(world_with_topic(), bad) == [Errors.INVALID_REQUEST]


def test_a_resource_named_twice_is_refused_for_every_copy() -> None:
    world = world_with_topic()
    twice = resource(TOPIC, "t", ("retention.ms", SET, "5"))
    other = resource(TOPIC, "t", ("segment.ms", SET, "5"))
    assert alter(world, twice, other) == [Errors.INVALID_REQUEST, Errors.INVALID_REQUEST]
    assert world.image.topic_configs("t")["retention.ms"] == "1000"


def test_validate_only_checks_but_writes_nothing() -> None:
    world = world_with_topic()
    good = resource(TOPIC, "t", ("retention.ms", SET, "5"))
    assert alter(world, good, validate_only=True) == [Errors.NONE]
    assert world.image.topic_configs("t")["retention.ms"] == "1000"


def test_broker_configs_for_the_cluster_and_registered_brokers_only() -> None:
    world = world_with_topic()
    codes = alter(
        world,
        resource(BROKER, "", ("min.insync.replicas", SET, "2")),
        resource(BROKER, "1", ("log.retention.ms", SET, "60000")),
        resource(BROKER, "99", ("log.retention.ms", SET, "60000")),
    )
    assert codes == [Errors.NONE, Errors.NONE, Errors.BROKER_ID_NOT_REGISTERED]
    assert world.image.configs[ConfigResource(BROKER, "")] == {"min.insync.replicas": "2"}
    assert world.image.configs[ConfigResource(BROKER, "1")] == {"log.retention.ms": "60000"}


def test_a_broker_config_record_is_written_even_when_the_value_is_unchanged() -> None:
    world = world_with_topic()
    same = resource(BROKER, "1", ("log.retention.ms", SET, "60000"))
    alter(world, same)
    request = IncrementalAlterConfigsRequest(resources=(same,))
    (record,) = world.run(incremental_alter_configs, request, 1).records
    assert isinstance(record, ConfigRecord) and record.value == "60000"


def test_a_mixed_request_applies_the_good_resources_only() -> None:
    world = world_with_topic()
    world.create(new_topic("u"))
    codes = alter(
        world,
        resource(TOPIC, "t", ("retention.ms", SET, "7")),
        resource(TOPIC, "u", ("retention.ms", SET, "never")),
    )
    assert codes == [Errors.NONE, Errors.INVALID_CONFIG]
    assert world.image.topic_configs("t")["retention.ms"] == "7"
    assert "retention.ms" not in world.image.topic_configs("u")


# -- DescribeConfigs ------------------------------------------------------------------------


def describe(
    world: World, kind: int, name: str, keys: tuple[str, ...] | None = None, *,
    version: int = 4, synonyms: bool = False, docs: bool = False,
) -> tuple[int, dict[str, DescribeConfigsResponseResourceResult]]:
    request = DescribeConfigsRequest(
        resources=(DescribeConfigsRequestResource(
            resource_type=kind, resource_name=name, configuration_keys=keys
        ),),
        include_synonyms=synonyms,
        include_documentation=docs,
    )
    result = world.run(describe_configs, request, version)
    assert result.records == ()
    (answer,) = result.response.results
    return answer.error_code, {c.name: c for c in answer.configs}


def test_a_topic_is_described_with_every_known_config_and_its_source() -> None:
    world = world_with_topic()
    error, configs = describe(world, TOPIC, "t")
    assert error == Errors.NONE
    assert set(configs) == set(TOPIC_CONFIGS)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("1000", 1)
    assert (configs["min.insync.replicas"].value, configs["min.insync.replicas"].config_source) == (
        "2", 1,
    )
    assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == (
        "1073741824", 5,
    )
    assert configs["retention.ms"].config_type == 5  # LONG
    assert configs["cleanup.policy"].config_type == 7  # LIST


def test_a_cluster_wide_broker_default_shows_through_as_its_own_source() -> None:
    world = world_with_topic()
    alter(world, resource(BROKER, "", ("log.segment.bytes", SET, "1048576")))
    _, configs = describe(world, TOPIC, "t", synonyms=True)
    assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == (
        "1048576", 3,
    )
    assert [(s.name, s.source) for s in configs["segment.bytes"].synonyms] == [
        ("log.segment.bytes", 3), ("log.segment.bytes", 5),
    ]


def test_describing_named_keys_returns_only_those_it_knows() -> None:
    world = world_with_topic()
    _, configs = describe(world, TOPIC, "t", ("retention.ms", "no.such.key"), docs=True)
    assert list(configs) == ["retention.ms"]
    assert configs["retention.ms"].documentation


def test_version_zero_marks_defaults_with_is_default() -> None:
    world = world_with_topic()
    _, configs = describe(world, TOPIC, "t", version=0)
    assert configs["segment.ms"].is_default and not configs["retention.ms"].is_default


def test_describing_an_unknown_topic_or_a_bad_resource_is_an_error() -> None:
    world = world_with_topic()
    assert describe(world, TOPIC, "nope")[0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert describe(world, TOPIC, "bad name")[0] == Errors.INVALID_TOPIC_EXCEPTION
    assert describe(world, 8, "x")[0] == Errors.INVALID_REQUEST


def test_a_broker_is_described_with_its_dynamic_configs_first() -> None:
    world = world_with_topic()
    alter(
        world,
        resource(BROKER, "", ("log.retention.ms", SET, "5000")),
        resource(BROKER, "2", ("log.retention.ms", SET, "7000")),
    )
    _, two = describe(world, BROKER, "2")
    assert (two["log.retention.ms"].value, two["log.retention.ms"].config_source) == ("7000", 2)
    _, one = describe(world, BROKER, "1")
    assert (one["log.retention.ms"].value, one["log.retention.ms"].config_source) == ("5000", 3)
    assert one["log.segment.bytes"].config_source == 5
    _, cluster = describe(world, BROKER, "")
    assert list(cluster) == ["log.retention.ms"]


@pytest.mark.parametrize("version", range(5))
def test_describe_answers_encode_at_every_version(version: int) -> None:
    world = world_with_topic()
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsRequestResource(
                resource_type=TOPIC, resource_name="t", configuration_keys=None
            ),
            DescribeConfigsRequestResource(resource_type=TOPIC, resource_name="nope"),
            DescribeConfigsRequestResource(resource_type=BROKER, resource_name="1"),
        ),
        include_synonyms=True,
        include_documentation=True,
    )
    response = world.run(describe_configs, request, version).response
    assert decode(DescribeConfigsResponse, version, encode(response, version)).results


@pytest.mark.parametrize("version", range(2))
def test_alter_answers_encode_at_every_version(version: int) -> None:
    world = world_with_topic()
    request = IncrementalAlterConfigsRequest(resources=(
        resource(TOPIC, "t", ("retention.ms", SET, "5")),
        resource(TOPIC, "t", ("retention.ms", SET, "6")),
        resource(TOPIC, "nope", ("retention.ms", SET, "6")),
    ))
    response = world.run(incremental_alter_configs, request, version).response
    decoded = decode(IncrementalAlterConfigsResponse, version, encode(response, version))
    assert [r.error_code for r in decoded.responses] == [
        Errors.INVALID_REQUEST, Errors.INVALID_REQUEST, Errors.UNKNOWN_TOPIC_OR_PARTITION
    ]
