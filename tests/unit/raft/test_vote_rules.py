"""The grant table of kraft-facts 2.5, row by row: a standard vote and a pre-vote
from node 2 for epoch 2 with an up-to-date log, asked of node 1 in each state."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from quorum.raft.core import RaftCore
from quorum.raft.rpc import FetchAnswer
from quorum.raft.states import ElectionState
from quorum.wire.messages import FetchRequest
from quorum.wire.records import build_batch_from_values

from .builders import make_leader, new_core, reply, requests_in, response_to, vote_request


def unattached() -> RaftCore:
    return new_core(1, stored=ElectionState(2))


def unattached_voted_for(candidate: int) -> Callable[[], RaftCore]:
    return lambda: new_core(1, stored=ElectionState(2, voted_id=candidate))


def prospective() -> RaftCore:
    core = new_core(1, stored=ElectionState(2))
    core.poll(10_000)
    assert core.role == "Prospective"
    return core


def follower(*, fetched: bool) -> Callable[[], RaftCore]:
    def build() -> RaftCore:
        core = new_core(1, stored=ElectionState(2, leader_id=3))
        ready = core.poll(0)
        if fetched:
            ((_, request_id, _),) = requests_in(ready, FetchRequest)
            answer = FetchAnswer(leader_id=3, leader_epoch=2, high_watermark=0)
            core.handle(reply(3, request_id, answer, "fetch"), 1)
        assert core.role == "Follower"
        return core

    return build


def candidate() -> RaftCore:
    core = new_core(1, stored=ElectionState(2, voted_id=1))
    assert core.role == "Candidate"
    return core


def leader() -> RaftCore:
    core = new_core(1, stored=ElectionState(1))
    make_leader(core)
    assert core.epoch == 2
    return core


def resigned() -> RaftCore:
    core = new_core(1, stored=ElectionState(2, leader_id=1, voted_id=1))
    assert core.role == "Resigned"
    return core


@pytest.mark.parametrize(
    ("build", "standard", "pre_vote"),
    [
        pytest.param(unattached, True, True, id="unattached-free"),
        pytest.param(unattached_voted_for(3), False, True, id="unattached-voted-other"),
        pytest.param(unattached_voted_for(2), True, True, id="unattached-voted-same"),
        pytest.param(prospective, True, True, id="prospective-free"),
        pytest.param(follower(fetched=False), False, True, id="follower-not-fetched"),
        pytest.param(follower(fetched=True), False, False, id="follower-fetched"),
        pytest.param(candidate, False, True, id="candidate"),
        pytest.param(leader, False, False, id="leader"),
        pytest.param(resigned, False, True, id="resigned"),
    ],
)
def test_vote_grant_rules_per_state(
    build: Callable[[], RaftCore], standard: bool, pre_vote: bool
) -> None:
    for is_pre_vote, expected in ((True, pre_vote), (False, standard)):
        core = build()
        role = core.role
        log = core.log
        request = vote_request(
            2,
            epoch=2,
            last_epoch=max(log.last_fetched_epoch, 1) if is_pre_vote else 1,
            last_offset=log.log_end_offset,
            pre_vote=is_pre_vote,
        )
        ready = core.handle(request, 20)
        assert response_to(ready, request).vote_granted is expected, (role, is_pre_vote)
        if expected and not is_pre_vote and role != "Unattached":
            assert ready.persist == ElectionState(2, voted_id=2)


def test_an_out_of_date_log_gets_no_pre_vote() -> None:
    core = new_core(1, stored=ElectionState(2))
    core.log.append(build_batch_from_values([b"x"]), epoch=2)
    request = vote_request(2, epoch=2, last_epoch=1, last_offset=5, pre_vote=True)
    assert response_to(core.handle(request, 0), request).vote_granted is False


def test_a_higher_epoch_pre_vote_moves_the_node_to_unattached_in_that_epoch() -> None:
    core = follower(fetched=True)()
    request = vote_request(2, epoch=5, last_epoch=2, last_offset=0, pre_vote=True)
    ready = core.handle(request, 30)
    assert core.role == "Unattached" and core.epoch == 5
    assert response_to(ready, request).vote_granted
    assert ready.persist == ElectionState(5)
