"""Elections and failover with real controller processes: bootstrap, kill -9, SIGSTOP."""

from __future__ import annotations

import pytest

from quorum.client import BlockingKafkaConnection, ClientError
from quorum.wire.error_codes import Errors
from quorum.wire.messages.pykraft_append import PykraftAppendRequest
from tests.integration.checks import Acked, StartCluster, assert_logs_agree, commit, follows

pytestmark = pytest.mark.timeout(120)


def test_three_controllers_elect_one_leader_and_reach_the_same_high_watermark(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3)
    info = cluster.describe()
    leader = info.leader_id
    assert info.leader_epoch >= 1
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    others = [n for n in cluster.node_ids if n != leader]
    # a follower learns of the leader from BeginQuorumEpoch or its first fetch
    cluster.wait_for(lambda: all(follows(cluster, n, leader) for n in others),
                     f"nodes {others} to follow node {leader}", 10)

    acked: Acked = {}
    end = commit(cluster, acked, "bootstrap", count=5)
    caught_up = cluster.wait_caught_up()
    # the active controller may write its bootstrap record after these
    hw = caught_up.high_watermark
    assert hw >= end
    assert {v.replica_id: v.log_end_offset for v in caught_up.voters} == {1: hw, 2: hw, 3: hw}
    assert_logs_agree(cluster, acked)


def test_a_new_leader_commits_after_kill_9_of_the_leader_and_the_old_one_catches_up(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3)
    acked: Acked = {}
    before = cluster.describe()
    commit(cluster, acked, "before")
    old = before.leader_id

    cluster.kill(old)
    after = cluster.describe(exclude=[old], min_epoch=before.leader_epoch + 1)
    survivors = [n for n in cluster.node_ids if n != old]
    end = commit(cluster, acked, "after", among=survivors)
    assert end > max(acked) >= 1

    cluster.start_node(old)
    cluster.wait_for(lambda: follows(cluster, old, after.leader_id),
                     f"node {old} to follow node {after.leader_id}", 20)
    caught_up = cluster.wait_caught_up()
    assert caught_up.high_watermark >= end
    assert_logs_agree(cluster, acked)


def test_a_paused_leader_steps_down_follows_and_loses_no_committed_entry(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3)
    acked: Acked = {}
    before = cluster.describe()
    old = before.leader_id
    commit(cluster, acked, "before")
    hw_before = cluster.describe().high_watermark

    cluster.pause(old)
    # the others elect only after fetch.timeout.ms without the leader: the pause
    # has lasted longer than the fetch timeout once a new leader exists
    after = cluster.describe(exclude=[old], min_epoch=before.leader_epoch + 1)
    survivors = [n for n in cluster.node_ids if n != old]
    commit(cluster, acked, "during", among=survivors)
    # a write that reaches the deposed leader while it is paused: it must not commit
    stale = b"written-to-the-paused-leader"
    conn = BlockingKafkaConnection.connect(*cluster.address(old), negotiate=False)
    correlation_id = conn.send(PykraftAppendRequest(records=(stale,)), version=0, timeout=10)

    cluster.resume(old)
    try:
        answer = conn.receive(correlation_id)
        assert answer.error_code != Errors.NONE, "a deposed leader acknowledged a write"
    except ClientError:
        pass  # no answer is fine too: it was not committed
    finally:
        conn.close()
    cluster.wait_for(lambda: follows(cluster, old, after.leader_id),
                     f"node {old} to step down and follow node {after.leader_id}", 20)
    caught_up = cluster.wait_caught_up()
    assert caught_up.high_watermark >= hw_before
    assert caught_up.leader_epoch > before.leader_epoch
    assert_logs_agree(cluster, acked, absent=[stale])
