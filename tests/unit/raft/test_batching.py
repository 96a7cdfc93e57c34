"""Adaptive batching: a lone proposal goes at once, concurrent ones share a batch."""

from __future__ import annotations

import pytest

from quorum.raft.accumulator import RECORD_OVERHEAD_BYTES, Accumulator
from quorum.raft.errors import NotLeaderError, RaftError
from quorum.wire.batch import iter_batch_headers

from .builders import fetch_request, make_leader, new_core
from .harness import TEST_CONFIG, Cluster


def committed_leader() -> object:
    """Leader of three whose LeaderChange record is committed (nothing in flight)."""
    core = new_core(1)
    make_leader(core)
    core.flushed(core.log.flush(), 10_000)
    core.handle(fetch_request(2, 1, offset=1, last_epoch=1), 10_000)
    assert core.high_watermark == 1
    return core


def batches(core: object) -> list[tuple[int, int]]:
    log = core.log  # type: ignore[attr-defined]
    data = log.read(0, 1 << 30).records
    return [(h.base_offset, h.last_offset) for _, h in iter_batch_headers(data)]


def test_a_proposal_with_nothing_in_flight_is_appended_at_once() -> None:
    core = committed_leader()
    ready = core.propose([b"a"], 10_001)  # type: ignore[attr-defined]
    assert ready.accepted is not None and (ready.accepted.start, ready.accepted.end) == (1, 2)
    assert ready.flush_log and core.log.log_end_offset == 2  # type: ignore[attr-defined]


def test_proposals_gather_while_a_batch_is_in_flight() -> None:
    core = committed_leader()
    core.propose([b"a"], 10_001)  # type: ignore[attr-defined]
    second = core.propose([b"b"], 10_002)  # type: ignore[attr-defined]
    third = core.propose([b"c", b"d"], 10_003)  # type: ignore[attr-defined]
    assert (second.accepted.start, third.accepted.end) == (2, 5)  # type: ignore[union-attr]
    assert core.log.log_end_offset == 2  # type: ignore[attr-defined]
    assert second.next_deadline_ms == 10_002 + TEST_CONFIG.append_linger_ms
    # the in-flight batch commits: the gathered proposals go out as one batch
    core.flushed(core.log.flush(), 10_004)  # type: ignore[attr-defined]
    core.handle(fetch_request(2, 1, offset=2, last_epoch=1), 10_005)  # type: ignore[attr-defined]
    assert batches(core)[-1] == (2, 4)


def test_gathered_proposals_go_out_when_the_linger_expires() -> None:
    core = committed_leader()
    core.propose([b"a"], 10_001)  # type: ignore[attr-defined]
    core.propose([b"b"], 10_002)  # type: ignore[attr-defined]
    core.poll(10_002 + TEST_CONFIG.append_linger_ms - 1)  # type: ignore[attr-defined]
    assert core.log.log_end_offset == 2  # type: ignore[attr-defined]
    core.poll(10_002 + TEST_CONFIG.append_linger_ms)  # type: ignore[attr-defined]
    assert batches(core)[-1] == (2, 2)


def test_many_writers_share_batches_in_a_cluster() -> None:
    cluster = Cluster([1, 2, 3], seed=81)
    leader = cluster.elect()
    for i in range(50):
        cluster.propose(leader.node_id, [f"w{i}".encode()])
    cluster.run_for(100)
    assert cluster.committed_values(leader.node_id) == [f"w{i}".encode() for i in range(50)]
    data_batches = [b for b in batches(leader) if b[0] >= 1]
    assert len(data_batches) < 50 / 5


def test_a_full_accumulator_is_cut_into_batches_of_the_maximum_size() -> None:
    accumulator = Accumulator(linger_ms=25, max_batch_bytes=3 * (10 + RECORD_OVERHEAD_BYTES))
    accumulator.add([b"x" * 10] * 7, 0)
    assert accumulator.is_due(0, in_flight=True)  # full: no need to wait
    assert [len(chunk) for chunk in accumulator.drain()] == [3, 3, 1]
    assert accumulator.pending_count == 0 and accumulator.deadline_ms() is None


def test_a_proposal_that_fits_a_batch_is_never_cut_between_batches() -> None:
    accumulator = Accumulator(linger_ms=25, max_batch_bytes=4 * (10 + RECORD_OVERHEAD_BYTES))
    accumulator.add([b"a" * 10] * 2, 0)
    accumulator.add([b"b" * 10] * 3, 1)  # would straddle the first batch: starts the next
    accumulator.add([b"c" * 10] * 1, 2)
    assert accumulator.pending_count == 6
    assert [[p[:1] for p in chunk] for chunk in accumulator.drain()] == [
        [b"a", b"a"],
        [b"b", b"b", b"b", b"c"],
    ]


def test_only_the_leader_takes_proposals() -> None:
    cluster = Cluster([1, 2, 3], seed=82)
    leader = cluster.elect()
    other = next(n for n in (1, 2, 3) if n != leader.node_id)
    with pytest.raises(NotLeaderError, match=f"the leader is node {leader.node_id}"):
        cluster.core(other).propose([b"x"], cluster.now_ms)
    with pytest.raises(NotLeaderError, match="asked for epoch"):
        leader.propose([b"x"], cluster.now_ms, epoch=leader.epoch - 1)
    with pytest.raises(RaftError, match="at least one"):
        leader.propose([], cluster.now_ms)
