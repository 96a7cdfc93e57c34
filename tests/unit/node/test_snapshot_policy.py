"""When a node snapshots its image (after N bytes, or after an interval with new records),
and the time its snapshot carries (the last replayed batch's, for metadata.max.retention.ms)."""

from __future__ import annotations

import random
from typing import cast

import attrs
import pytest

from quorum.controller.controller import QuorumController
from quorum.controller.digest import image_digest
from quorum.controller.snapshot import read_snapshot, read_snapshot_records, write_snapshot
from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.node.controller_machine import ControllerMachine
from quorum.node.snapshot_policy import (
    MIN_RECORDS_BETWEEN_SNAPSHOTS,
    SnapshotPolicy,
    SnapshotReason,
)
from quorum.raft import LeaderAndEpoch, OffsetRange, RaftCore, Ready
from quorum.raft.snapshots import snapshot_timestamp_ms
from tests.unit.broker.records import append_records, fold, metadata_version, register, topic
from tests.unit.controller.cluster_world import CONFIG
from tests.unit.node.machines import observe_and_work


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


def test_more_records_since_the_last_snapshot_than_the_image_holds_make_one_due() -> None:
    policy = SnapshotPolicy(max_bytes=10**12, max_interval_ms=0)
    image_records = 50_000
    asked: list[int] = []

    def size() -> int:
        asked.append(1)
        return image_records

    # below the floor the image's size is not even asked
    assert policy.replayed(10, 0, records=MIN_RECORDS_BETWEEN_SNAPSHOTS - 1,
                           image_records=size) is None
    assert asked == []
    assert policy.replayed(10, 1, records=image_records - MIN_RECORDS_BETWEEN_SNAPSHOTS,
                           image_records=size) is None
    assert policy.replayed(10, 2, records=2, image_records=size) is SnapshotReason.RECORDS
    policy.reset(now_ms=2)
    assert policy.records_since == 0
    # a small image: the floor decides
    image_records = 10
    assert policy.replayed(10, 3, records=MIN_RECORDS_BETWEEN_SNAPSHOTS - 1,
                           image_records=size) is None
    assert policy.replayed(10, 4, records=1, image_records=size) is SnapshotReason.RECORDS


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


# -- the time of a snapshot's last record (metadata.max.retention.ms reads it) ---------------


class CommittedCore:
    """What a machine uses of a core that committed the whole log: the log, the role and
    ``create_snapshot`` (the real core refuses ids above what it committed)."""

    state = None  # no election state: not the leader
    epoch = 3
    high_watermark = None
    next_append_offset = None  # not the leader: nothing to append

    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> bool:
        return self.log.create_snapshot(snapshot_id, data)


def test_an_image_snapshot_carries_the_time_it_is_given_outside_the_image() -> None:
    image = fold([metadata_version(), topic("orders")])
    stamps: dict[int, object] = {}
    for timestamp in (1_700_000_000_000, 5):
        log = MemoryLog()
        append_records(log, [metadata_version(), topic("orders")], epoch=1)
        core = cast(RaftCore, CommittedCore(log))
        snapshot_id = OffsetAndEpoch(2, 1)
        assert core.create_snapshot(
            snapshot_id, write_snapshot(image, last_contained_timestamp_ms=timestamp)
        )
        header, _ = read_snapshot_records(log.read_snapshot(snapshot_id))
        assert header.last_contained_log_timestamp == timestamp
        assert snapshot_timestamp_ms(log, snapshot_id) == timestamp  # what the cleaner reads
        loaded = read_snapshot(log.read_snapshot(snapshot_id), snapshot_id)
        stamps[timestamp] = (loaded.provenance, image_digest(loaded))
    # the time is no part of the image: equal images, equal provenance and digest
    assert len(set(stamps.values())) == 1


def test_the_controller_stamps_its_snapshot_with_the_last_replayed_batch_time() -> None:
    log = MemoryLog()
    append_records(log, [metadata_version(), register(1, 1)], epoch=3, timestamp=1_000)
    append_records(log, [topic("orders")], epoch=3, timestamp=2_500)
    core = cast(RaftCore, CommittedCore(log))
    machine = ControllerMachine(QuorumController(CONFIG, rng=random.Random(0)),
                                snapshot_max_bytes=1)
    committed = Ready(leader=LeaderAndEpoch(1, 3), role="Follower", committed=OffsetRange(0, 3))
    observe_and_work(machine, committed, core, 0)
    assert log.snapshot_ids() == [OffsetAndEpoch(3, 3)]
    assert snapshot_timestamp_ms(log, OffsetAndEpoch(3, 3)) == 2_500
    # a controller that starts from that snapshot stamps its next one with the next batch's time
    append_records(log, [topic("payments")], epoch=3, timestamp=4_000)
    again = ControllerMachine(QuorumController(CONFIG, rng=random.Random(0)),
                              snapshot_max_bytes=1)
    loaded = Ready(leader=LeaderAndEpoch(1, 3), role="Follower",
                   loaded_snapshot=OffsetAndEpoch(3, 3))
    observe_and_work(again, loaded, core, 0)
    assert again.controller.committed.provenance.offset == 3
    observe_and_work(again, attrs.evolve(committed, committed=OffsetRange(3, 4)), core, 0)
    assert snapshot_timestamp_ms(log, OffsetAndEpoch(4, 3)) == 4_000
