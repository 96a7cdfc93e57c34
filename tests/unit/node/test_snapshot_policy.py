"""When a node snapshots its image: after N bytes, or after an interval with new records."""

from __future__ import annotations

import pytest

from quorum.node.snapshot_policy import SnapshotPolicy, SnapshotReason


def test_bytes_since_the_last_snapshot_make_one_due_at_the_limit() -> None:
    policy = SnapshotPolicy(max_bytes=100, max_interval_ms=0)
    assert policy.replayed(60, now_ms=0) is None
    assert policy.replayed(39, now_ms=1) is None
    assert policy.replayed(1, now_ms=2) is SnapshotReason.BYTES
    policy.reset(now_ms=2)
    assert policy.bytes_since == 0
    assert policy.replayed(99, now_ms=3) is None


def test_the_interval_makes_one_due_once_records_arrive_after_it() -> None:
    policy = SnapshotPolicy(max_bytes=10**9, max_interval_ms=1_000)
    # the clock starts at the first replay, not at 0
    assert policy.replayed(10, now_ms=5_000) is None
    assert policy.replayed(10, now_ms=5_999) is None
    assert policy.replayed(10, now_ms=6_000) is SnapshotReason.TIME
    policy.reset(now_ms=6_000)
    # nothing new replayed: nothing to snapshot, however long it has been
    assert policy.replayed(0, now_ms=60_000) is None
    assert policy.replayed(1, now_ms=60_001) is SnapshotReason.TIME


def test_an_interval_of_zero_turns_the_time_rule_off() -> None:
    policy = SnapshotPolicy(max_bytes=10**9, max_interval_ms=0)
    assert policy.replayed(10, now_ms=0) is None
    assert policy.replayed(10, now_ms=10**12) is None


def test_a_loaded_snapshot_restarts_both_counts() -> None:
    policy = SnapshotPolicy(max_bytes=100, max_interval_ms=1_000)
    assert policy.replayed(90, now_ms=0) is None
    policy.reset(now_ms=900)
    assert policy.replayed(90, now_ms=1_500) is None
    assert policy.replayed(10, now_ms=1_600) is SnapshotReason.BYTES


@pytest.mark.parametrize(("max_bytes", "max_interval_ms"), [(0, 10), (10, -1)])
def test_limits_out_of_range_are_broken_invariants(max_bytes: int, max_interval_ms: int) -> None:
    with pytest.raises(AssertionError):
        SnapshotPolicy(max_bytes=max_bytes, max_interval_ms=max_interval_ms)
