"""Elections (KIP-595 with KIP-996 pre-vote), in the words of the paper and of Kafka's tests."""

from __future__ import annotations

from quorum.raft.core import RaftCore
from quorum.raft.rpc import ErrorCode, FetchAnswer, VoteAnswer
from quorum.raft.states import Candidate, ElectionState, Follower, Leader, Prospective, Unattached
from quorum.wire.messages import BeginQuorumEpochRequest, FetchRequest, VoteRequest

from .builders import (
    begin_epoch_request,
    log_with,
    new_core,
    reply,
    requests_in,
    response_to,
    vote_request,
)
from .harness import Cluster

# -- whole-cluster scenarios ------------------------------------------------------------


def test_a_single_voter_elects_itself_at_start_and_commits() -> None:
    cluster = Cluster([1])
    leader = cluster.elect(timeout_ms=10)
    assert (leader.node_id, leader.epoch) == (1, 1)
    cluster.propose(1, [b"a", b"b"])
    cluster.run_for(10)
    assert cluster.committed_values(1) == [b"a", b"b"]


def test_three_voters_elect_exactly_one_leader_that_all_persist() -> None:
    cluster = Cluster([1, 2, 3], seed=4)
    leader = cluster.elect()
    for node in cluster.nodes.values():
        assert node.stored is not None
        assert (node.stored.epoch, node.stored.leader_id) == (leader.epoch, leader.node_id)
    assert [n.raft.is_leader for n in cluster.nodes.values()].count(True) == 1


def test_five_voters_elect_a_leader_with_two_of_them_down() -> None:
    cluster = Cluster([1, 2, 3, 4, 5], seed=2, start=False)
    for node_id in (1, 2, 3):
        cluster.start(node_id)
    leader = cluster.elect()
    assert leader.node_id in (1, 2, 3)
    cluster.propose(leader.node_id, [b"x"])
    cluster.run_for(50)
    assert all(cluster.committed_values(n) == [b"x"] for n in (1, 2, 3))


def test_pre_vote_does_not_disturb_a_healthy_leader() -> None:
    cluster = Cluster([1, 2, 3], seed=1)
    leader = cluster.elect()
    epoch = leader.epoch
    lonely = next(n for n in (1, 2, 3) if n != leader.node_id)
    cluster.network.isolate(lonely, (1, 2, 3))
    cluster.run_for(10_000)  # many fetch timeouts: the lonely node pre-votes in vain
    assert cluster.core(lonely).epoch == epoch
    assert isinstance(cluster.core(lonely).state, Prospective | Unattached | Follower)
    cluster.network.heal()
    cluster.run_for(3_000)
    assert cluster.leader() is leader and leader.epoch == epoch
    assert cluster.core(lonely).leader_id == leader.node_id


def test_a_follower_that_loses_its_leader_elects_a_new_one_after_the_fetch_timeout() -> None:
    cluster = Cluster([1, 2, 3], seed=3)
    old = cluster.elect()
    crashed_at = cluster.now_ms
    cluster.crash(old.node_id)
    new = cluster.elect()
    assert new.node_id != old.node_id and new.epoch > old.epoch
    assert cluster.now_ms - crashed_at >= cluster.config.fetch_timeout_ms


def test_observers_never_vote_or_stand() -> None:
    cluster = Cluster([1, 2, 3], observers=[7], seed=5)
    cluster.elect()
    for node_id in (1, 2, 3):
        cluster.crash(node_id)
    cluster.run_for(20_000)
    observer = cluster.core(7)
    assert isinstance(observer.state, Unattached | Follower)
    assert cluster.nodes[7].stored is None or cluster.nodes[7].stored.voted_id is None
    sent_votes = [d for d in cluster.delivered if d.source == 7 and isinstance(d.envelope.message, VoteRequest)]
    assert sent_votes == []


# -- one core driven by hand -----------------------------------------------------------


def test_a_vote_is_persisted_before_the_response_goes_out() -> None:
    core = new_core(1)
    request = vote_request(2, epoch=1)
    ready = core.handle(request, 10)
    assert ready.persist == ElectionState(1, voted_id=2)
    assert ready.send == ()
    answer = response_to(ready, request)
    assert answer.vote_granted and answer.leader_epoch == 1


def test_one_standard_vote_per_epoch() -> None:
    core = new_core(1)
    core.handle(vote_request(2, epoch=1), 10)
    second = vote_request(3, epoch=1)
    assert response_to(core.handle(second, 11), second).vote_granted is False
    again = vote_request(2, epoch=1)
    assert response_to(core.handle(again, 12), again).vote_granted is True


def test_a_vote_survives_a_restart() -> None:
    core = new_core(1)
    ready = core.handle(vote_request(2, epoch=1), 10)
    restarted = new_core(1, stored=ready.persist)
    request = vote_request(3, epoch=1)
    assert response_to(restarted.handle(request, 20), request).vote_granted is False


def test_a_candidate_with_a_shorter_or_older_log_gets_no_vote() -> None:
    core = new_core(1, log=log_with([1, 1, 2]))  # last epoch 2, end offset 3
    cases = [
        (dict(last_epoch=1, last_offset=10), False),  # older last epoch, longer log
        (dict(last_epoch=2, last_offset=2), False),  # same epoch, shorter
        (dict(last_epoch=2, last_offset=3), True),  # equal
    ]
    for epoch, (log_position, granted) in enumerate(cases, start=3):
        request = vote_request(2, epoch=epoch, **log_position)
        assert response_to(core.handle(request, epoch), request).vote_granted is granted


def test_pre_votes_are_granted_to_many_and_persist_nothing() -> None:
    core = new_core(1)
    for candidate in (2, 3):
        request = vote_request(candidate, epoch=0, pre_vote=True)
        ready = core.handle(request, 5)
        assert response_to(ready, request).vote_granted
        assert ready.persist is None
    assert core.epoch == 0


def test_a_follower_refuses_pre_votes_once_it_has_fetched_from_its_leader() -> None:
    core = new_core(1)
    ready = core.handle(begin_epoch_request(2, epoch=1), 0)
    assert isinstance(core.state, Follower)
    before = vote_request(3, epoch=1, pre_vote=True)
    assert response_to(core.handle(before, 1), before).vote_granted
    ((dest, request_id, _),) = requests_in(ready, FetchRequest)
    assert dest == 2
    fetched = FetchAnswer(leader_id=2, leader_epoch=1, high_watermark=0)
    core.handle(reply(2, request_id, fetched, "fetch"), 2)
    after = vote_request(3, epoch=1, pre_vote=True)
    assert response_to(core.handle(after, 3), after).vote_granted is False


def test_a_leader_rejects_votes_and_pre_votes_in_its_epoch() -> None:
    core = new_core(1, voters=(1,))
    core.poll(0)
    assert core.is_leader
    for pre_vote in (False, True):
        request = vote_request(2, epoch=core.epoch, last_epoch=core.epoch - 1, last_offset=99, pre_vote=pre_vote)
        assert response_to(core.handle(request, 1), request).vote_granted is False
    assert core.is_leader


def test_a_higher_epoch_vote_makes_the_leader_step_down_and_vote() -> None:
    cluster = Cluster([1, 2, 3], seed=8)
    leader = cluster.elect()
    log = leader.log
    request = vote_request(
        2 if leader.node_id != 2 else 3,
        epoch=leader.epoch + 1,
        last_epoch=log.last_fetched_epoch,
        last_offset=log.log_end_offset,
    )
    ready = leader.handle(request, cluster.now_ms)
    assert isinstance(leader.state, Unattached) and leader.epoch == request.message.topics[0].partitions[0].replica_epoch
    assert response_to(ready, request).vote_granted
    assert ready.persist is not None and ready.persist.voted_id is not None


def test_a_stale_epoch_vote_gets_fenced_leader_epoch() -> None:
    core = new_core(1, stored=ElectionState(5))
    request = vote_request(2, epoch=4, last_epoch=1)
    answer = response_to(core.handle(request, 0), request)
    assert answer.partition_error == ErrorCode.FENCED_LEADER_EPOCH
    assert answer.leader_epoch == 5 and not answer.vote_granted


def test_malformed_votes_are_invalid_requests() -> None:
    core = new_core(1, stored=ElectionState(5))
    for kwargs in (
        dict(last_offset=-1),
        dict(last_epoch=-1),
        dict(last_epoch=6),  # a candidate for epoch 6 cannot hold epoch 6 already
    ):
        request = vote_request(2, epoch=6, **kwargs)  # type: ignore[arg-type]
        assert response_to(core.handle(request, 0), request).partition_error == ErrorCode.INVALID_REQUEST
    pre = vote_request(2, epoch=6, last_epoch=7, pre_vote=True)
    assert response_to(core.handle(pre, 0), pre).partition_error == ErrorCode.INVALID_REQUEST
    assert core.epoch == 5


def test_a_vote_meant_for_another_voter_gets_invalid_voter_key() -> None:
    core = new_core(1)
    request = vote_request(2, epoch=1, voter_id=3)
    answer = response_to(core.handle(request, 0), request)
    assert answer.partition_error == ErrorCode.INVALID_VOTER_KEY and not answer.vote_granted


def test_cluster_id_may_be_null_but_never_wrong_or_empty() -> None:
    core = new_core(1)
    for cluster_id, error in ((None, ErrorCode.NONE), ("other", ErrorCode.INCONSISTENT_CLUSTER_ID), ("", ErrorCode.INCONSISTENT_CLUSTER_ID), ("pykraft-test-cluster", ErrorCode.NONE)):
        request = vote_request(2, epoch=1, pre_vote=True, cluster_id=cluster_id)
        answer = response_to(core.handle(request, 0), request)
        assert (answer.error or answer.partition_error) == error, cluster_id


def test_an_observer_grants_pre_votes_but_never_a_standard_vote() -> None:
    core = new_core(9)
    pre = vote_request(2, epoch=0, pre_vote=True)
    assert response_to(core.handle(pre, 0), pre).vote_granted
    standard = vote_request(2, epoch=1)
    ready = core.handle(standard, 0)
    assert response_to(ready, standard).vote_granted is False
    assert core.state.election_state.voted_id is None


# -- the requester's side --------------------------------------------------------------


def elect_by_hand() -> tuple[RaftCore, list[tuple[int, int, VoteRequest]]]:
    """Node 1 of three, its election timeout expired: a Prospective asking 2 and 3."""
    core = new_core(1)
    ready = core.poll(10_000)  # past any election timeout
    assert isinstance(core.state, Prospective)
    assert ready.persist is None  # a pre-vote changes nothing durable
    return core, requests_in(ready, VoteRequest)


def test_a_pre_vote_asks_at_the_current_epoch_and_changes_nothing_durable() -> None:
    _, asks = elect_by_hand()
    assert sorted(d for d, _, _ in asks) == [2, 3]
    partition = asks[0][2].topics[0].partitions[0]
    assert partition.pre_vote and partition.replica_epoch == 0


def test_a_majority_of_pre_votes_makes_a_candidate_then_a_majority_of_votes_a_leader() -> None:
    core, asks = elect_by_hand()
    dest, request_id, _ = asks[0]
    ready = core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=0, vote_granted=True), "vote"), 10_001)
    assert isinstance(core.state, Candidate) and core.epoch == 1
    assert ready.persist == ElectionState(1, voted_id=1)
    votes = requests_in(ready, VoteRequest)
    assert all(not m.topics[0].partitions[0].pre_vote for _, _, m in votes)
    assert ready.send == ()  # vote requests wait until the self-vote is durable
    dest, request_id, _ = votes[0]
    ready = core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=1, vote_granted=True), "vote"), 10_002)
    assert isinstance(core.state, Leader)
    assert ready.persist == ElectionState(1, leader_id=1, voted_id=1)
    assert {d for d, _, _ in requests_in(ready, BeginQuorumEpochRequest)} == {2, 3}
    assert ready.flush_log and core.log.log_end_offset == 1  # the LeaderChange record


def test_a_rejected_pre_vote_returns_to_unattached_without_a_new_epoch() -> None:
    core, asks = elect_by_hand()
    for dest, request_id, _ in asks:
        core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=0), "vote"), 10_001)
    assert isinstance(core.state, Unattached) and core.epoch == 0


def test_late_vote_responses_are_ignored_after_becoming_follower() -> None:
    core, asks = elect_by_hand()
    core.handle(begin_epoch_request(3, epoch=1), 10_001)
    assert isinstance(core.state, Follower)
    dest, request_id, _ = asks[0]
    ready = core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=0, vote_granted=True), "vote"), 10_002)
    assert isinstance(core.state, Follower) and ready.persist is None


def test_a_candidate_that_loses_waits_out_its_timeout_then_pre_votes_again() -> None:
    core, asks = elect_by_hand()
    dest, request_id, _ = asks[0]
    ready = core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=0, vote_granted=True), "vote"), 10_001)
    for dest, request_id, _ in requests_in(ready, VoteRequest):
        core.handle(reply(dest, request_id, VoteAnswer(leader_epoch=1), "vote"), 10_002)
    assert isinstance(core.state, Candidate)
    deadline = core.state.election_deadline_ms
    core.poll(deadline - 1)
    assert isinstance(core.state, Candidate)
    core.poll(deadline)
    assert isinstance(core.state, Prospective) and core.epoch == 1
