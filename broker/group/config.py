"""The group coordinator's settings, with Kafka's names and defaults.

The broker maps its server config onto this class (``group.*``,
``offsets.*``, ``offset.metadata.max.bytes``); the coordinator itself never
reads a properties file.  Defaults are Kafka 4.x's (GroupCoordinatorConfig).
"""

from __future__ import annotations

import attrs

__all__ = ["GroupCoordinatorConfig"]


@attrs.frozen(kw_only=True)
class GroupCoordinatorConfig:
    """Kafka's classic-group and offset settings; the docstring names each key."""

    # group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    # group.initial.rebalance.delay.ms: how long a new group waits for more members
    initial_rebalance_delay_ms: int = 3_000
    # group.max.size
    max_size: int = 2**31 - 1
    # Kafka's internal new-member join timeout: a parked JoinGroup of a member
    # without an id cannot heartbeat, so it is dropped after this long
    new_member_join_timeout_ms: int = 300_000
    # offsets.retention.minutes, in ms (7 days)
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
    # offset.metadata.max.bytes (Kafka compares the string's length in chars)
    offset_metadata_max_bytes: int = 4096
    # offsets.topic.num.partitions: the group -> partition mapping depends on it
    offsets_topic_num_partitions: int = 50

    def __attrs_post_init__(self) -> None:
        if not 0 < self.min_session_timeout_ms <= self.max_session_timeout_ms:
            raise ValueError(
                "group.min.session.timeout.ms must be positive and at most "
                f"group.max.session.timeout.ms ({self.min_session_timeout_ms} > "
                f"{self.max_session_timeout_ms})"
            )
        if self.offsets_topic_num_partitions < 1:
            raise ValueError("offsets.topic.num.partitions must be at least 1")
        if self.max_size < 1:
            raise ValueError("group.max.size must be at least 1")
