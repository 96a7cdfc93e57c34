"""Link partitions through ``deploy.LinkProxy``: an isolated follower, an isolated leader."""

from __future__ import annotations

import pytest

from deploy import LocalCluster
from quorum.client import BlockingKafkaConnection
from quorum.describe import quorum_info_from_response
from quorum.wire.messages.pykraft_append import PykraftAppendRequest
from tests.integration.checks import Acked, StartCluster, assert_logs_agree, commit, follows

pytestmark = pytest.mark.timeout(120)


def leader_end_offset(cluster: LocalCluster, node_id: int) -> int | None:
    """The log end offset ``node_id`` reports while it still answers as the leader."""
    response = cluster.quorum_answer(node_id)
    if response is None or response.topics[0].partitions[0].error_code:
        return None
    return quorum_info_from_response(response).leader.log_end_offset


def test_an_isolated_follower_catches_up_after_the_partition_heals(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3, link_proxies=True)
    acked: Acked = {}
    before = cluster.describe()
    leader = before.leader_id
    follower = next(n for n in cluster.node_ids if n != leader)
    commit(cluster, acked, "before")
    cluster.wait_caught_up()

    cluster.isolate(follower)
    end = commit(cluster, acked, "while-cut", count=5)
    lagging = cluster.describe()
    ends = {v.replica_id: v.log_end_offset for v in lagging.voters}
    assert ends[follower] < end, "the isolated follower got records through a cut link"
    assert lagging.high_watermark == end  # the other two are a majority

    cluster.heal()
    caught_up = cluster.wait_caught_up()
    # pre-vote: the follower's elections while cut off did not disturb the leader
    assert (caught_up.leader_id, caught_up.leader_epoch) == (leader, before.leader_epoch)
    assert caught_up.high_watermark >= end
    assert_logs_agree(cluster, acked)


def test_an_isolated_leader_truncates_its_uncommitted_tail_after_the_partition_heals(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3, link_proxies=True)
    acked: Acked = {}
    before = cluster.describe()
    old = before.leader_id
    end = commit(cluster, acked, "before")
    cluster.wait_caught_up()

    cluster.isolate(old)
    # the isolated leader takes these into its log but can never commit them
    uncommitted = [f"uncommitted-{i}".encode() for i in range(3)]
    conn = BlockingKafkaConnection.connect(*cluster.address(old))
    conn.send(PykraftAppendRequest(records=tuple(uncommitted)), timeout=30)
    cluster.wait_for(lambda: (leader_end_offset(cluster, old) or 0) > end,
                     f"node {old} to append the uncommitted records", 5)

    survivors = [n for n in cluster.node_ids if n != old]
    after = cluster.describe(exclude=[old], min_epoch=before.leader_epoch + 1)
    commit(cluster, acked, "new-leader", count=5, among=survivors)

    cluster.heal()
    cluster.wait_for(lambda: follows(cluster, old, after.leader_id),
                     f"node {old} to follow node {after.leader_id}", 20)
    conn.close()
    assert_logs_agree(cluster, acked, absent=uncommitted)
