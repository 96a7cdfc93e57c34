"""Each partition log follows its topic's config: retention, cleanup.policy, rolling."""

from __future__ import annotations

import uuid
from pathlib import Path

import attrs

from quorum.log import FileLog, LogConfig, LogDirectory, OpenFiles, PartitionKey

from .batches import make_timed_batch

NOW = 1_700_000_000_000
HOUR_MS = 3_600_000
DEFAULT = LogConfig(
    segment_bytes=10_000, index_interval_bytes=0, verify_closed_segments_on_open=False
)
SHORT = attrs.evolve(DEFAULT, retention_ms=HOUR_MS)
ORDERS, AUDIT = PartitionKey(uuid.UUID(int=1), 0), PartitionKey(uuid.UUID(int=2), 0)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def _directory(path: Path, clock: Clock) -> LogDirectory:
    return LogDirectory(path, DEFAULT, files=OpenFiles(max_open=16), clock_ms=clock)


def _two_segments(log: FileLog, old_ms: int, new_ms: int) -> None:
    """An old closed segment (offsets 0-1) and an active one (offset 2)."""
    log.append(make_timed_batch([old_ms, old_ms]), epoch=1)
    log.roll()
    log.append(make_timed_batch([new_ms]), epoch=1)


def test_a_topics_retention_ms_deletes_its_old_segments_while_another_topic_keeps_its_own(
    tmp_path: Path,
) -> None:
    clock = Clock()
    directory = _directory(tmp_path, clock)
    directory.configure_topic("orders", SHORT, [0])
    orders = directory.create_log(ORDERS, ("orders", 0))
    audit = directory.create_log(AUDIT, ("audit", 0))
    for log in (orders, audit):
        _two_segments(log, NOW - 2 * HOUR_MS, NOW)
    assert orders.delete_old_segments(clock.now, high_watermark=3) == 1
    assert orders.log_start_offset == 2
    # the broker's default keeps seven days: the other topic's two-hour-old segment stays
    assert audit.delete_old_segments(clock.now, high_watermark=3) == 0
    assert audit.log_start_offset == 0


def test_a_retention_change_at_run_time_applies_to_the_open_log(tmp_path: Path) -> None:
    clock = Clock()
    directory = _directory(tmp_path, clock)
    audit = directory.create_log(AUDIT, ("audit", 0))
    _two_segments(audit, NOW - 2 * HOUR_MS, NOW)
    assert audit.delete_old_segments(clock.now, high_watermark=3) == 0
    directory.configure_topic("audit", SHORT, [0])
    assert audit.config == SHORT
    assert audit.delete_old_segments(clock.now, high_watermark=3) == 1
    # and back to the broker's default: no longer configured, logs made later use it
    directory.configure_topic("audit", DEFAULT, [0])
    assert directory.config_of("audit") == DEFAULT and audit.config == DEFAULT


def test_a_log_reopened_later_takes_its_topics_config(tmp_path: Path) -> None:
    clock = Clock()
    first = _directory(tmp_path, clock)
    _two_segments(first.create_log(ORDERS, ("orders", 0)), NOW - 2 * HOUR_MS, NOW)
    first.close()
    # a restart: the directory finds the log on disk before the image says its config
    again = _directory(tmp_path, clock)
    again.configure_topic("orders", SHORT, [0])
    log = again.open_log(ORDERS, ("orders", 0))
    assert log is not None and log.config == SHORT
    assert log.delete_old_segments(clock.now, high_watermark=3) == 1


def test_a_compact_only_topic_is_not_trimmed_by_time_or_size(tmp_path: Path) -> None:
    clock = Clock()
    directory = _directory(tmp_path, clock)
    compact = attrs.evolve(SHORT, retention_bytes=1, compact=True, delete=False)
    directory.configure_topic("orders", compact, [0])
    orders = directory.create_log(ORDERS, ("orders", 0))
    _two_segments(orders, NOW - 2 * HOUR_MS, NOW)
    assert orders.delete_old_segments(clock.now, high_watermark=3) == 0
    # compact,delete: retention applies as well
    directory.configure_topic("orders", attrs.evolve(compact, delete=True), [0])
    assert orders.delete_old_segments(clock.now, high_watermark=3) == 1


def test_a_compacted_log_rolls_by_max_compaction_lag(tmp_path: Path) -> None:
    clock = Clock()
    directory = _directory(tmp_path, clock)
    lagged = attrs.evolve(DEFAULT, compact=True, max_compaction_lag_ms=1_000)
    directory.configure_topic("orders", lagged, [0])
    orders = directory.create_log(ORDERS, ("orders", 0))
    orders.append(make_timed_batch([NOW]), epoch=1)
    orders.append(make_timed_batch([NOW + 1_001]), epoch=1)
    assert [s.base_offset for s in orders.segments] == [0, 1]
    directory.configure_topic("orders", attrs.evolve(lagged, compact=False), [0])
    orders.append(make_timed_batch([NOW + 2_500]), epoch=1)
    assert [s.base_offset for s in orders.segments] == [0, 1], "segment.ms (7 days) rules again"
