"""End to end over the in-memory network: a follower left behind the log start catches up
through a snapshot, and no leader ever loads one (Kafka's LeaderNeverLoadSnapshot).
"""

from __future__ import annotations

import attrs

from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.raft.core import RaftCore
from quorum.wire.records import iter_batches

from .harness import TEST_CONFIG, Cluster


def snapshot_at_high_watermark(core: RaftCore) -> OffsetAndEpoch:
    """What a state machine does: snapshot everything committed (the last batch's epoch)."""
    hw = core.high_watermark
    assert hw is not None
    read = core.log.read(hw - 1, 1)
    epoch = next(iter_batches(read.records)).header.partition_leader_epoch
    snapshot = OffsetAndEpoch(hw, epoch)
    core.create_snapshot(snapshot, b"values below %d" % hw)
    core.maybe_clean_log(now_ms=0)  # as the cleaner timer would
    return snapshot


def data_values(log: MemoryLog, start: int, end: int) -> list[bytes | None]:
    read = log.read(start, 1 << 30, max_offset=end)
    return [
        record.value
        for batch in iter_batches(read.records)
        if not batch.header.is_control
        for record in batch.records
    ]


def test_an_isolated_follower_catches_up_through_the_leaders_snapshot() -> None:
    config = attrs.evolve(TEST_CONFIG, metadata_max_retention_bytes=0, fetch_snapshot_max_bytes=7)
    cluster = Cluster([1, 2, 3], seed=5, config=config)
    leader = cluster.elect()
    behind = next(n for n in (1, 2, 3) if n != leader.node_id)
    cluster.network.isolate(behind, (1, 2, 3))
    lagging_end = cluster.nodes[behind].log.log_end_offset
    for round_ in range(3):
        cluster.propose(leader.node_id, [b"r%d-%d" % (round_, i) for i in range(3)])
        cluster.run_for(100)
        snapshot = snapshot_at_high_watermark(leader)
    assert leader.log.log_start_offset == snapshot.offset > lagging_end
    cluster.network.heal()
    node = cluster.nodes[behind]
    assert cluster.run_until(lambda: node.raft.high_watermark == leader.high_watermark, 10_000)
    loads = [r for r in node.readies if r.loaded_snapshot is not None]
    assert [r.loaded_snapshot for r in loads] == [snapshot]
    assert all(r.role == "Follower" for r in loads)
    assert node.log.read_snapshot(snapshot) == leader.log.read_snapshot(snapshot)
    assert node.log.log_start_offset == snapshot.offset
    # the records after the snapshot are the leader's
    hw = leader.high_watermark
    assert hw is not None
    cluster.propose(leader.node_id, [b"after"])
    assert cluster.run_until(lambda: node.raft.high_watermark == leader.high_watermark != hw, 5_000)
    end = leader.high_watermark
    assert end is not None
    assert data_values(node.log, snapshot.offset, end) == data_values(leader.log, snapshot.offset, end)
    assert data_values(node.log, snapshot.offset, end)[-1] == b"after"
    for member in cluster.nodes.values():  # LeaderNeverLoadSnapshot
        assert not [r for r in member.readies if r.role == "Leader" and r.loaded_snapshot]
