"""Per-log settings, with Kafka's topic-config names and defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from quorum.config import ServerConfig

__all__ = ["LogConfig", "data_log_config"]

_LONG_MAX = 2**63 - 1


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


def _not_negative(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be at least 0, got {value}")


def _at_least_minus_one(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < -1:
        raise ValueError(f"{attribute.name} must be at least 0 or -1 (unlimited), got {value}")


def _ratio(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be between 0 and 1, got {value}")


def _at_least_4(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 4:
        raise ValueError(f"{attribute.name} must be at least 4, got {value}")


@attrs.frozen(kw_only=True)
class LogConfig:
    """Settings of one log (the topic config; the broker's ``log.*`` keys are their defaults).

    ``segment_bytes`` (``segment.bytes``): roll to a new segment when an append
    would grow the active one past this size.  ``segment_ms`` /
    ``segment_jitter_ms`` (``segment.ms`` / ``segment.jitter.ms``; broker
    ``log.roll.ms`` / ``log.roll.jitter.ms``): roll once the active segment
    spans this long (see ``quorum.log.roll``).  ``segment_index_bytes``
    (``segment.index.bytes``, broker ``log.index.size.max.bytes``): the size an
    index may reach before the segment rolls.  ``retention_bytes`` /
    ``retention_ms`` (``retention.bytes`` / ``retention.ms``; negative = unlimited)
    bound what retention keeps.  ``index_interval_bytes``
    (``index.interval.bytes``): bytes between sparse offset- and time-index
    entries.  ``max_message_bytes`` (``max.message.bytes``): the largest batch
    accepted.  ``flush_messages`` / ``flush_ms`` (``flush.messages`` /
    ``flush.ms``; broker ``log.flush.interval.messages`` /
    ``log.flush.interval.ms``; Long.MAX_VALUE = never): when a data partition
    is due an fsync (``quorum.log.flush_policy``).
    ``compact`` / ``delete`` (``cleanup.policy``): whether the log cleaner
    compacts the log and whether retention deletes old segments (a log with
    neither keeps everything). For the cleaner: ``delete_retention_ms``
    (``delete.retention.ms``: how long tombstones stay), ``min_cleanable_dirty_ratio``,
    ``min_compaction_lag_ms`` and ``max_compaction_lag_ms`` (broker
    ``log.cleaner.*``). ``file_delete_delay_ms`` (``file.delete.delay.ms``) is
    kept for completeness: pykraft removes a deleted segment's files at once,
    since its reads run in the same thread as the deletion and none can still
    hold them (Kafka's delay exists for concurrent readers).
    ``verify_closed_segments_on_open``: check every batch's header and CRC of
    every segment when the log opens (not only the tail), so corruption in the
    middle of the log stops the open instead of being served later.
    """

    segment_bytes: int = attrs.field(default=1073741824, validator=_positive)
    segment_ms: int = attrs.field(default=604800000, validator=_positive)
    segment_jitter_ms: int = attrs.field(default=0, validator=_not_negative)
    segment_index_bytes: int = attrs.field(default=10485760, validator=_at_least_4)
    # any negative value is unlimited, as in Kafka
    retention_bytes: int = -1
    # 0 deletes every closed segment at the next check (Kafka allows it too)
    retention_ms: int = attrs.field(default=604800000, validator=_at_least_minus_one)
    index_interval_bytes: int = attrs.field(default=4096, validator=_not_negative)
    max_message_bytes: int = attrs.field(default=1048588, validator=_not_negative)
    flush_messages: int = attrs.field(default=_LONG_MAX, validator=_positive)
    flush_ms: int = attrs.field(default=_LONG_MAX, validator=_not_negative)
    compact: bool = False
    delete: bool = True
    delete_retention_ms: int = attrs.field(default=86_400_000, validator=_not_negative)
    min_cleanable_dirty_ratio: float = attrs.field(default=0.5, validator=_ratio)
    min_compaction_lag_ms: int = attrs.field(default=0, validator=_not_negative)
    max_compaction_lag_ms: int = attrs.field(default=_LONG_MAX, validator=_positive)
    file_delete_delay_ms: int = attrs.field(default=60_000, validator=_not_negative)
    verify_closed_segments_on_open: bool = True

    @property
    def max_segment_ms(self) -> int:
        """Kafka's ``maxSegmentMs``: a compacted log rolls by ``max.compaction.lag.ms`` too,
        so the cleaner (which never cleans the active segment) can meet that bound."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def max_offset_index_entries(self) -> int:
        """Entries of 8 bytes that fit in ``segment.index.bytes``."""
        return self.segment_index_bytes // 8

    @property
    def max_time_index_entries(self) -> int:
        """Entries of 12 bytes that fit in ``segment.index.bytes``."""
        return self.segment_index_bytes // 12


def data_log_config(server: ServerConfig) -> LogConfig:
    """A broker's default config for its data partitions, from its ``log.*`` keys (the
    server defaults of Kafka's topic configs; a topic's own configs override them).

    Closed segments are not verified on open: below its recovery point a data
    partition is trusted, as in Kafka (verifying would read every byte of
    every partition at broker start).
    """
    return LogConfig(
        segment_bytes=server.log_segment_bytes,
        segment_ms=server.log_roll_ms,
        segment_jitter_ms=server.log_roll_jitter_ms,
        segment_index_bytes=server.log_index_size_max_bytes,
        retention_bytes=server.log_retention_bytes,
        retention_ms=server.log_retention_ms,
        index_interval_bytes=server.log_index_interval_bytes,
        flush_messages=server.log_flush_interval_messages,
        flush_ms=server.log_flush_ms,
        verify_closed_segments_on_open=False,
    )
