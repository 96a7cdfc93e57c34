"""Per-log settings, with Kafka's topic-config defaults."""

from __future__ import annotations

import attrs

__all__ = ["LogConfig"]


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


def _positive_or_unlimited(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value <= 0 and value != -1:
        raise ValueError(f"{attribute.name} must be positive or -1 (unlimited), got {value}")


@attrs.frozen(kw_only=True)
class LogConfig:
    """Settings of one log.

    ``segment_bytes`` (``segment.bytes``): roll to a new segment when an append
    would grow the active one past this size.  ``retention_bytes`` /
    ``retention_ms`` (``retention.bytes`` / ``retention.ms``; -1 = unlimited)
    bound what ``maybe_apply_retention`` keeps.  ``index_interval_bytes``
    (``index.interval.bytes``): bytes between sparse offset-index entries.
    ``max_message_bytes`` (``max.message.bytes``): the largest batch accepted.
    ``verify_closed_segments_on_open``: check every batch's header and CRC of
    every segment when the log opens (not only the tail), so corruption in the
    middle of the log stops the open instead of being served later.
    """

    segment_bytes: int = attrs.field(default=1073741824, validator=_positive)
    retention_bytes: int = attrs.field(default=-1, validator=_positive_or_unlimited)
    retention_ms: int = attrs.field(default=604800000, validator=_positive_or_unlimited)
    index_interval_bytes: int = attrs.field(default=4096, validator=_positive)
    max_message_bytes: int = attrs.field(default=1048588, validator=_positive)
    verify_closed_segments_on_open: bool = True
