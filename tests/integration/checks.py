"""Checks on the metadata logs of a whole cluster, read from disk after it stopped."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from deploy import LocalCluster, LogEntry, read_metadata_log
from quorum.describe import DescribeQuorumError, quorum_info_from_response
from quorum.wire.error_codes import Errors
from quorum.wire.messages.pykraft_append import PykraftAppendResponse

__all__ = [
    "Acked",
    "StartCluster",
    "assert_logs_agree",
    "commit",
    "follows",
    "freeze",
    "record",
]

# offset -> payload of every append the cluster acknowledged
Acked = dict[int, bytes]
# the start_cluster fixture: ClusterSpec fields as keywords -> a running cluster
StartCluster = Callable[..., LocalCluster]


def record(acked: Acked, payloads: list[bytes], response: PykraftAppendResponse) -> None:
    """Note what an acknowledged append committed, offset by offset."""
    offsets = range(response.base_offset, response.last_offset + 1)
    assert len(offsets) == len(payloads), f"{len(payloads)} records got offsets {offsets}"
    acked.update(zip(offsets, payloads, strict=True))


def commit(cluster: LocalCluster, acked: Acked, tag: str, count: int = 3,
           among: list[int] | None = None) -> int:
    """Commit ``count`` records named ``tag-i``; returns the offset after the last one."""
    payloads = [f"{tag}-{i}".encode() for i in range(count)]
    response = cluster.append(payloads, among=among)
    record(acked, payloads, response)
    return int(response.last_offset) + 1


def follows(cluster: LocalCluster, node_id: int, leader_id: int) -> bool:
    """Whether ``node_id`` answers DescribeQuorum as a non-leader that knows ``leader_id``."""
    response = cluster.quorum_answer(node_id)
    if response is None:
        return False
    try:
        quorum_info_from_response(response)
    except DescribeQuorumError as exc:
        return exc.error is Errors.NOT_LEADER_OR_FOLLOWER and exc.leader_id == leader_id
    return False


def freeze(cluster: LocalCluster) -> None:
    """Stop every node at once (SIGSTOP all, then SIGKILL all): an orderly stop one
    by one would let the survivors elect again and append LeaderChange records."""
    running = [n for n in cluster.node_ids if cluster.is_running(n)]
    for node_id in running:
        cluster.pause(node_id)
    for node_id in running:
        cluster.kill(node_id)


def _values(entries: list[LogEntry]) -> dict[int, bytes | None]:
    return {e.offset: e.value for e in entries if not e.control}


def assert_logs_agree(
    cluster: LocalCluster, acked: Mapping[int, bytes], *, absent: Collection[bytes] = ()
) -> dict[int, list[LogEntry]]:
    """Once every voter caught up, freeze the cluster; then every node's log must be
    the same, hold every acknowledged record at its offset, and hold none of
    ``absent`` (records that were never committed)."""
    cluster.wait_caught_up()
    freeze(cluster)
    logs = {n: read_metadata_log(cluster.layout[n].metadata_dir) for n in cluster.node_ids}
    first = min(logs)
    for node_id, entries in logs.items():
        assert entries == logs[first], f"the logs of nodes {first} and {node_id} differ"
        values = _values(entries)
        for offset, payload in acked.items():
            assert values.get(offset) == payload, (
                f"node {node_id} lost the committed record {payload!r} at offset {offset}"
            )
        kept = set(values.values()) & set(absent)
        assert not kept, f"node {node_id} keeps records that were never committed: {kept}"
    return logs
