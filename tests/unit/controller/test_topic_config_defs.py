"""Every Kafka 4.x topic config: validated by type, range and valid values on both paths
(CreateTopics, IncrementalAlterConfigs); values pykraft cannot honour refused."""

from __future__ import annotations

import pytest

from quorum.controller.config_control import describe_configs, incremental_alter_configs
from quorum.controller.image import ConfigResourceType
from quorum.controller.replication_control import create_topics
from quorum.controller.topic_configs import TOPIC_CONFIGS, validate_config_value
from quorum.wire.error_codes import Errors
from quorum.wire.messages.configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from quorum.wire.messages.topics import CreateTopicsRequest
from tests.unit.controller.replication_world import World, new_topic

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
LONG_MAX = "9223372036854775807"

# (name, value, Kafka's reason or None): one good and the bad values of each type and rule
CASES = [
    ("cleanup.policy", "compact,delete", None),
    ("cleanup.policy", "compact", None),
    ("cleanup.policy", "shred", "String must be one of: compact, delete"),
    ("compression.gzip.level", "-1", None),
    ("compression.gzip.level", "9", None),
    ("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
    ("compression.lz4.level", "17", None),
    ("compression.lz4.level", "18", "Value must be no more than 17"),
    ("compression.zstd.level", "-131072", None),
    ("compression.zstd.level", "-131073", "Value must be at least -131072"),
    ("delete.retention.ms", "0", None),
    ("delete.retention.ms", "-1", "Value must be at least 0"),
    ("delete.retention.ms", "1.5", "Not a number of type LONG"),
    ("file.delete.delay.ms", "0", None),
    ("flush.messages", "0", "Value must be at least 1"),
    ("flush.ms", LONG_MAX, None),
    ("flush.ms", "-1", "Value must be at least 0"),
    ("follower.replication.throttled.replicas", "*", None),
    ("follower.replication.throttled.replicas", "0:1, 1:2", None),
    ("leader.replication.throttled.replicas", "0-1", "must be the literal '*' or a list of"),
    ("index.interval.bytes", "2147483648", "Not a number of type INT"),
    ("local.retention.bytes", "-2", None),
    ("local.retention.ms", "-3", "Value must be at least -2"),
    ("max.compaction.lag.ms", "0", "Value must be at least 1"),
    ("max.message.bytes", "0", None),
    ("message.timestamp.after.max.ms", "3600000", None),
    ("message.timestamp.before.max.ms", "-1", "Value must be at least 0"),
    ("message.timestamp.type", "LogAppendTime", None),
    ("min.cleanable.dirty.ratio", "0.1", None),
    ("min.cleanable.dirty.ratio", "1", None),
    ("min.cleanable.dirty.ratio", "1.01", "Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "half", "Not a number of type DOUBLE"),
    ("min.compaction.lag.ms", "100", None),
    ("preallocate", "false", None),
    ("preallocate", "maybe", "Expected value to be either true or false"),
    ("remote.log.copy.disable", "true", None),
    ("remote.copy.lag.bytes", "-1", None),
    ("remote.copy.lag.bytes", "-2", "Value must be at least -1"),
    ("remote.copy.lag.ms", "60000", None),
    ("errors.deadletterqueue.group.enable", "false", None),
    ("max.decompressed.message.bytes", "2147483639", None),
    ("max.decompressed.message.bytes", "0", "Value must be at least 1"),
    ("max.decompressed.message.bytes", "2147483640", "Value must be no more than 2147483639"),
    ("remote.log.delete.on.disable", "true", None),
    ("remote.storage.enable", "false", None),
    ("retention.ms", "0", None),
    ("segment.bytes", "1048576", None),
    ("segment.bytes", "1048575", "Value must be at least 1048576"),
    ("segment.index.bytes", "3", "Value must be at least 4"),
    ("segment.jitter.ms", "-1", "Value must be at least 0"),
    ("segment.ms", "1", None),
]

# valid in Kafka, refused by pykraft: it would accept them and then not do what they ask
UNSUPPORTED = [
    ("compression.type", "gzip", "does not recompress"),
    ("compression.type", "uncompressed", "does not recompress"),
    ("preallocate", "true", "does not preallocate"),
    ("flush.messages", "1", "does not fsync data partitions"),
    ("flush.ms", "1000", "does not fsync data partitions"),
    ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker"),
    ("errors.deadletterqueue.group.enable", "true", "pykraft has no share groups"),
    ("max.decompressed.message.bytes", "1048576", "has no per-topic bound"),
]


def _world() -> World:
    world = World()
    world.register(1, 2, 3)
    return world


def _create(world: World, configs: dict[str, str | None]) -> tuple[int, str | None]:
    request = CreateTopicsRequest(topics=(new_topic("t", rf=3, configs=configs),))
    result = world.run(create_topics, request, 5)
    (answer,) = result.response.topics
    if answer.error_code != Errors.NONE:
        assert result.records == (), "a refused topic writes nothing"
    return answer.error_code, answer.error_message


def _alter(world: World, kind: int, name: str, key: str, value: str) -> tuple[int, str | None]:
    request = IncrementalAlterConfigsRequest(resources=(
        IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=kind, resource_name=name, configs=(
                IncrementalAlterConfigsRequestAlterableConfig(
                    name=key, config_operation=0, value=value
                ),
            ),
        ),
    ))
    result = world.run(incremental_alter_configs, request, 1)
    (answer,) = result.response.responses
    return answer.error_code, answer.error_message


def test_the_table_is_kafkas_4x_topic_config_list() -> None:
    # Kafka 4.4.0's LogConfig.configDefCopy(), without its internal key
    # (internal.segment.bytes)
    assert len(TOPIC_CONFIGS) == 37
    assert "internal.segment.bytes" not in TOPIC_CONFIGS
    assert "message.format.version" not in TOPIC_CONFIGS  # removed in Kafka 4.0
    assert "message.downconversion.enable" not in TOPIC_CONFIGS  # removed in Kafka 4.0


@pytest.mark.parametrize(("name", "value", "reason"), CASES + UNSUPPORTED)
def test_each_value_is_checked_with_kafkas_message(
    name: str, value: str, reason: str | None
) -> None:
    problem = validate_config_value(TOPIC_CONFIGS, name, value)
    if reason is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(
            f"Invalid value {value} for configuration {name}: "
        )
        assert reason in problem


@pytest.mark.parametrize(("name", "value", "reason"), CASES + UNSUPPORTED)
def test_create_topics_accepts_or_refuses_each_value_with_invalid_config(
    name: str, value: str, reason: str | None
) -> None:
    world = _world()
    error, message = _create(world, {name: value})
    if reason is None:
        assert error == Errors.NONE
        assert world.image.topic_configs("t")[name] == value
    else:
        assert error == Errors.INVALID_CONFIG and message is not None and reason in message


@pytest.mark.parametrize(("name", "value", "reason"), CASES + UNSUPPORTED)
def test_incremental_alter_configs_accepts_or_refuses_each_value_with_invalid_config(
    name: str, value: str, reason: str | None
) -> None:
    world = _world()
    world.create(new_topic("t", rf=3))
    error, message = _alter(world, TOPIC, "t", name, value)
    if reason is None:
        assert error == Errors.NONE
        assert world.image.topic_configs("t")[name] == value
    else:
        assert error == Errors.INVALID_CONFIG and message is not None and reason in message
        assert name not in world.image.topic_configs("t")


def test_min_compaction_lag_above_max_compaction_lag_is_a_conflict_on_both_paths() -> None:
    world = _world()
    error, message = _create(world, {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert error == Errors.INVALID_CONFIG
    assert message == (
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    )
    world.create(new_topic("t", rf=3, configs={"max.compaction.lag.ms": "5"}))
    error, message = _alter(world, TOPIC, "t", "min.compaction.lag.ms", "6")
    assert error == Errors.INVALID_CONFIG and message is not None and "conflict" in message
    assert _alter(world, TOPIC, "t", "min.compaction.lag.ms", "5") == (Errors.NONE, None)


def test_a_dynamic_broker_default_pykraft_cannot_honour_is_refused_as_kafkas_broker_does() -> None:
    world = _world()
    error, message = _alter(world, BROKER, "", "compression.type", "zstd")
    assert error == Errors.INVALID_REQUEST and message is not None and "recompress" in message
    accepted = _alter(world, BROKER, "", "log.cleaner.delete.retention.ms", "1000")
    assert accepted == (Errors.NONE, None)


def test_describe_configs_lists_every_config_with_its_default_and_source() -> None:
    world = _world()
    world.create(new_topic("t", rf=3, configs={"cleanup.policy": "compact"}))
    request = DescribeConfigsRequest(resources=(
        DescribeConfigsRequestResource(resource_type=TOPIC, resource_name="t"),
    ), include_synonyms=True)
    (answer,) = world.run(describe_configs, request, 4).response.results
    configs = {c.name: c for c in answer.configs}
    assert set(configs) == set(TOPIC_CONFIGS)
    for name, definition in TOPIC_CONFIGS.items():
        if name in ("cleanup.policy", "min.insync.replicas"):
            continue
        assert (configs[name].value, configs[name].config_source) == (definition.default, 5), name
        assert configs[name].config_type == definition.kind
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == (
        "compact", 1,
    )
    assert configs["min.cleanable.dirty.ratio"].config_type == 6  # DOUBLE
    ratio = configs["min.cleanable.dirty.ratio"].synonyms
    assert [(s.name, s.source) for s in ratio] == [("log.cleaner.min.cleanable.ratio", 5)]
    throttled = configs["leader.replication.throttled.replicas"].synonyms
    assert [(s.name, s.source) for s in throttled] == [("leader.replication.throttled.replicas", 5)]
