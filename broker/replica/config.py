"""The settings the replica core reads: broker-wide ones and a topic's own.

Kafka's names and defaults (``replica.lag.time.max.ms`` 30 s, ``replica.fetch.*``,
``min.insync.replicas`` 1, ``message.max.bytes`` 1048588). A topic's configs
(``min.insync.replicas``, ``max.message.bytes``, ``message.timestamp.type``)
override the broker's; the controller validated them when it wrote them, so
they are trusted here.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = ["ReplicaConfig", "TopicConfig", "topic_config"]


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

    @property
    def isr_check_interval_ms(self) -> int:
        """How often the leader looks for lagging followers (Kafka: half the lag time)."""
        return max(1, self.replica_lag_time_max_ms // 2)


@attrs.frozen(kw_only=True)
class TopicConfig:
    min_insync_replicas: int = 1
    max_message_bytes: int = 1_048_588
    log_append_time: bool = False


def topic_config(overrides: Mapping[str, str], defaults: ReplicaConfig) -> TopicConfig:
    """A topic's effective settings: its own configs over the broker's defaults."""
    timestamp_type = overrides.get("message.timestamp.type")
    return TopicConfig(
        min_insync_replicas=int(
            overrides.get("min.insync.replicas", defaults.min_insync_replicas)
        ),
        max_message_bytes=int(overrides.get("max.message.bytes", defaults.message_max_bytes)),
        log_append_time=(
            defaults.log_append_time
            if timestamp_type is None
            else timestamp_type == "LogAppendTime"
        ),
    )
