"""Three controllers in one trio process on 127.0.0.1 (real sockets, real clock)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from quorum.log import FileLog
from quorum.node import AppendError, ControllerNode, FsyncPlacement
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
)
from quorum.wire.messages.pykraft_append import PykraftAppendRequest

from .nodes import connect, controller_config, free_ports, start_nodes, wait_for_leader

DESCRIBE_QUORUM = DescribeQuorumRequest(
    topics=(
        DescribeQuorumRequestTopic(
            topic_name="__cluster_metadata",
            partitions=(DescribeQuorumRequestPartition(partition_index=0),),
        ),
    )
)


async def test_three_voters_elect_one_leader_and_commit_through_the_network(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        nodes = await start_nodes(nursery, tmp_path, 3)
        leader = await wait_for_leader(nodes)
        follower = next(n for n in nodes if n is not leader)
        async with await connect(follower) as conn:
            refused = await conn.request(PykraftAppendRequest(records=(b"x",)))
            cluster = await conn.request(DescribeClusterRequest(endpoint_type=2))
        assert (refused.error_code, refused.leader_id) == (
            Errors.NOT_LEADER_OR_FOLLOWER, leader.node_id
        )
        assert cluster.controller_id == leader.node_id
        async with await connect(leader) as conn:
            answer = await conn.request(PykraftAppendRequest(records=(b"x", b"y")))
            quorum = await conn.request(DESCRIBE_QUORUM)
            # v0 and v1 have no Nodes field: the answer must still encode
            older = [await conn.request(DESCRIBE_QUORUM, version=v) for v in (0, 1)]
        assert answer.error_code == 0 and answer.leader_id == leader.node_id
        for old in older:
            assert old.topics[0].partitions[0].leader_id == leader.node_id
            assert old.nodes == ()
        partition = quorum.topics[0].partitions[0]
        assert partition.leader_id == leader.node_id
        assert partition.high_watermark > answer.last_offset
        assert sorted(v.replica_id for v in partition.current_voters) == [1, 2, 3]
        assert [n.node_id for n in quorum.nodes] == [1, 2, 3]
        for node in nodes:
            node.stop()


async def test_a_stopped_leader_hands_over_and_the_others_keep_committing(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        nodes = await start_nodes(nursery, tmp_path, 3)
        old = await wait_for_leader(nodes)
        await old.append_and_wait_committed([b"before"])
        epoch = old.epoch
        old.stop()
        rest = [n for n in nodes if n is not old]
        new = await wait_for_leader(rest)
        assert new.epoch > epoch
        with trio.fail_after(5):
            await old.wait_stopped()
        # it stayed until it knew its successor (Kafka's rule), not only until the
        # voters had its EndQuorumEpoch: it answered that successor's pre-vote and vote
        assert old.leader_id == new.node_id
        outcome = await new.append_and_wait_committed([b"after"])
        assert outcome.leader_epoch == new.epoch
        for node in rest:
            node.stop()


async def test_a_node_of_another_cluster_cannot_join_or_disrupt(tmp_path: Path) -> None:
    ports = free_ports(3)
    nodes = [
        ControllerNode.from_config(
            controller_config(
                tmp_path, node_id, ports,
                format_as="AAAAAAAAAAAAAAAAAAAAAB" if node_id == 3 else "MkU3OEVBNTcwNTJENDM2Qg",
            ),
            seed=node_id,
        )
        for node_id in (1, 2, 3)
    ]
    async with trio.open_nursery() as nursery:
        for node in nodes:
            await nursery.start(node.run)
        leader = await wait_for_leader(nodes[:2])
        await leader.append_and_wait_committed([b"x"])
        stranger = nodes[2]
        assert not stranger.is_leader and stranger.leader_id != leader.node_id
        for node in nodes:
            node.stop()


async def test_a_writer_waiting_on_a_leader_that_stops_is_told_instead_of_hanging(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        nodes = await start_nodes(nursery, tmp_path, 3)
        leader = await wait_for_leader(nodes)
        for node in nodes:
            if node is not leader:
                node.stop()
        failure: list[AppendError] = []

        async def writer() -> None:
            try:
                await leader.append_and_wait_committed([b"never committed"])
            except AppendError as exc:
                failure.append(exc)

        async with trio.open_nursery() as writers:
            writers.start_soon(writer)
            await trio.testing.wait_all_tasks_blocked()
            leader.stop()
        [error] = failure
        assert error.error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.BROKER_NOT_AVAILABLE)


class _WatchedFlush:
    """A log's ``flush`` that records on which thread each call ran and, if
    ``held``, waits (in its worker thread) until released."""

    def __init__(self, log: FileLog, *, held: bool = False) -> None:
        self.real = log.flush
        self.on_trio_thread: list[bool] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not held:
            self.release.set()
        log.flush = self  # type: ignore[method-assign]

    def __call__(self) -> int:
        self.on_trio_thread.append(threading.current_thread() is threading.main_thread())
        self.entered.set()
        self.release.wait(30)
        return self.real()


def _file_log(node: ControllerNode) -> FileLog:
    log = node.driver.core.log
    assert isinstance(log, FileLog)
    return log


async def test_a_leader_serves_its_followers_while_its_own_flush_runs(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        nodes = await start_nodes(nursery, tmp_path, 3)
        leader = await wait_for_leader(nodes)
        held = _WatchedFlush(_file_log(leader), held=True)
        try:
            # both followers fetch, store and acknowledge while the leader's fsync is
            # stuck; their two copies are a majority, so the record commits
            with trio.fail_after(10):
                outcome = await leader.append_and_wait_committed([b"while the leader syncs"])
            # committed before the leader's copy was durable (its flush may not even have
            # begun: the followers can be that quick); the flush, once it begins, stays held
            assert _file_log(leader).flushed_offset <= outcome.base_offset
            assert await trio.to_thread.run_sync(held.entered.wait, 10), "the flush never began"
            assert not held.release.is_set()
            assert _file_log(leader).flushed_offset <= outcome.base_offset
        finally:
            held.release.set()
        with trio.fail_after(10):
            while _file_log(leader).flushed_offset <= outcome.last_offset:
                await leader.wait_changed()
        for node in nodes:
            node.stop()


async def test_a_leaders_own_copy_counts_only_once_its_flush_ends(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        nodes = await start_nodes(nursery, tmp_path, 3)
        leader = await wait_for_leader(nodes)
        gone, other = (n for n in nodes if n is not leader)
        gone.stop()
        with trio.fail_after(5):
            await gone.wait_stopped()
        held = _WatchedFlush(_file_log(leader), held=True)
        committed: list[int] = []

        async def writer() -> None:
            outcome = await leader.append_and_wait_committed([b"needs the leader's disk"])
            committed.append(outcome.last_offset)

        try:
            nursery.start_soon(writer)
            held_since_ms = leader.driver.now_ms()
            async with await connect(leader) as conn:
                with trio.fail_after(10):
                    # until the leader has heard that the follower holds the record, and has
                    # gone on serving (requests, and its timers: the follower's parked fetches
                    # expire after 500 ms) for over a second of the held flush
                    while True:
                        await leader.wait_changed()  # its steps go on: a fetch at least every 500 ms
                        if not held.entered.is_set():
                            continue
                        offset = _file_log(leader).log_end_offset  # the record is appended
                        quorum = await conn.request(DESCRIBE_QUORUM)
                        voters = quorum.topics[0].partitions[0].current_voters
                        state = {v.replica_id: v for v in voters}[other.node_id]
                        if (
                            state.log_end_offset >= offset
                            and state.last_fetch_timestamp > held_since_ms + 1000
                        ):
                            break
            # one follower and a leader whose copy is not yet on its disk: no majority
            assert committed == []
            assert (leader.high_watermark or 0) < offset
        finally:
            held.release.set()
        with trio.fail_after(10):
            while not committed:
                await leader.wait_changed()
        assert len(committed) == 1 and committed[0] < offset
        for node in (leader, other):
            node.stop()


@pytest.mark.parametrize(
    ("placement", "follower_inline"),
    [(FsyncPlacement.INLINE_WHEN_FOLLOWING, True), (FsyncPlacement.WORKER_THREAD, False)],
)
async def test_followers_sync_where_the_placement_says_and_a_leader_in_a_worker_thread(
    tmp_path: Path, placement: FsyncPlacement, follower_inline: bool
) -> None:
    async with trio.open_nursery() as nursery:
        nodes = await start_nodes(nursery, tmp_path, 3, fsync=placement)
        leader = await wait_for_leader(nodes)
        threads = {n.node_id: _WatchedFlush(_file_log(n)) for n in nodes}
        for i in range(3):
            await leader.append_and_wait_committed([b"%d" % i])
        assert threads[leader.node_id].on_trio_thread
        assert not any(threads[leader.node_id].on_trio_thread)
        for node in nodes:
            if node is not leader:
                assert threads[node.node_id].on_trio_thread
                assert set(threads[node.node_id].on_trio_thread) == {follower_inline}
        for node in nodes:
            node.stop()
