"""The leader's side of KIP-630: SnapshotId in Fetch answers, and FetchSnapshot served.

Kafka's KafkaRaftClientSnapshotTest, items 31-32 of kraft-facts 7.3.
"""

from __future__ import annotations

import pytest

from quorum.log import OffsetAndEpoch
from quorum.raft.rpc import ErrorCode
from quorum.raft.states import Leader, Resigned

from .builders import (
    begin_epoch_request,
    fetch_request,
    fetch_snapshot_request,
    make_leader,
    new_core,
    response_to,
)
from .harness import TEST_CONFIG
from .snapshot_builders import (
    CLEANING_CONFIG,
    NOW,
    commit_batches,
    epoch_log,
    leader_with_log_start,
)

# -- Fetch answered with the snapshot id ---------------------------------------------------


def test_a_fetch_below_the_log_start_is_answered_with_the_latest_snapshot_id() -> None:
    core = leader_with_log_start()
    start = core.log.log_start_offset
    request = fetch_request(2, 1, offset=start - 1, last_epoch=1)
    answer = response_to(core.handle(request, NOW), request)
    assert answer.snapshot_id == core.log.latest_snapshot_id == OffsetAndEpoch(start, 1)
    assert answer.records == b"" and answer.diverging_epoch is None
    assert answer.log_start_offset == start and answer.high_watermark == core.high_watermark


def test_a_fetch_at_offset_zero_is_answered_with_the_snapshot_id_when_one_exists() -> None:
    core = new_core(1)
    make_leader(core, NOW)
    commit_batches(core, 3)
    snapshot = OffsetAndEpoch(3, 1)
    assert core.create_snapshot(snapshot, b"state")
    assert core.log.log_start_offset == 0  # one snapshot: the log is kept whole
    request = fetch_request(3, 1, offset=0, last_epoch=0)
    assert response_to(core.handle(request, NOW), request).snapshot_id == snapshot


def test_a_fetch_at_the_log_start_with_the_snapshots_epoch_gets_records() -> None:
    core = leader_with_log_start()
    start = core.log.log_start_offset
    request = fetch_request(2, 1, offset=start, last_epoch=1)
    answer = response_to(core.handle(request, NOW), request)
    assert answer.snapshot_id is None and answer.diverging_epoch is None
    assert len(answer.records) > 0


def test_a_fetch_at_the_log_start_with_another_epoch_gets_the_snapshot_id() -> None:
    core = leader_with_log_start()
    start = core.log.log_start_offset
    request = fetch_request(2, 1, offset=start, last_epoch=0)
    assert response_to(core.handle(request, NOW), request).snapshot_id == OffsetAndEpoch(start, 1)


def test_a_last_fetched_epoch_older_than_the_oldest_snapshot_gets_the_snapshot_id() -> None:
    # epochs 1,1,2,2 then the leader's epoch 3: the snapshot ends in epoch 2
    core = new_core(1, log=epoch_log(1, 1, 2, 2), config=CLEANING_CONFIG)
    make_leader(core, NOW)
    commit_batches(core, 2)
    assert core.create_snapshot(OffsetAndEpoch(4, 2), b"a")
    assert core.create_snapshot(OffsetAndEpoch(5, 3), b"b")
    assert core.maybe_clean_log(now_ms=0) and core.log.log_start_offset == 5
    request = fetch_request(2, core.epoch, offset=6, last_epoch=1)
    assert response_to(core.handle(request, NOW), request).snapshot_id == OffsetAndEpoch(5, 3)


def test_a_fetch_that_diverges_at_the_oldest_snapshot_is_told_to_truncate_to_it() -> None:
    # epochs 2,2,2 then 4,4,4; the leader leads epoch 5; snapshot (3, 2) at the epoch change
    core = new_core(1, log=epoch_log(2, 2, 2, 4, 4, 4))
    make_leader(core, NOW)
    assert core.epoch == 5
    commit_batches(core, 1)
    assert core.create_snapshot(OffsetAndEpoch(3, 2), b"s")
    request = fetch_request(2, 5, offset=4, last_epoch=3)
    answer = response_to(core.handle(request, NOW), request)
    assert answer.diverging_epoch == OffsetAndEpoch(3, 2) and answer.snapshot_id is None


def test_a_last_fetched_epoch_above_the_leaders_epoch_is_an_invalid_request() -> None:
    core = leader_with_log_start()
    request = fetch_request(2, 1, offset=core.log.log_end_offset, last_epoch=2)
    assert response_to(core.handle(request, NOW), request).partition_error == ErrorCode.INVALID_REQUEST


def test_a_parked_fetch_waiting_at_the_new_log_start_is_completed_with_records() -> None:
    core = new_core(1, config=CLEANING_CONFIG)
    make_leader(core, NOW)
    commit_batches(core, 3)  # offsets 0..3
    catch_up = fetch_request(3, 1, offset=1, last_epoch=1, max_wait_ms=500)
    assert response_to(core.handle(catch_up, NOW), catch_up) is not None
    parked = fetch_request(3, 1, offset=4, last_epoch=1, max_wait_ms=500)
    assert response_to(core.handle(parked, NOW), parked) is None  # at the end: parked
    assert core.create_snapshot(OffsetAndEpoch(2, 1), b"a")
    assert core.create_snapshot(OffsetAndEpoch(4, 1), b"b")
    assert core.maybe_clean_log(now_ms=0)
    assert core.log.log_start_offset == 4 == core.log.log_end_offset
    answer = response_to(core.propose([b"x"], NOW), parked)
    assert answer is not None and answer.snapshot_id is None and len(answer.records) > 0


# -- FetchSnapshot served ---------------------------------------------------------------------


def test_a_leader_serves_a_whole_snapshot_in_one_response() -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    request = fetch_snapshot_request(2, 1, snapshot)
    answer = response_to(core.handle(request, NOW), request)
    data = core.log.read_snapshot(snapshot)
    assert (answer.error, answer.partition_error) == (ErrorCode.NONE, ErrorCode.NONE)
    assert answer.snapshot_id == snapshot and answer.size == len(data) and answer.position == 0
    assert answer.data == data
    assert (answer.leader_id, answer.leader_epoch) == (1, 1)


def test_a_leader_serves_a_snapshot_in_chunks_of_the_requested_max_bytes() -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    data = core.log.read_snapshot(snapshot)
    received = b""
    while len(received) < len(data):
        request = fetch_snapshot_request(2, 1, snapshot, position=len(received), max_bytes=4)
        answer = response_to(core.handle(request, NOW), request)
        assert answer.partition_error == ErrorCode.NONE and answer.size == len(data)
        assert answer.position == len(received) and 0 < len(answer.data) <= 4
        received += answer.data
    assert received == data


@pytest.mark.parametrize("snapshot", [OffsetAndEpoch(2, 1), OffsetAndEpoch(4, 9)])
def test_a_snapshot_the_leader_does_not_hold_is_not_found(snapshot: OffsetAndEpoch) -> None:
    core = leader_with_log_start()
    request = fetch_snapshot_request(2, 1, snapshot)
    answer = response_to(core.handle(request, NOW), request)
    assert answer.partition_error == ErrorCode.SNAPSHOT_NOT_FOUND
    assert (answer.leader_id, answer.leader_epoch) == (1, 1) and answer.data == b""


def test_the_bootstrap_snapshot_is_never_served() -> None:
    core = leader_with_log_start()
    core.log.create_snapshot(OffsetAndEpoch(0, 0), b"bootstrap voters")
    request = fetch_snapshot_request(2, 1, OffsetAndEpoch(0, 0))
    answer = response_to(core.handle(request, NOW), request)
    assert answer.partition_error == ErrorCode.SNAPSHOT_NOT_FOUND


@pytest.mark.parametrize(("topic", "partition"), [("other-topic", 0), ("__cluster_metadata", 1)])
def test_a_fetch_snapshot_for_another_partition_is_unknown(topic: str, partition: int) -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    request = fetch_snapshot_request(2, 1, snapshot, topic=topic, partition=partition)
    ready = core.handle(request, NOW)
    wire = next(m.message for m in ready.send if getattr(m, "reply_to", None) == request.handle)
    (wire_topic,) = wire.topics
    assert (wire_topic.name, wire_topic.partitions[0].index) == (topic, partition)
    assert wire_topic.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_follower_refuses_fetch_snapshot_and_names_the_leader() -> None:
    core = new_core(2)
    core.handle(begin_epoch_request(1, epoch=3), 0)
    request = fetch_snapshot_request(3, 3, OffsetAndEpoch(5, 1))
    answer = response_to(core.handle(request, 1), request)
    assert answer.partition_error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (answer.leader_id, answer.leader_epoch) == (1, 3)


@pytest.mark.parametrize("position", [-1, "size", "size+1"])
def test_a_position_outside_the_snapshot_is_out_of_range(position: int | str) -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    size = core.log.snapshot_size(snapshot)
    at = {"size": size, "size+1": size + 1}.get(position, position)  # type: ignore[call-overload]
    request = fetch_snapshot_request(2, 1, snapshot, position=at)
    answer = response_to(core.handle(request, NOW), request)
    assert answer.partition_error == ErrorCode.POSITION_OUT_OF_RANGE


@pytest.mark.parametrize(
    ("epoch", "error"),
    [(0, ErrorCode.FENCED_LEADER_EPOCH), (2, ErrorCode.UNKNOWN_LEADER_EPOCH)],
)
def test_a_fetch_snapshot_from_another_epoch_is_refused(epoch: int, error: ErrorCode) -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    request = fetch_snapshot_request(2, epoch, snapshot)
    answer = response_to(core.handle(request, NOW), request)
    assert answer.partition_error == error and (answer.leader_id, answer.leader_epoch) == (1, 1)


@pytest.mark.parametrize(("cluster_id", "ok"), [(None, True), ("pykraft-test-cluster", True), ("other", False), ("", False)])
def test_fetch_snapshot_checks_the_cluster_id(cluster_id: str | None, ok: bool) -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    request = fetch_snapshot_request(2, 1, snapshot, cluster_id=cluster_id)
    answer = response_to(core.handle(request, NOW), request)
    expected = ErrorCode.NONE if ok else ErrorCode.INCONSISTENT_CLUSTER_ID
    assert answer.error == expected


def test_fetch_snapshot_from_a_majority_of_voters_keeps_the_leader_in_office() -> None:
    core = leader_with_log_start()
    snapshot = core.log.latest_snapshot_id
    assert snapshot is not None
    now = NOW
    timeout = CLEANING_CONFIG.check_quorum_timeout_ms
    for _ in range(4):  # well past the check-quorum timeout
        now += timeout // 2
        core.handle(fetch_snapshot_request(2, 1, snapshot), now)
        assert isinstance(core.state, Leader)
    core.poll(now + timeout)  # then silence: it resigns
    assert isinstance(core.state, Resigned)


def test_a_fetch_snapshot_from_an_observer_does_not_count_for_check_quorum() -> None:
    core = new_core(1, voters=(1, 2, 3), config=CLEANING_CONFIG)
    make_leader(core, NOW)
    commit_batches(core, 2)
    core.create_snapshot(OffsetAndEpoch(3, 1), b"s")
    expiry = NOW + TEST_CONFIG.append_linger_ms + CLEANING_CONFIG.check_quorum_timeout_ms
    core.handle(fetch_snapshot_request(7, 1, OffsetAndEpoch(3, 1)), expiry - 1)
    core.poll(expiry)
    assert isinstance(core.state, Resigned)
