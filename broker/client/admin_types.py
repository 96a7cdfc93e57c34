"""What the admin client takes and returns, with Kafka's names.

Arguments: ``NewTopic``, ``NewPartitions``, ``ConfigResource``,
``AlterConfigOp``, ``ElectionType``, and the offset specs of
``list_offsets`` (``OffsetSpec.EARLIEST`` / ``LATEST`` / ``MAX_TIMESTAMP``
or a timestamp). Results: ``TopicDescription`` (with
``PartitionDescription``s), ``ClusterDescription``, ``ConfigEntry``,
``PartitionReassignment``, ``LogDirDescription`` (with ``ReplicaLogInfo``).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from typing import Final

import attrs

from broker.client.cluster import BrokerInfo

__all__ = [
    "AlterConfigOp",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "ElectionType",
    "LogDirDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "OpType",
    "PartitionDescription",
    "PartitionReassignment",
    "ReplicaLogInfo",
    "ResourceType",
    "TopicDescription",
]


class OffsetSpec:
    """The special timestamps of ListOffsets (any other value: by time)."""

    LATEST: Final = -1
    EARLIEST: Final = -2
    MAX_TIMESTAMP: Final = -3


class ResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type codes on the wire."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class OpType(enum.IntEnum):
    """IncrementalAlterConfigs operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7

    @classmethod
    def of(cls, code: int) -> ConfigSource:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class ElectionType(enum.IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


@attrs.frozen(kw_only=True)
class NewTopic:
    """A topic to create; -1 partitions or replication factor: the broker's default.

    With ``replica_assignments`` (partition -> broker ids) the partition count
    and replication factor come from it and must stay -1, as in Kafka.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignments: Mapping[int, tuple[int, ...]] = attrs.field(factory=dict)
    configs: Mapping[str, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.replica_assignments and (self.num_partitions != -1 or self.replication_factor != -1):
            raise ValueError(
                f"topic {self.name}: give either replica_assignments or num_partitions and "
                "replication_factor, not both"
            )


@attrs.frozen(kw_only=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (new ones placed as given, or by the controller)."""

    total_count: int
    new_assignments: tuple[tuple[int, ...], ...] | None = None


@attrs.frozen
class ConfigResource:
    type: ResourceType
    name: str


@attrs.frozen
class AlterConfigOp:
    name: str
    value: str | None
    op: OpType = OpType.SET


@attrs.frozen(kw_only=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_read_only: bool = False
    is_sensitive: bool = False
    is_default: bool = False


@attrs.frozen(kw_only=True)
class PartitionDescription:
    partition: int
    leader: BrokerInfo | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@attrs.frozen(kw_only=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]


@attrs.frozen(kw_only=True)
class ClusterDescription:
    cluster_id: str | None
    controller: BrokerInfo | None
    brokers: tuple[BrokerInfo, ...]


@attrs.frozen(kw_only=True)
class PartitionReassignment:
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@attrs.frozen(kw_only=True)
class ReplicaLogInfo:
    size: int
    offset_lag: int
    is_future: bool


@attrs.frozen(kw_only=True)
class LogDirDescription:
    path: str
    error: str | None
    replicas: Mapping[tuple[str, int], ReplicaLogInfo]
    total_bytes: int = -1
    usable_bytes: int = -1
