"""Pull replication, the high watermark, divergence and long-poll fetches."""

from __future__ import annotations

import attrs
import pytest

from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.raft import RaftCore
from quorum.raft.rpc import ErrorCode, FetchAnswer
from quorum.raft.states import Follower, Leader, Unattached
from quorum.wire.messages import FetchRequest, FetchResponse
from quorum.wire.records import build_batch_from_values, iter_batches

from .builders import (
    begin_epoch_request,
    fetch_request,
    make_leader,
    new_core,
    reply,
    requests_in,
    response_to,
    vote_request,
)
from .harness import TEST_CONFIG, Cluster


def old_log(records: int, epoch: int = 1) -> MemoryLog:
    log = MemoryLog()
    for _ in range(records):
        log.append(build_batch_from_values([b"old"]), epoch=epoch)
    log.flush()
    return log


def records_from(log: MemoryLog, start: int, end: int) -> bytes:
    return bytes(log.read(start, 1 << 20, max_offset=end).records)


# -- the high watermark -------------------------------------------------------------------


def test_the_high_watermark_needs_a_majority_in_the_leaders_own_epoch() -> None:
    core = new_core(1, log=old_log(3))  # offsets 0..2 from epoch 1
    core.poll(0)
    make_leader(core)
    assert core.epoch == 2 and core.log.log_end_offset == 4  # + the LeaderChange record
    core.flushed(core.log.flush(), 10_000)
    # voter 2 has all of epoch 1, but nothing of epoch 2: nothing may be exposed yet
    core.handle(fetch_request(2, 2, offset=3, last_epoch=1), 10_001)
    assert core.high_watermark is None
    ready = core.handle(fetch_request(2, 2, offset=4, last_epoch=2), 10_002)
    assert core.high_watermark == 4
    assert ready.committed is not None and (ready.committed.start, ready.committed.end) == (0, 4)


def test_the_leaders_own_offset_counts_only_once_flushed() -> None:
    core = new_core(1, voters=(1,))
    core.flushed(core.log.flush(), 0)
    ready = core.poll(0)
    ready = core.flushed(core.log.flush(), 0)
    assert core.high_watermark == 1
    ready = core.propose([b"a"], 1)
    assert ready.flush_log and core.log.log_end_offset == 2
    assert core.high_watermark == 1  # appended, not durable yet
    ready = core.flushed(core.log.flush(), 2)
    assert core.high_watermark == 2 and ready.committed is not None and ready.committed.end == 2


def test_the_high_watermark_never_decreases() -> None:
    core = new_core(1)
    make_leader(core)
    core.flushed(core.log.flush(), 10_000)
    core.handle(fetch_request(2, 1, offset=1, last_epoch=1), 10_000)
    core.propose([b"a", b"b"], 10_000)
    core.flushed(core.log.flush(), 10_000)
    core.handle(fetch_request(2, 1, offset=3, last_epoch=1), 10_001)
    assert core.high_watermark == 3
    core.handle(fetch_request(2, 1, offset=1, last_epoch=1), 10_002)  # voter 2 truncated
    core.handle(fetch_request(3, 1, offset=1, last_epoch=1), 10_003)
    assert core.high_watermark == 3


def test_observers_never_count_toward_the_high_watermark() -> None:
    cluster = Cluster([1, 2, 3], observers=[7, 8], seed=11)
    leader = cluster.elect()
    for node_id in (1, 2, 3):
        if node_id != leader.node_id:
            cluster.crash(node_id)
    hw = leader.high_watermark
    cluster.propose(leader.node_id, [b"lonely"])
    cluster.run_for(1_000)
    assert leader.high_watermark == hw
    assert cluster.nodes[7].log.log_end_offset == leader.log.log_end_offset  # observers have it


def test_observers_replicate_committed_records() -> None:
    cluster = Cluster([1, 2, 3], observers=[7], seed=12)
    leader = cluster.elect()
    cluster.propose(leader.node_id, [b"one", b"two"])
    assert cluster.run_until(lambda: cluster.committed_values(7) == [b"one", b"two"], 2_000)
    assert cluster.core(7).leader_id == leader.node_id


def test_a_follower_high_watermark_is_capped_by_its_own_log() -> None:
    core = new_core(2)
    ready = core.handle(begin_epoch_request(1, epoch=1), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    records = build_batch_from_values([b"a"], partition_leader_epoch=1)
    answer = FetchAnswer(leader_id=1, leader_epoch=1, high_watermark=10, records=records)
    ready = core.handle(reply(1, request_id, answer, "fetch"), 1)
    assert core.log.log_end_offset == 1 and core.high_watermark == 1


def test_a_follower_fetches_again_only_after_its_log_is_durable() -> None:
    core = new_core(2)
    ready = core.handle(begin_epoch_request(1, epoch=1), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    records = build_batch_from_values([b"a", b"b"], partition_leader_epoch=1)
    ready = core.handle(reply(1, request_id, FetchAnswer(leader_id=1, leader_epoch=1, records=records), "fetch"), 1)
    assert ready.flush_log
    ((destination, _, fetch),) = requests_in(ready, FetchRequest)
    assert destination == 1 and ready.send == ()
    assert fetch.topics[0].partitions[0].fetch_offset == 2


def test_batches_from_a_future_epoch_are_not_appended() -> None:
    core = new_core(2)
    ready = core.handle(begin_epoch_request(1, epoch=1), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    records = build_batch_from_values([b"a"], partition_leader_epoch=1) + build_batch_from_values(
        [b"b"], base_offset=1, partition_leader_epoch=5
    )
    core.handle(reply(1, request_id, FetchAnswer(leader_id=1, leader_epoch=1, records=records), "fetch"), 1)
    assert core.log.log_end_offset == 1


# -- divergence ----------------------------------------------------------------------


def test_the_leader_answers_a_diverged_fetch_with_diverging_epoch() -> None:
    core = new_core(1, log=old_log(2, epoch=1))
    make_leader(core)  # epoch 2, starts at offset 2
    request = fetch_request(2, 2, offset=5, last_epoch=1, max_wait_ms=500)
    answer = response_to(core.handle(request, 10_001), request)
    assert answer.diverging_epoch == OffsetAndEpoch(2, 1)
    assert len(answer.records) == 0


def test_a_diverged_follower_truncates_and_converges() -> None:
    cluster = Cluster([1, 2, 3], seed=21)
    old = cluster.elect()
    cluster.propose(old.node_id, [b"a"])
    cluster.run_for(50)
    others = [n for n in (1, 2, 3) if n != old.node_id]
    cluster.network.isolate(old.node_id, (1, 2, 3))
    cluster.propose(old.node_id, [b"lost-1", b"lost-2"])  # never reaches a majority
    assert cluster.run_until(lambda: (lead := cluster.leader()) is not None and lead.node_id in others, 20_000)
    new = cluster.leader()
    assert new is not None
    cluster.propose(new.node_id, [b"c"])
    cluster.run_for(50)
    cluster.network.heal()
    assert cluster.run_until(lambda: cluster.committed_values(old.node_id) == [b"a", b"c"], 10_000)
    truncations = [r.truncated_to for r in cluster.nodes[old.node_id].readies if r.truncated_to is not None]
    assert truncations, "the old leader never truncated its uncommitted tail"
    for node_id in (1, 2, 3):
        assert cluster.committed_values(node_id) == [b"a", b"c"]


def test_truncating_below_the_high_watermark_is_a_broken_invariant() -> None:
    core = new_core(2)
    ready = core.handle(begin_epoch_request(1, epoch=1), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    records = build_batch_from_values([b"a", b"b"], partition_leader_epoch=1)
    ready = core.handle(
        reply(1, request_id, FetchAnswer(leader_id=1, leader_epoch=1, high_watermark=2, records=records), "fetch"), 1
    )
    assert core.high_watermark == 2
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    bad = FetchAnswer(leader_id=1, leader_epoch=1, high_watermark=2, diverging_epoch=OffsetAndEpoch(0, 0))
    with pytest.raises(AssertionError, match="below the high watermark"):
        core.handle(reply(1, request_id, bad, "fetch"), 2)


# -- long poll -------------------------------------------------------------------------


def leader_with_parked_fetch() -> tuple[object, object]:
    core = new_core(1)
    make_leader(core)
    core.flushed(core.log.flush(), 10_000)
    core.handle(fetch_request(2, 1, offset=1, last_epoch=1), 10_000)  # HW = 1 now
    request = fetch_request(2, 1, offset=1, last_epoch=1, max_wait_ms=500)
    ready = core.handle(request, 10_001)
    assert response_to(ready, request) is None, "a fetch with nothing new should be parked"
    return core, request


def test_a_parked_fetch_is_completed_as_soon_as_new_data_exists() -> None:
    core, request = leader_with_parked_fetch()
    ready = core.propose([b"new"], 10_002)  # type: ignore[attr-defined]
    answer = response_to(ready, request)
    assert answer is not None and data_values_of(answer.records) == [b"new"]
    # served before the leader's own flush
    assert ready.flush_log and any(getattr(m, "reply_to", None) == request.handle for m in ready.send)


def data_values_of(records: bytes | memoryview) -> list[bytes | None]:
    return [
        r.value for batch in iter_batches(records) if not batch.header.is_control for r in batch.records
    ]


def test_a_parked_fetch_expires_empty_after_its_max_wait() -> None:
    core, request = leader_with_parked_fetch()
    assert response_to(core.poll(10_500), request) is None  # type: ignore[attr-defined]
    answer = response_to(core.poll(10_501), request)  # type: ignore[attr-defined]
    assert answer is not None and answer.partition_error == ErrorCode.NONE and len(answer.records) == 0
    assert answer.high_watermark == 1


def test_parked_fetches_fail_when_the_leader_steps_down() -> None:
    core, request = leader_with_parked_fetch()
    vote = vote_request(3, epoch=2, last_epoch=1, last_offset=1)
    ready = core.handle(vote, 10_100)  # type: ignore[attr-defined]
    assert isinstance(core.state, Unattached)  # type: ignore[attr-defined]
    answer = response_to(ready, request)
    assert answer.partition_error == ErrorCode.NOT_LEADER_OR_FOLLOWER and answer.leader_epoch == 2


def _leader_with_news_for_voter_2(notice_ms: int) -> RaftCore:
    core = new_core(1, config=attrs.evolve(TEST_CONFIG, high_watermark_notice_ms=notice_ms))
    make_leader(core)
    core.flushed(core.log.flush(), 10_000)
    core.handle(fetch_request(3, 1, offset=1, last_epoch=1), 10_000)  # HW moves to 1
    return core


def test_without_a_notice_wait_a_fetcher_that_missed_a_new_high_watermark_is_answered_at_once(
) -> None:
    core = _leader_with_news_for_voter_2(notice_ms=0)
    # voter 2 has never been told: its idle fetch is answered rather than parked
    request = fetch_request(2, 1, offset=1, last_epoch=1, max_wait_ms=500)
    answer = response_to(core.handle(request, 10_001), request)
    assert answer is not None and answer.high_watermark == 1


def test_news_of_a_high_watermark_waits_the_notice_time_for_records_then_goes_alone() -> None:
    core = _leader_with_news_for_voter_2(notice_ms=5)
    request = fetch_request(2, 1, offset=1, last_epoch=1, max_wait_ms=500)
    assert response_to(core.handle(request, 10_001), request) is None
    assert response_to(core.poll(10_005), request) is None
    answer = response_to(core.poll(10_006), request)  # 5 ms, not the 500 ms max wait
    assert answer is not None and answer.high_watermark == 1 and len(answer.records) == 0


def test_news_of_a_high_watermark_rides_on_records_that_come_within_the_notice_time() -> None:
    core = _leader_with_news_for_voter_2(notice_ms=5)
    request = fetch_request(2, 1, offset=1, last_epoch=1, max_wait_ms=500)
    assert response_to(core.handle(request, 10_001), request) is None
    answer = response_to(core.propose([b"next"], 10_003), request)
    assert answer is not None and answer.high_watermark == 1
    assert data_values_of(answer.records) == [b"next"]


def test_a_parked_fetch_hears_of_a_new_high_watermark_within_the_notice_time() -> None:
    core = new_core(1, config=attrs.evolve(TEST_CONFIG, high_watermark_notice_ms=5))
    make_leader(core)  # its own copy not flushed: voters 2 and 3 will make the majority
    parked = fetch_request(2, 1, offset=0, last_epoch=0, max_wait_ms=500)
    core.handle(parked, 10_000)  # gets the LeaderChange record, then parks at offset 1
    parked = fetch_request(2, 1, offset=1, last_epoch=1, max_wait_ms=500)
    assert response_to(core.handle(parked, 10_001), parked) is None
    assert core.high_watermark is None
    core.handle(fetch_request(3, 1, offset=1, last_epoch=1), 10_002)  # HW moves to 1
    assert core.high_watermark == 1
    assert response_to(core.poll(10_006), parked) is None
    answer = response_to(core.poll(10_007), parked)
    assert answer is not None and answer.high_watermark == 1


# -- fetch validation ------------------------------------------------------------------


def test_fetch_errors_follow_kafkas_rules() -> None:
    core = new_core(1)
    make_leader(core)  # epoch 1
    cases = [
        (fetch_request(2, 0), ErrorCode.FENCED_LEADER_EPOCH),
        (fetch_request(2, 2), ErrorCode.UNKNOWN_LEADER_EPOCH),
        (fetch_request(2, 1, offset=-1), ErrorCode.INVALID_REQUEST),
        (fetch_request(2, 1, last_epoch=2), ErrorCode.INVALID_REQUEST),
        (fetch_request(2, 1, max_wait_ms=-1), ErrorCode.INVALID_REQUEST),
    ]
    for request, error in cases:
        answer = response_to(core.handle(request, 10_001), request)
        assert answer.partition_error == error
        assert (answer.leader_id, answer.leader_epoch) == (1, 1)
    request = fetch_request(2, 1, cluster_id="another")
    assert response_to(core.handle(request, 10_001), request).error == ErrorCode.INCONSISTENT_CLUSTER_ID


def test_a_follower_asked_for_records_names_its_leader() -> None:
    core = new_core(2)
    core.handle(begin_epoch_request(1, epoch=3), 0)
    request = fetch_request(7, 3)
    answer = response_to(core.handle(request, 1), request)
    assert answer.partition_error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (answer.leader_id, answer.leader_epoch) == (1, 3)


def test_a_fetch_for_another_partition_is_an_invalid_request() -> None:
    core = new_core(1)
    make_leader(core)
    request = fetch_request(2, 1)
    message = request.message
    topic = message.topics[0]
    wrong = type(request)(request.handle, type(message)(
        replica_state=message.replica_state,
        topics=(type(topic)(topic_id=topic.topic_id, partitions=(type(topic.partitions[0])(partition=3),)),),
    ))
    ready = core.handle(wrong, 10_001)
    response = next(m.message for m in ready.send if getattr(m, "reply_to", None) == request.handle)
    assert isinstance(response, FetchResponse) and response.error_code == ErrorCode.INVALID_REQUEST


# -- failures --------------------------------------------------------------------------


def test_committed_records_survive_a_leader_crash_that_loses_its_unflushed_tail() -> None:
    cluster = Cluster([1, 2, 3], seed=31)
    leader = cluster.elect()
    cluster.propose(leader.node_id, [b"a", b"b"])
    cluster.run_for(50)
    committed = cluster.committed_values(leader.node_id)
    assert committed == [b"a", b"b"]
    cluster.crash(leader.node_id, reset_connections=True)
    new = cluster.elect()
    cluster.propose(new.node_id, [b"c"])
    cluster.restart(leader.node_id)
    assert cluster.run_until(
        lambda: all(cluster.committed_values(n) == [b"a", b"b", b"c"] for n in (1, 2, 3)), 10_000
    )


def test_a_node_that_was_leader_restarts_resigned_and_never_votes_in_that_epoch() -> None:
    cluster = Cluster([1, 2, 3], seed=41)
    leader = cluster.elect()
    node_id, epoch = leader.node_id, leader.epoch
    cluster.crash(node_id)
    cluster.restart(node_id)
    restarted = cluster.core(node_id)
    assert restarted.role == "Resigned" and restarted.epoch == epoch
    other = next(n for n in (1, 2, 3) if n != node_id)
    request = vote_request(other, epoch=epoch, last_epoch=epoch, last_offset=100)
    answer = response_to(restarted.handle(request, cluster.now_ms), request)
    assert answer.vote_granted is False
    assert cluster.run_until(lambda: isinstance(restarted.state, Follower | Leader), 10_000)
    assert restarted.epoch > epoch


def test_a_follower_cuts_at_its_own_end_of_the_diverging_epoch() -> None:
    log = MemoryLog()
    for epoch in (1, 1, 3, 3):  # epoch 3 starts at offset 2 here
        log.append(build_batch_from_values([b"v"]), epoch=epoch)
    log.flush()
    core = new_core(2, log=log)
    ready = core.handle(begin_epoch_request(1, epoch=4), 0)
    ((_, request_id, fetch),) = requests_in(ready, FetchRequest)
    assert fetch.topics[0].partitions[0].last_fetched_epoch == 3
    # the leader never had epoch 3; it had epoch 1 up to offset 4
    answer = FetchAnswer(leader_id=1, leader_epoch=4, diverging_epoch=OffsetAndEpoch(4, 1))
    ready = core.handle(reply(1, request_id, answer, "fetch"), 1)
    assert core.log.log_end_offset == 2 and ready.truncated_to == 2
    ((_, _, refetch),) = requests_in(ready, FetchRequest)
    assert (refetch.topics[0].partitions[0].fetch_offset, refetch.topics[0].partitions[0].last_fetched_epoch) == (2, 1)
