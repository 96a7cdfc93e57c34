"""Bad input at live controllers: rejected with Kafka's errors, connections closed,
refused starts, and never a lost committed entry or a disturbed leader."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import ClusterSpec, LocalCluster
from deploy.layout import format_all
from deploy.metadata_log import metadata_partition_dir
from deploy.probes import is_serving, request_at
from quorum.describe import QuorumInfo
from quorum.node import QUORUM_STATE_FILE
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestPartition,
    BeginQuorumEpochRequestTopic,
    VoteRequest,
    VoteRequestPartition,
    VoteRequestTopic,
)
from tests.integration.checks import Acked, StartCluster, assert_logs_agree, commit

pytestmark = pytest.mark.timeout(120)

TOPIC = "__cluster_metadata"
MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes, Kafka's default


@pytest.fixture(scope="module")
def acked() -> Acked:
    return {}


@pytest.fixture(scope="module")
def watched(quiet_cluster: LocalCluster, acked: Acked) -> Iterator[LocalCluster]:
    """The quiet cluster with records committed before the bad input; when the
    module ends, every node must still hold them (and those committed after)."""
    commit(quiet_cluster, acked, "before-bad-input")
    yield quiet_cluster
    commit(quiet_cluster, acked, "after-bad-input")
    assert_logs_agree(quiet_cluster, acked)


def undisturbed(cluster: LocalCluster, before: QuorumInfo, acked: Acked, tag: str) -> None:
    """Same leader, same epoch, and it still commits."""
    commit(cluster, acked, tag, count=1)
    after = cluster.describe()
    assert (after.leader_id, after.leader_epoch) == (before.leader_id, before.leader_epoch)
    assert after.high_watermark > before.high_watermark


def vote(*, cluster_id: str | None, epoch: int, voter_id: int = -1,
         pre_vote: bool = True) -> VoteRequest:
    partition = VoteRequestPartition(replica_epoch=epoch, replica_id=3, last_offset_epoch=0,
                                     last_offset=0, pre_vote=pre_vote)
    topic = VoteRequestTopic(topic_name=TOPIC, partitions=(partition,))
    return VoteRequest(cluster_id=cluster_id, voter_id=voter_id, topics=(topic,))


def test_a_vote_with_another_cluster_id_gets_inconsistent_cluster_id(
    watched: LocalCluster, acked: Acked
) -> None:
    before = watched.describe()
    for node_id in watched.node_ids:
        answer = request_at(watched.address(node_id),
                            vote(cluster_id="AAAAAAAAAAAAAAAAAAAAAQ", epoch=before.leader_epoch))
        assert answer.error_code == Errors.INCONSISTENT_CLUSTER_ID
    undisturbed(watched, before, acked, "after-wrong-cluster-id")


def test_requests_with_a_stale_epoch_get_fenced_leader_epoch(
    watched: LocalCluster, acked: Acked
) -> None:
    before = watched.describe()
    stale = before.leader_epoch - 1
    partition = BeginQuorumEpochRequestPartition(leader_id=2, leader_epoch=stale)
    begin = BeginQuorumEpochRequest(
        cluster_id=watched.cluster_id,
        topics=(BeginQuorumEpochRequestTopic(topic_name=TOPIC, partitions=(partition,)),),
    )
    for node_id in watched.node_ids:
        for request in (begin, vote(cluster_id=watched.cluster_id, epoch=stale)):
            answer = request_at(watched.address(node_id), request)
            assert answer.error_code == Errors.NONE
            part = answer.topics[0].partitions[0]
            assert part.error_code == Errors.FENCED_LEADER_EPOCH, (node_id, request)
            assert (part.leader_id, part.leader_epoch) == (before.leader_id, before.leader_epoch)
    undisturbed(watched, before, acked, "after-stale-epoch")


def test_a_vote_for_a_voter_key_not_in_the_set_gets_invalid_voter_key(
    watched: LocalCluster, acked: Acked
) -> None:
    before = watched.describe()
    request = vote(cluster_id=watched.cluster_id, epoch=before.leader_epoch, voter_id=99)
    for node_id in watched.node_ids:
        part = request_at(watched.address(node_id), request).topics[0].partitions[0]
        assert part.error_code == Errors.INVALID_VOTER_KEY
        assert part.vote_granted is False
    undisturbed(watched, before, acked, "after-invalid-voter-key")


def closed_by_server(address: tuple[str, int], data: bytes) -> bool:
    """Send raw bytes; True if the server closes the connection (EOF or reset)."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(data)
        try:
            return sock.recv(4096) == b""
        except ConnectionResetError:
            return True


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(struct.pack(">i", 12) + b"\xff" * 12, id="garbage-header"),
        pytest.param(struct.pack(">ihhi", 10, 55, 2, 7) + b"\x00\x05", id="truncated-body"),
        pytest.param(struct.pack(">i", MAX_REQUEST_BYTES + 1), id="oversized"),
        pytest.param(struct.pack(">i", -5), id="negative-size"),
        pytest.param(struct.pack(">ihhi", 8, 31000, 0, 1), id="unknown-api-key"),
    ],
)
def test_a_bad_frame_closes_that_connection_and_the_node_keeps_serving(
    watched: LocalCluster, acked: Acked, frame: bytes
) -> None:
    before = watched.describe()
    for node_id in watched.node_ids:
        assert closed_by_server(watched.address(node_id), frame)
        assert is_serving(watched.address(node_id))
    undisturbed(watched, before, acked, f"after-bad-frame-{frame[:6].hex()}")


def test_a_corrupt_quorum_state_file_stops_the_start_with_an_error_naming_it(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=1)
    cluster.leader()
    assert cluster.stop(1) == 0
    state_file = metadata_partition_dir(cluster.layout[1].metadata_dir) / QUORUM_STATE_FILE
    assert state_file.exists()
    state_file.write_text('{"leaderEpoch": ')
    cluster.start_node(1, wait=False)
    assert cluster.wait_exit(1) == 1
    log = cluster.layout[1].log_path.read_text()
    last_start = log.rsplit("=== launcher: start", 1)[1]
    assert str(state_file) in last_start
    assert "Traceback" not in last_start


def test_a_node_refuses_to_start_on_an_unformatted_directory(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, ClusterSpec(controllers=1))
    try:
        cluster.prepare()
        metadata = cluster.layout[1].metadata_dir
        (metadata / "meta.properties").unlink()
        cluster.start_node(1, wait=False)
        assert cluster.wait_exit(1) == 1
        last_start = cluster.layout[1].log_path.read_text().rsplit("=== launcher: start", 1)[1]
        assert str(metadata) in last_start
        assert "Traceback" not in last_start
        # formatted again, the same directory starts
        format_all([cluster.layout[1]], cluster.cluster_id)
        cluster.start_node(1)
        assert cluster.leader() == 1
    finally:
        cluster.close()
