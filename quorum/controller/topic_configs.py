"""The topic configs pykraft knows: names, types, Kafka's defaults, validation,
and how a topic's effective value is resolved.

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
from collections.abc import Callable, Mapping
from typing import Final

import attrs

from quorum.config.schema import BOOLEAN, INT, LONG, InvalidValue, csv_entries
from quorum.controller.image import ConfigResource, ConfigResourceType, MetadataImage
from quorum.controller.results import ControllerConfig

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
    "majority",
    "resolve_topic_configs",
    "static_broker_value",
    "topic_config_value",
    "unclean_election_enabled",
    "validate_config_value",
]

MIN_INSYNC_REPLICAS: Final = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE: Final = "unclean.leader.election.enable"
# the BROKER resource that holds cluster-wide dynamic defaults
CLUSTER_DEFAULT: Final = ConfigResource(ConfigResourceType.BROKER, "")


class ConfigKind(enum.IntEnum):
    """DescribeConfigs ConfigType codes (Kafka's ConfigDef.Type)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    LIST = 7


class ConfigSource(enum.IntEnum):
    """DescribeConfigs / CreateTopics ConfigSource codes."""

    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@attrs.frozen(kw_only=True)
class TopicConfigDef:
    name: str
    kind: ConfigKind
    default: str
    broker_key: str
    doc: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()


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


_DAY_MS: Final = 24 * 60 * 60 * 1000

_DEFS: Final = (
    TopicConfigDef(
        name="cleanup.policy", kind=ConfigKind.LIST, default="delete",
        broker_key="log.cleanup.policy", choices=("compact", "delete"),
        doc="How old segments are discarded: delete (retention) and/or compact.",
    ),
    TopicConfigDef(
        name="compression.type", kind=ConfigKind.STRING, default="producer",
        broker_key="compression.type",
        choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        doc="Compression of stored batches; producer keeps the producer's codec.",
    ),
    TopicConfigDef(
        name="max.message.bytes", kind=ConfigKind.INT, default=str(1024 * 1024 + 12),
        broker_key="message.max.bytes", minimum=0,
        doc="Largest record batch the topic accepts, in bytes.",
    ),
    TopicConfigDef(
        name="message.timestamp.type", kind=ConfigKind.STRING, default="CreateTime",
        broker_key="log.message.timestamp.type", choices=("CreateTime", "LogAppendTime"),
        doc="Whether record timestamps are the producer's or the broker's append time.",
    ),
    TopicConfigDef(
        name=MIN_INSYNC_REPLICAS, kind=ConfigKind.INT, default="1",
        broker_key=MIN_INSYNC_REPLICAS, minimum=1,
        doc="ISR size below which acks=all produces fail with NOT_ENOUGH_REPLICAS.",
    ),
    TopicConfigDef(
        name="retention.bytes", kind=ConfigKind.LONG, default="-1",
        broker_key="log.retention.bytes",
        doc="Partition size above which old segments are deleted (-1: no limit).",
    ),
    TopicConfigDef(
        name="retention.ms", kind=ConfigKind.LONG, default=str(7 * _DAY_MS),
        broker_key="log.retention.ms", minimum=-1,
        doc="Age after which old segments are deleted (-1: no limit).",
    ),
    TopicConfigDef(
        name="segment.bytes", kind=ConfigKind.INT, default=str(1024 * 1024 * 1024),
        broker_key="log.segment.bytes", minimum=14,
        doc="Size at which a new log segment is rolled, in bytes.",
    ),
    TopicConfigDef(
        name="segment.ms", kind=ConfigKind.LONG, default=str(7 * _DAY_MS),
        broker_key="log.roll.ms", minimum=1,
        doc="Age at which a new log segment is rolled.",
    ),
    TopicConfigDef(
        name=UNCLEAN_LEADER_ELECTION_ENABLE, kind=ConfigKind.BOOLEAN, default="false",
        broker_key=UNCLEAN_LEADER_ELECTION_ENABLE,
        doc="Whether a replica outside the ISR may become leader (may lose data).",
    ),
)

TOPIC_CONFIGS: Final[Mapping[str, TopicConfigDef]] = {d.name: d for d in _DEFS}
# dynamic broker configs pykraft accepts: the broker synonyms of the topic configs
BROKER_CONFIGS: Final[Mapping[str, TopicConfigDef]] = {d.broker_key: d for d in _DEFS}

_PARSERS: Final[dict[ConfigKind, Callable[[str], object]]] = {
    ConfigKind.BOOLEAN: BOOLEAN,
    ConfigKind.INT: INT,
    ConfigKind.LONG: LONG,
    ConfigKind.STRING: str,
    ConfigKind.LIST: csv_entries,
}


def _problem(definition: TopicConfigDef, text: str) -> str | None:
    try:
        value = _PARSERS[definition.kind](text.strip())
    except InvalidValue as exc:
        return str(exc)
    if definition.minimum is not None and isinstance(value, int) and value < definition.minimum:
        return f"Value must be at least {definition.minimum}"
    entries = value if isinstance(value, list) else [value]
    if definition.choices and any(e not in definition.choices for e in entries):
        return f"String must be one of: {', '.join(definition.choices)}"
    return None


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
    problem = _problem(definition, value)
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
    return static_broker_value(TOPIC_CONFIGS[name].broker_key, config)


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
    if definition.broker_key in cluster:
        chain.append((
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            definition.broker_key,
            cluster[definition.broker_key],
        ))
    static = _static_value(definition.name, config, replication_factor)
    # a static setting that equals Kafka's default reads as the default: the
    # controller cannot tell whether the properties file named it
    if static is not None and static != definition.default:
        chain.append((ConfigSource.STATIC_BROKER_CONFIG, definition.broker_key, static))
    chain.append((ConfigSource.DEFAULT_CONFIG, definition.broker_key, definition.default))
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
