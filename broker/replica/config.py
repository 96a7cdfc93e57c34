"""The settings the replica core reads: broker-wide ones and a topic's own.

Kafka's names and defaults (``replica.lag.time.max.ms`` 30 s, ``replica.fetch.*``,
``min.insync.replicas`` 1, ``message.max.bytes`` 1048588). A topic's effective
config is resolved as Kafka's broker does (its ``LogConfig`` from the topic's
overrides over the broker's current config): for each topic config, the
topic's own value (ConfigRecord), then this broker's dynamic config
(BROKER "<id>"), then the cluster-wide dynamic one (BROKER ""), both under
the broker synonym, then the broker's static setting, then Kafka's default.
The controller validated every value it wrote (``quorum.controller.
topic_config_defs``), so they are trusted here; one that does not parse
anyway (written by another version) falls back to the next source.

``TopicConfig`` carries what the produce path checks (``min.insync.replicas``,
``max.message.bytes``, ``message.timestamp.*``, whether ``cleanup.policy``
compacts) and ``log``, the partition logs' ``LogConfig`` (retention, rolling,
and the cleaner's settings: ``cleanup.policy``,
``delete.retention.ms``, ``min.cleanable.dirty.ratio``,
``min/max.compaction.lag.ms``), which the core hands to the log directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from quorum.config.schema import InvalidValue
from quorum.controller.topic_config_defs import TOPIC_CONFIGS, parse_config_value
from quorum.log.config import LogConfig

__all__ = ["ReplicaConfig", "TopicConfig", "topic_config"]

LONG_MAX: Final = 2**63 - 1


@attrs.frozen(kw_only=True)
class ReplicaConfig:
    broker_id: int
    # a follower not caught up for this long leaves the ISR
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_max_bytes: int = 1_048_576  # per partition, at least one batch (KIP-74)
    replica_fetch_response_max_bytes: int = 10_485_760
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1_000
    max_incremental_fetch_session_cache_slots: int = 1_000
    # pykraft's bound: a follower's fetch session takes at most this many new partitions
    # per request (Kafka puts them all in the first), so no fetch is read or applied in one
    # step of 30,000 partitions (a partition read and answered costs 100-200 us: 250 keep a
    # step near 50 ms, also on a machine three times slower than the one measured)
    max_partitions_joining_per_fetch: int | None = 250
    # Kafka's AlterPartitionManager retries a failed request after 50 ms (hard-coded)
    alter_partition_retry_backoff_ms: int = 50
    # broker-level topic defaults
    min_insync_replicas: int = 1
    message_max_bytes: int = 1_048_588
    log_append_time: bool = False  # log.message.timestamp.type=LogAppendTime
    # the broker's static log.* settings: the defaults of its partition logs' configs
    data_log: LogConfig = attrs.field(factory=LogConfig)
    # idempotent producers idle this long are forgotten (Kafka's producer.id.expiration.ms
    # and producer.id.expiration.check.interval.ms)
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000

    @property
    def isr_check_interval_ms(self) -> int:
        """How often the leader looks for lagging followers (Kafka: half the lag time)."""
        return max(1, self.replica_lag_time_max_ms // 2)


@attrs.frozen(kw_only=True)
class TopicConfig:
    min_insync_replicas: int = 1
    max_message_bytes: int = 1_048_588
    log_append_time: bool = False
    # cleanup.policy has compact: a record without a key is refused (Kafka's LogValidator)
    compacted: bool = False
    # message.timestamp.before/after.max.ms: bounds on CreateTime timestamps around now
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = LONG_MAX
    log: LogConfig = attrs.field(factory=LogConfig)

    @property
    def checks_records(self) -> bool:
        """Whether a produced batch's records must be read one by one (Kafka reads every
        record; pykraft only when a record-level rule can refuse one)."""
        bounded = (
            self.timestamp_before_max_ms < LONG_MAX or self.timestamp_after_max_ms < LONG_MAX
        )
        return self.compacted or (bounded and not self.log_append_time)


def _static_values(defaults: ReplicaConfig) -> dict[str, object]:
    """The broker's static settings, by topic config name (the rest: Kafka's defaults)."""
    log = defaults.data_log
    return {
        "min.insync.replicas": defaults.min_insync_replicas,
        "max.message.bytes": defaults.message_max_bytes,
        "message.timestamp.type": "LogAppendTime" if defaults.log_append_time else "CreateTime",
        "segment.bytes": log.segment_bytes,
        "segment.ms": log.segment_ms,
        "segment.jitter.ms": log.segment_jitter_ms,
        "segment.index.bytes": log.segment_index_bytes,
        "retention.bytes": log.retention_bytes,
        "retention.ms": log.retention_ms,
        "index.interval.bytes": log.index_interval_bytes,
        "flush.messages": log.flush_messages,
        "flush.ms": log.flush_ms,
    }


def _value(
    name: str,
    overrides: Mapping[str, str],
    dynamic: Mapping[str, str],
    static: Mapping[str, object],
) -> object:
    definition = TOPIC_CONFIGS[name]
    texts = [overrides.get(name)]
    if definition.broker_key is not None:
        texts.append(dynamic.get(definition.broker_key))
    for text in texts:
        if text is not None:
            try:
                return parse_config_value(definition, text)
            except InvalidValue:
                continue
    if name in static:
        return static[name]
    return parse_config_value(definition, definition.default)


def topic_config(
    overrides: Mapping[str, str],
    defaults: ReplicaConfig,
    dynamic: Mapping[str, str] | None = None,
) -> TopicConfig:
    """A topic's effective settings: its own configs (``overrides``) over the broker's
    dynamic configs (``dynamic``, by broker key: this broker's over the cluster's) over
    its static ones (``defaults``)."""
    static = _static_values(defaults)
    dynamic = dynamic or {}

    def get(name: str) -> object:
        return _value(name, overrides, dynamic, static)

    def integer(name: str) -> int:
        value = get(name)
        assert isinstance(value, int), f"{name}={value!r}"
        return value

    policy = get("cleanup.policy")
    assert isinstance(policy, list)
    policies = {p.lower() for p in policy}
    ratio = get("min.cleanable.dirty.ratio")
    assert isinstance(ratio, float)
    log = attrs.evolve(
        defaults.data_log,
        segment_bytes=integer("segment.bytes"),
        segment_ms=integer("segment.ms"),
        segment_jitter_ms=integer("segment.jitter.ms"),
        segment_index_bytes=integer("segment.index.bytes"),
        retention_bytes=integer("retention.bytes"),
        retention_ms=integer("retention.ms"),
        index_interval_bytes=integer("index.interval.bytes"),
        max_message_bytes=integer("max.message.bytes"),
        flush_messages=integer("flush.messages"),
        flush_ms=integer("flush.ms"),
        compact="compact" in policies,
        delete="delete" in policies,
        delete_retention_ms=integer("delete.retention.ms"),
        min_cleanable_dirty_ratio=ratio,
        min_compaction_lag_ms=integer("min.compaction.lag.ms"),
        max_compaction_lag_ms=integer("max.compaction.lag.ms"),
        file_delete_delay_ms=integer("file.delete.delay.ms"),
    )
    return TopicConfig(
        min_insync_replicas=integer("min.insync.replicas"),
        max_message_bytes=log.max_message_bytes,
        log_append_time=get("message.timestamp.type") == "LogAppendTime",
        compacted=log.compact,
        timestamp_before_max_ms=integer("message.timestamp.before.max.ms"),
        timestamp_after_max_ms=integer("message.timestamp.after.max.ms"),
        log=log,
    )
