"""NodeActivity: stalls, slices of work, controller event times, records applied, and the
rate-limited warning for slices over their bounds."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from quorum.metrics import ImageSize, NodeActivity
from tests.unit.test_layering import ROOT, imported_top_levels

ACTIVITY_LOGGER = "quorum.metrics.activity"


def test_the_bookkeeping_imports_neither_trio_nor_a_clock() -> None:
    for module in ("activity.py", "windows.py"):
        path: Path = ROOT / "quorum" / "metrics" / module
        assert imported_top_levels(path) & {"trio", "time", "asyncio", "datetime"} == set()


def test_the_longest_stall_of_the_last_minute_and_of_all_time() -> None:
    activity = NodeActivity()
    activity.record_stall(0.002, 10.0)
    activity.record_stall(0.350, 20.5)
    activity.record_stall(0.004, 30.0)
    early = activity.snapshot(31.0)
    assert (early.max_stall_ms_1m, early.max_stall_ms) == (350.0, 350.0)
    late = activity.snapshot(81.0)  # the 350 ms stall was more than a minute ago
    assert (late.max_stall_ms_1m, late.max_stall_ms) == (4.0, 350.0)


def test_slices_are_counted_and_their_largest_kept_per_kind() -> None:
    activity = NodeActivity()
    activity.record_slice("replay", 1000, 0.012, 5.0)
    activity.record_slice("replay", 400, 0.030, 6.0)
    activity.record_slice("snapshot-write", 1000, 0.020, 6.0)
    activity.record_slice("replay", 10, 0.001, 70.0)
    snapshot = activity.snapshot(70.0)
    assert list(snapshot.slices) == ["replay", "snapshot-write"]
    replay = snapshot.slices["replay"]
    assert (replay.count, replay.units_total, replay.over_bound) == (3, 1410, 0)
    assert (replay.max_units, replay.max_ms) == (1000, 30.0)
    # the 1,000-record and 30 ms slices are older than a minute by now
    assert (replay.max_units_1m, replay.max_ms_1m) == (10, 1.0)
    assert snapshot.slices["snapshot-write"].count == 1


def test_a_slice_over_a_bound_is_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    activity = NodeActivity(unit_bound=1000, slice_warn_ms=50)
    caplog.set_level(logging.WARNING, logger=ACTIVITY_LOGGER)
    activity.record_slice("replay", 1000, 0.050, 1.0)  # at the bounds: fine
    assert caplog.records == []
    activity.record_slice("replay", 1001, 0.001, 2.0)
    activity.record_slice("digest", 10, 0.051, 2.0)
    assert [r.getMessage().split(" slice")[0] for r in caplog.records] == ["replay", "digest"]
    assert "1001 units took 1.0 ms (bounds: 1000 units, 50 ms)" in caplog.records[0].getMessage()
    over = {kind: s.over_bound for kind, s in activity.snapshot(2.0).slices.items()}
    assert over == {"replay": 1, "digest": 1}


def test_a_flood_of_slow_slices_logs_one_line_per_kind_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    activity = NodeActivity(warn_interval_s=5.0)
    activity.set_image_size(topics=10_000, partitions=100_000, brokers=3)
    caplog.set_level(logging.WARNING, logger=ACTIVITY_LOGGER)
    for i in range(100):  # one slow slice every 100 ms for 10 s
        activity.record_slice("controller-op", 5000, 0.2, 100.0 + i / 10)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2  # at 100.0 s and 105.0 s
    assert "image of 10000 topics, 100000 partitions, 3 brokers" in lines[0]
    assert "more" not in lines[0]
    assert lines[1].endswith("; 49 more controller-op slices over the bounds since the last such line")
    assert activity.snapshot(110.0).slices["controller-op"].over_bound == 100


def test_controller_event_times_keep_count_sum_max_and_recent_quantiles() -> None:
    activity = NodeActivity(reservoir_size=100)
    empty = activity.snapshot(0.0).event_queue_time
    assert (empty.count, empty.sum_ms, empty.max_ms) == (0, 0.0, 0.0)
    assert all(math.isnan(ms) for _, ms in empty.quantiles)
    activity.record_controller_event(queue_ms=900.0, processing_ms=1.0, now_s=0.0)
    for i in range(1, 101):  # the ring keeps these 100, not the 900 ms one
        activity.record_controller_event(queue_ms=float(i), processing_ms=2.0, now_s=10.0)
    snapshot = activity.snapshot(60.5)  # the 900 ms event is a minute old
    queue = snapshot.event_queue_time
    assert (queue.count, queue.sum_ms) == (101, 900.0 + 5050.0)
    assert dict(queue.quantiles) == {0.5: 50.0, 0.95: 95.0, 0.99: 99.0}
    assert (queue.max_ms, queue.max_ms_1m) == (900.0, 100.0)
    processing = snapshot.event_processing_time
    assert (processing.count, processing.sum_ms, processing.max_ms) == (101, 201.0, 2.0)


def test_records_applied_give_a_total_and_a_rate_over_the_last_ten_seconds() -> None:
    activity = NodeActivity()
    for second in range(20):  # 1,000 records a second, in slices of 100
        for tenth in range(10):
            activity.record_applied(100, 500.0 + second + tenth / 10)
    snapshot = activity.snapshot(520.0)
    assert snapshot.records_applied_total == 20_000
    assert snapshot.records_applied_per_second == pytest.approx(1000.0, rel=0.01)
    assert activity.snapshot(531.0).records_applied_per_second == 0.0


def test_the_image_size_is_unknown_until_set() -> None:
    activity = NodeActivity()
    assert activity.snapshot(0.0).image_size is None
    activity.set_image_size(topics=2, partitions=7, brokers=3)
    assert activity.snapshot(0.0).image_size == ImageSize(topics=2, partitions=7, brokers=3)
