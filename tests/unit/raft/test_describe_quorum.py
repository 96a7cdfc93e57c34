"""DescribeQuorum: the leader's view of voters and observers (kraft-facts 1.8)."""

from __future__ import annotations

from quorum.raft.rpc import ErrorCode
from quorum.wire.messages import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
    DescribeQuorumResponse,
)

from .builders import fetch_request, make_leader, new_core
from .harness import Cluster


def test_the_leader_describes_voters_observers_and_the_high_watermark() -> None:
    cluster = Cluster([1, 2, 3], observers=[7], seed=91)
    leader = cluster.elect()
    cluster.propose(leader.node_id, [b"x"])
    cluster.run_for(100)
    response = cluster.describe_quorum(leader.node_id)
    assert response.error_code == 0
    (partition,) = response.topics[0].partitions
    assert (partition.leader_id, partition.leader_epoch) == (leader.node_id, leader.epoch)
    assert partition.high_watermark == leader.high_watermark
    voters = {v.replica_id: v for v in partition.current_voters}
    assert set(voters) == {1, 2, 3}
    assert partition.current_voters[0].replica_id == leader.node_id
    own = voters[leader.node_id]
    assert own.last_fetch_timestamp == own.last_caught_up_timestamp == cluster.now_ms
    for voter in voters.values():
        assert voter.log_end_offset == leader.log.log_end_offset
    assert [o.replica_id for o in partition.observers] == [7]


def test_a_non_leader_answers_not_leader_or_follower() -> None:
    cluster = Cluster([1, 2, 3], seed=92)
    leader = cluster.elect()
    other = next(n for n in (1, 2, 3) if n != leader.node_id)
    (partition,) = cluster.describe_quorum(other).topics[0].partitions
    assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (partition.leader_id, partition.leader_epoch) == (leader.node_id, leader.epoch)


def test_another_partition_is_unknown() -> None:
    cluster = Cluster([1], seed=93)
    cluster.elect()
    request = DescribeQuorumRequest(
        topics=(
            DescribeQuorumRequestTopic(
                topic_name="other", partitions=(DescribeQuorumRequestPartition(partition_index=0),)
            ),
        )
    )
    handle = cluster.send_client_request(1, request)
    cluster.run_for(5)
    response = cluster.client_responses[handle]
    assert isinstance(response, DescribeQuorumResponse)
    assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_last_caught_up_time_follows_kafkas_rule() -> None:
    core = new_core(1)
    make_leader(core)
    core.flushed(core.log.flush(), 10_000)
    core.handle(fetch_request(2, 1, offset=1, last_epoch=1), 10_000)  # caught up at 10_000
    core.propose([b"a"], 10_100)  # leader end 2
    core.handle(fetch_request(2, 1, offset=1, last_epoch=1), 10_200)  # behind: stays 10_000
    rows = {r.replica_id: r for r in _describe(core).voters}
    assert (rows[2].last_fetch_timestamp, rows[2].last_caught_up_timestamp) == (10_200, 10_000)
    # reaching the end seen at the previous fetch dates catch-up to that fetch
    core.propose([b"b"], 10_250)  # leader end 3
    core.handle(fetch_request(2, 1, offset=2, last_epoch=1), 10_300)
    rows = {r.replica_id: r for r in _describe(core).voters}
    assert (rows[2].log_end_offset, rows[2].last_caught_up_timestamp) == (2, 10_200)
    assert rows[3].log_end_offset == -1 and rows[3].last_fetch_timestamp == -1


def _describe(core: object):  # type: ignore[no-untyped-def]
    from quorum.raft.leader import describe_quorum

    return describe_quorum(core._ctx, 10_400)  # type: ignore[attr-defined]
