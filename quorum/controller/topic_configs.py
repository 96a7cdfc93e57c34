"""Topic configs: validation, and how a topic's effective value is resolved.

The table of every Kafka 4.x topic config (type, default, valid values,
broker synonym, and the values pykraft refuses because it cannot honour
them) is ``topic_config_defs``. Besides each value, a topic's whole set is
checked (``check_topic_configs``): Kafka's min.compaction.lag.ms <=
max.compaction.lag.ms, and the second safety rule below. Brokers resolve
the same values for their partition logs (``broker.replica.config``).

Resolution order (Kafka's ``KafkaConfigSchema.resolveEffectiveTopicConfig``):
the topic's own ConfigRecord, then the cluster-wide dynamic broker config
(BROKER resource "") under the broker synonym, then the controller's static
setting for the few synonyms ``ControllerConfig`` carries, then Kafka's default.
Per-broker dynamic configs (BROKER "<id>") do not change topic configs here:
the controller resolves topics for the cluster, not for one node.

Two choices differ from Kafka, both for safety (ARCHITECTURE.md section 6):
- ``min.insync.replicas`` defaults to a majority of the topic's replication
  factor when ``ControllerConfig.min_insync_replicas`` is None (Kafka: 1);
  CreateTopics writes it as an explicit topic config (see replication_control).
- ``min.insync.replicas`` larger than the topic's replication factor is refused
  with INVALID_CONFIG wherever the factor is known (CreateTopics, topic
  IncrementalAlterConfigs). Kafka accepts it, and then every acks=all produce
  fails with NOT_ENOUGH_REPLICAS: a setting nobody wants on purpose. The
  cluster-wide broker default is not checked (it has no replication factor),
  nor is a later reassignment that shrinks the factor.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import attrs

from quorum.controller.image import ConfigResource, ConfigResourceType, MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.controller.topic_config_defs import (
    MIN_INSYNC_REPLICAS,
    TOPIC_CONFIGS,
    UNCLEAN_LEADER_ELECTION_ENABLE,
    ConfigKind,
    TopicConfigDef,
    compaction_lag_problem,
    value_problem,
)

__all__ = [
    "BROKER_CONFIGS",
    "CLUSTER_DEFAULT",
    "MIN_INSYNC_REPLICAS",
    "TOPIC_CONFIGS",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "ConfigKind",
    "ConfigSource",
    "ConfigValue",
    "TopicConfigDef",
    "check_min_insync_replicas",
    "check_topic_configs",
    "majority",
    "resolve_topic_configs",
    "static_broker_value",
    "topic_config_value",
    "unclean_election_enabled",
    "validate_config_value",
]

# the BROKER resource that holds cluster-wide dynamic defaults
CLUSTER_DEFAULT: Final = ConfigResource(ConfigResourceType.BROKER, "")


class ConfigSource(enum.IntEnum):
    """DescribeConfigs / CreateTopics ConfigSource codes."""

    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@attrs.frozen(kw_only=True)
class ConfigValue:
    """One resolved config: its value and where the value came from."""

    name: str
    value: str
    source: ConfigSource
    kind: ConfigKind
    doc: str
    # (source, broker-or-topic key, value), most specific first (DescribeConfigs synonyms)
    synonyms: tuple[tuple[ConfigSource, str, str], ...] = ()


# dynamic broker configs pykraft accepts: the broker synonyms of the topic configs (Kafka's
# DynamicLogConfig: the first synonym of each; the configs without one have none)
BROKER_CONFIGS: Final[Mapping[str, TopicConfigDef]] = {
    d.broker_key: d for d in TOPIC_CONFIGS.values() if d.broker_key is not None
}


def validate_config_value(
    table: Mapping[str, TopicConfigDef], name: str, value: str | None
) -> str | None:
    """A user-facing reason why ``name=value`` is not acceptable, or None if it is."""
    definition = table.get(name)
    if definition is None:
        known = ", ".join(sorted(table))
        return f"Unknown config name: {name} (known: {known})"
    if value is None:
        return f"Null value not supported for config {name}"
    problem = value_problem(definition, value)
    if problem is None:
        return None
    return f"Invalid value {value} for configuration {name}: {problem}"


def majority(replication_factor: int) -> int:
    return replication_factor // 2 + 1


def check_min_insync_replicas(configs: Mapping[str, str], replication_factor: int) -> str | None:
    """pykraft's extra rule: a topic's min.insync.replicas may not exceed its RF."""
    text = configs.get(MIN_INSYNC_REPLICAS)
    if text is None or int(text.strip()) <= replication_factor:
        return None
    return (
        f"min.insync.replicas ({text.strip()}) is larger than the replication factor "
        f"({replication_factor}): every acks=all produce would fail with NOT_ENOUGH_REPLICAS"
    )


def check_topic_configs(configs: Mapping[str, str], replication_factor: int | None) -> str | None:
    """The checks across a topic's configs (all of it, after a change): Kafka's
    min.compaction.lag.ms <= max.compaction.lag.ms, then pykraft's min.insync.replicas
    <= replication factor where the factor is known."""
    problem = compaction_lag_problem(configs)
    if problem is not None or replication_factor is None:
        return problem
    return check_min_insync_replicas(configs, replication_factor)


def static_broker_value(broker_key: str, config: ControllerConfig) -> str | None:
    """The controller's own setting of a broker key, where ControllerConfig has one."""
    if broker_key == MIN_INSYNC_REPLICAS and config.min_insync_replicas is not None:
        return str(config.min_insync_replicas)
    if broker_key == UNCLEAN_LEADER_ELECTION_ENABLE:
        return str(config.unclean_leader_election_enable).lower()
    return None


def _static_value(name: str, config: ControllerConfig, replication_factor: int) -> str | None:
    if name == MIN_INSYNC_REPLICAS and config.min_insync_replicas is None:
        return str(majority(replication_factor))
    broker_key = TOPIC_CONFIGS[name].broker_key
    return None if broker_key is None else static_broker_value(broker_key, config)


def _resolve_one(
    definition: TopicConfigDef,
    overrides: Mapping[str, str],
    cluster: Mapping[str, str],
    config: ControllerConfig,
    replication_factor: int,
) -> ConfigValue:
    chain: list[tuple[ConfigSource, str, str]] = []
    if definition.name in overrides:
        chain.append((ConfigSource.TOPIC_CONFIG, definition.name, overrides[definition.name]))
    if definition.broker_key is not None and definition.broker_key in cluster:
        chain.append((
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            definition.broker_key,
            cluster[definition.broker_key],
        ))
    static = _static_value(definition.name, config, replication_factor)
    # a static setting that equals Kafka's default reads as the default: the
    # controller cannot tell whether the properties file named it
    if static is not None and static != definition.default:
        chain.append((ConfigSource.STATIC_BROKER_CONFIG, definition.default_key, static))
    chain.append((ConfigSource.DEFAULT_CONFIG, definition.default_key, definition.default))
    source, _key, value = chain[0]
    return ConfigValue(
        name=definition.name, value=value, source=source, kind=definition.kind,
        doc=definition.doc, synonyms=tuple(chain),
    )


def resolve_topic_configs(
    image: MetadataImage,
    overrides: Mapping[str, str],
    config: ControllerConfig,
    replication_factor: int,
) -> list[ConfigValue]:
    """Every known topic config of a topic with ``overrides``, sorted by name."""
    cluster = image.configs.get(CLUSTER_DEFAULT, {})
    return [
        _resolve_one(TOPIC_CONFIGS[name], overrides, cluster, config, replication_factor)
        for name in sorted(TOPIC_CONFIGS)
    ]


def topic_config_value(
    image: MetadataImage, topic: str, name: str, config: ControllerConfig
) -> str:
    """The effective value of one config of an existing topic."""
    found = image.topic(topic)
    first = None if found is None else found.partitions.get(0)
    replication_factor = 1 if first is None else len(first.replicas) - len(first.removing_replicas)
    cluster = image.configs.get(CLUSTER_DEFAULT, {})
    overrides = image.topic_configs(topic)
    return _resolve_one(TOPIC_CONFIGS[name], overrides, cluster, config, replication_factor).value


def unclean_election_enabled(image: MetadataImage, topic: str, default: bool = False) -> bool:
    """Whether automatic unclean leader election is allowed for ``topic``.

    ``default`` stands for the controller's static unclean.leader.election.enable.
    Kafka parses the value with Boolean.parseBoolean: anything but "true" is false.
    """
    value = image.topic_configs(topic).get(UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        value = image.configs.get(CLUSTER_DEFAULT, {}).get(UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        return default
    return value.strip().lower() == "true"
