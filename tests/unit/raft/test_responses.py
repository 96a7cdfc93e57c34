"""Requests in flight and the response rules every RPC shares (kraft-facts 1.1)."""

from __future__ import annotations

import pytest

from quorum.raft.requests import RequestTracker
from quorum.raft.rpc import ErrorCode, FetchAnswer, VoteAnswer
from quorum.raft.states import Follower, Prospective, Unattached
from quorum.wire.messages import FetchRequest, VoteRequest

from .builders import begin_epoch_request, new_core, reply, requests_in
from .harness import TEST_CONFIG


def following_core() -> tuple[object, int]:
    """Node 2 following node 1 in epoch 1, with its first fetch in flight."""
    core = new_core(2)
    ready = core.handle(begin_epoch_request(1, epoch=1), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    return core, request_id


def test_a_response_nobody_waits_for_is_dropped() -> None:
    core, request_id = following_core()
    stale = reply(1, request_id + 100, FetchAnswer(leader_id=3, leader_epoch=9), "fetch")
    ready = core.handle(stale, 1)  # type: ignore[attr-defined]
    assert core.epoch == 1 and ready.persist is None  # type: ignore[attr-defined]
    wrong_source = reply(3, request_id, FetchAnswer(leader_id=3, leader_epoch=9), "fetch")
    core.handle(wrong_source, 1)  # type: ignore[attr-defined]
    assert core.epoch == 1  # type: ignore[attr-defined]


def test_a_fenced_fetch_moves_the_follower_to_the_new_leader() -> None:
    core, request_id = following_core()
    answer = FetchAnswer(partition_error=ErrorCode.FENCED_LEADER_EPOCH, leader_id=3, leader_epoch=4)
    ready = core.handle(reply(1, request_id, answer, "fetch"), 1)  # type: ignore[attr-defined]
    assert isinstance(core.state, Follower) and (core.leader_id, core.epoch) == (3, 4)  # type: ignore[attr-defined]
    assert ready.persist is not None and ready.persist.leader_id == 3
    assert [d for d, _, _ in requests_in(ready, FetchRequest)] == [3]


def test_a_newer_epoch_without_a_leader_makes_the_node_unattached() -> None:
    core, request_id = following_core()
    answer = FetchAnswer(partition_error=ErrorCode.NOT_LEADER_OR_FOLLOWER, leader_id=-1, leader_epoch=2)
    core.handle(reply(1, request_id, answer, "fetch"), 1)  # type: ignore[attr-defined]
    assert isinstance(core.state, Unattached) and core.epoch == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "error", [ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.INVALID_VOTER_KEY]
)
def test_some_errors_only_mean_try_again_later(error: ErrorCode) -> None:
    core, request_id = following_core()
    answer = FetchAnswer(partition_error=error, leader_id=1, leader_epoch=1)
    ready = core.handle(reply(1, request_id, answer, "fetch"), 5)  # type: ignore[attr-defined]
    assert isinstance(core.state, Follower) and core.epoch == 1  # type: ignore[attr-defined]
    if error == ErrorCode.BROKER_NOT_AVAILABLE:
        assert requests_in(ready, FetchRequest) == []
        ready = core.poll(5 + TEST_CONFIG.retry_backoff_ms)  # type: ignore[attr-defined]
    assert [d for d, _, _ in requests_in(ready, FetchRequest)] == [1]


def test_an_invalid_request_answer_is_a_bug_in_this_node() -> None:
    core, request_id = following_core()
    answer = FetchAnswer(partition_error=ErrorCode.INVALID_REQUEST, leader_id=1, leader_epoch=1)
    with pytest.raises(AssertionError, match="bug"):
        core.handle(reply(1, request_id, answer, "fetch"), 1)  # type: ignore[attr-defined]


def test_an_answer_from_an_older_epoch_is_ignored() -> None:
    core = new_core(1)
    ready = core.poll(10_000)
    assert isinstance(core.state, Prospective)
    core.handle(begin_epoch_request(3, epoch=2), 10_001)
    (dest, request_id, _) = requests_in(ready, VoteRequest)[0]
    core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=0, vote_granted=True), "vote"), 10_002)
    assert isinstance(core.state, Follower) and core.epoch == 2


def test_a_timed_out_fetch_is_sent_again_after_the_retry_backoff() -> None:
    core, _ = following_core()
    timeout = TEST_CONFIG.request_timeout_ms
    # the follower's fetch timeout equals the request timeout here: push it away
    core.state.fetch_deadline_ms = 10**9  # type: ignore[attr-defined]
    ready = core.poll(timeout)  # type: ignore[attr-defined]
    assert requests_in(ready, FetchRequest) == []
    ready = core.poll(timeout + TEST_CONFIG.retry_backoff_ms)  # type: ignore[attr-defined]
    assert [d for d, _, _ in requests_in(ready, FetchRequest)] == [1]


def test_the_tracker_keeps_one_request_per_destination() -> None:
    tracker = RequestTracker(request_timeout_ms=100, retry_backoff_ms=10)
    first = tracker.sent(2, FetchRequest, 0)
    assert not tracker.can_send(2, 0) and tracker.can_send(3, 0)
    assert tracker.take_response(2, first, VoteRequest) is None  # wrong kind
    assert tracker.take_response(2, first + 1, FetchRequest) is None  # wrong id
    assert tracker.take_response(2, first, FetchRequest) is not None
    assert tracker.take_response(2, first, FetchRequest) is None  # only once
    second = tracker.sent(2, FetchRequest, 50)
    assert second != first
    assert tracker.next_deadline_ms() == 150
    assert [r.request_id for r in tracker.expire(150)] == [second]
    assert not tracker.can_send(2, 155) and tracker.can_send(2, 160)
    tracker.fail(3, 200)
    assert not tracker.can_send(3, 205)
