"""Timing and size settings of the Raft core, with Kafka's defaults.

The names are Kafka's ``controller.quorum.*`` settings without the prefix
(``metadata_max_retention_bytes`` is Kafka's ``metadata.max.retention.bytes``);
the driver maps a ``.properties`` file onto this class once, at the boundary.
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = [
    "DEFAULT_FETCH_MAX_WAIT_MS",
    "DEFAULT_HIGH_WATERMARK_NOTICE_MS",
    "DEFAULT_LOG_CLEANER_INTERVAL_MS",
    "DEFAULT_MAX_BATCH_RECORDS",
    "DEFAULT_METADATA_MAX_RETENTION_BYTES",
    "DEFAULT_METADATA_MAX_RETENTION_MS",
    "MAX_BATCH_SIZE_BYTES",
    "OBSERVER_SESSION_TIMEOUT_MS",
    "RaftConfig",
]

# Hard-coded in Kafka's KRaft client, not settings.
DEFAULT_FETCH_MAX_WAIT_MS: Final = 500
MAX_BATCH_SIZE_BYTES: Final = 8 * 1024 * 1024
OBSERVER_SESSION_TIMEOUT_MS: Final = 300_000
DEFAULT_METADATA_MAX_RETENTION_BYTES: Final = 100 * 1024 * 1024
DEFAULT_METADATA_MAX_RETENTION_MS: Final = 7 * 24 * 3600 * 1000
DEFAULT_LOG_CLEANER_INTERVAL_MS: Final = 60_000
DEFAULT_HIGH_WATERMARK_NOTICE_MS: Final = 5
DEFAULT_MAX_BATCH_RECORDS: Final = 1000


def _positive(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


def _retention(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < -1:
        raise ValueError(f"{attribute.name} must be -1 (no limit) or at least 0, got {value}")


def _not_negative(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must not be negative, got {value}")


@attrs.frozen(kw_only=True)
class RaftConfig:
    """Timeouts in milliseconds; the election timeout is drawn from [T, 2T)."""

    election_timeout_ms: int = attrs.field(default=1000, validator=_positive)
    fetch_timeout_ms: int = attrs.field(default=2000, validator=_positive)
    election_backoff_max_ms: int = attrs.field(default=1000, validator=_positive)
    request_timeout_ms: int = attrs.field(default=2000, validator=_positive)
    retry_backoff_ms: int = attrs.field(default=20, validator=_not_negative)
    append_linger_ms: int = attrs.field(default=25, validator=_not_negative)
    # pykraft's: how long a replica's news of a higher high watermark may wait for
    # records to ride along with (0: sent at once, as Kafka does). A lone writer's
    # next record usually comes within it, which saves each follower a round trip
    # per commit; an idle replica hears of the high watermark this much later.
    high_watermark_notice_ms: int = attrs.field(
        default=DEFAULT_HIGH_WATERMARK_NOTICE_MS, validator=_not_negative
    )
    fetch_max_wait_ms: int = attrs.field(default=DEFAULT_FETCH_MAX_WAIT_MS, validator=_not_negative)
    fetch_max_bytes: int = attrs.field(default=MAX_BATCH_SIZE_BYTES, validator=_positive)
    max_batch_size_bytes: int = attrs.field(default=MAX_BATCH_SIZE_BYTES, validator=_positive)
    # pykraft's: at most this many records per batch the leader writes, so a reader
    # decodes and replays one batch within one bounded slice of its thread's work
    # (quorum.controller.slicing). Kafka caps a controller batch at 10,000 records.
    max_batch_records: int = attrs.field(default=DEFAULT_MAX_BATCH_RECORDS, validator=_positive)
    # The MaxBytes of a follower's FetchSnapshot request: the chunk size of a
    # snapshot download. Kafka sends its MAX_FETCH_SIZE_BYTES (8 MiB) here; it
    # is not a setting in the Kafka sources we read.
    fetch_snapshot_max_bytes: int = attrs.field(default=MAX_BATCH_SIZE_BYTES, validator=_positive)
    # Kafka's metadata.max.retention.bytes: while the log plus its snapshots
    # hold more bytes than this, the oldest snapshot goes and the log start
    # moves to the next one; the latest snapshot is always kept. -1: no limit.
    metadata_max_retention_bytes: int = attrs.field(
        default=DEFAULT_METADATA_MAX_RETENTION_BYTES, validator=_retention
    )
    # Kafka's metadata.max.retention.ms: a snapshot whose last contained record is
    # older than this goes too (with the log before the next one), the latest never.
    # Compared with the core's clock, which stamps the leader's batches. -1: no limit.
    metadata_max_retention_ms: int = attrs.field(
        default=DEFAULT_METADATA_MAX_RETENTION_MS, validator=_retention
    )
    # How often that rule is applied. Kafka's raft client checks every 60 s
    # (hard-coded); between checks a snapshot that a follower is downloading
    # stays, which is what lets a download finish while new snapshots appear.
    log_cleaner_interval_ms: int = attrs.field(
        default=DEFAULT_LOG_CLEANER_INTERVAL_MS, validator=_positive
    )
    # Item 2 of the Raft issue: how long a follower whose connection to the
    # leader failed waits per rank step before it starts a pre-vote.
    fast_failover_step_ms: int = attrs.field(default=50, validator=_not_negative)
    fast_failover_enabled: bool = True

    @property
    def check_quorum_timeout_ms(self) -> int:
        """A leader with no fetch from a majority for this long resigns."""
        return self.fetch_timeout_ms * 3 // 2

    @property
    def begin_quorum_interval_ms(self) -> int:
        """BeginQuorumEpoch is re-sent to voters silent for this long."""
        return self.fetch_timeout_ms // 2
