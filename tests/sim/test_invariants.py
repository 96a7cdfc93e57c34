"""The invariants can fail: broken drivers, broken cores and tampered state are caught."""

from __future__ import annotations

from unittest import mock

import attrs
import pytest

import quorum.raft.election
import quorum.raft.leadership
import quorum.raft.snapshot_fetch
import quorum.raft.snapshots
from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.node.ready_plan import Effects, ReadyPlan, Send
from quorum.raft.context import CoreContext
from quorum.raft.output import Ready
from quorum.raft.states import ElectionState, Follower
from quorum.wire.records import build_batch_from_values

from .committed import CommittedRecord, InvariantViolation
from .driver import SimNode
from .liveness import require_convergence
from .runner import run_scenario, simulation_for
from .simulator import SimError, Simulation

FEW_SEEDS = range(5)


_PRODUCTION_APPLY = ReadyPlan.apply


def eager_apply(self: ReadyPlan, ready: Ready) -> Effects:
    """A broken plan: what must wait for fsync is sent at once."""
    if ready.send_after_durable:
        yield Send(ready.send_after_durable)
        ready = attrs.evolve(ready, send_after_durable=())
    yield from _PRODUCTION_APPLY(self, ready)


def counting_unflushed(self: ReadyPlan) -> Effects:
    """A broken plan: a leader reports its log end as flushed before its flush beside ends."""
    log = self._log
    yield from self.apply(self.core.flushed(log.log_end_offset, self._now_ms()))


def failures(scenario: str, **kwargs: type[SimNode]) -> list[str]:
    found = []
    for seed in FEW_SEEDS:
        try:
            run_scenario(scenario, seed, **kwargs)
        except SimError as error:
            found.append(str(error))
    return found


def test_a_plan_that_sends_before_fsync_is_caught() -> None:
    with mock.patch.object(ReadyPlan, "apply", eager_apply):
        found = failures("random_mix")
    assert found and all("on disk: not a majority" in f for f in found)


def test_a_plan_that_counts_the_leaders_unflushed_offset_is_caught() -> None:
    with mock.patch.object(ReadyPlan, "_flush_beside", counting_unflushed):
        found = failures("random_mix")
    assert found and all("not a majority" in f for f in found), found


def test_a_leader_that_counts_only_itself_for_the_high_watermark_is_caught() -> None:
    def any_one(ends: dict[int, int | None], voters: frozenset[int]) -> int | None:
        return max((e for e in ends.values() if e is not None), default=None)

    with mock.patch.object(quorum.raft.leadership, "majority_end_offset", any_one):
        assert len(failures("steady_appends")) == len(FEW_SEEDS)


def test_votes_for_stale_logs_are_caught() -> None:
    with mock.patch.object(quorum.raft.election, "_log_is_up_to_date", lambda ctx, ask: True):
        assert failures("leader_crash")


# -- tampered state ----------------------------------------------------------------------------


def settled(seed: int = 0) -> Simulation:
    sim = simulation_for("steady_appends", seed)
    sim.start_all()
    sim.client.start(20)
    sim.run_for(3_000)
    require_convergence(sim)
    return sim


def a_follower(sim: Simulation) -> SimNode:
    return next(n for n in sim.live_voters() if not n.raft.is_leader)


def test_a_second_leader_named_for_an_epoch_is_caught() -> None:
    sim = settled()
    leader = sim.leader()
    assert leader is not None
    follower = a_follower(sim)
    follower.disk.election = ElectionState(leader.epoch, follower.node_id, follower.node_id)
    with pytest.raises(InvariantViolation, match="has two leaders"):
        sim.invariants.check()


def test_a_durable_epoch_going_back_is_caught() -> None:
    sim = settled()
    follower = a_follower(sim)
    follower.kill()
    sim.invariants.check()
    follower.disk.election = ElectionState(0)
    with pytest.raises(InvariantViolation, match="durable epoch fell"):
        sim.invariants.check()


def test_truncating_below_the_high_watermark_is_caught() -> None:
    sim = settled()
    follower = a_follower(sim)
    follower.disk.log.truncate_to(1)
    with pytest.raises(InvariantViolation, match="below its high watermark"):
        sim.invariants.check()


def test_losing_the_committed_prefix_on_a_majority_is_caught() -> None:
    sim = settled()
    for node in sim.live_voters()[: len(sim.voters) // 2 + 1]:
        node.kill()
        node.disk.log.truncate_to(0)
    with pytest.raises(InvariantViolation, match="not a majority"):
        sim.invariants.check()


def test_an_observer_that_votes_is_caught() -> None:
    sim = simulation_for("observers_catch_up", 0)
    sim.start_all()
    sim.run_for(3_000)
    observer = next(n for n in sim.nodes.values() if not n.is_voter)
    observer.disk.election = ElectionState(observer.raft.epoch, None, 1)
    with pytest.raises(InvariantViolation, match="voted"):
        sim.invariants.check()


def test_two_nodes_exposing_different_batches_at_one_offset_are_caught() -> None:
    record = CommittedRecord()
    ours, theirs = MemoryLog(), MemoryLog()
    ours.append(build_batch_from_values([b"a"], timestamp=0, partition_leader_epoch=1), epoch=1)
    theirs.append(build_batch_from_values([b"b"], timestamp=0, partition_leader_epoch=1), epoch=1)
    assert record.absorb(1, ours, 0, 1) == 1
    assert record.values(0, 1) == [b"a"]
    with pytest.raises(InvariantViolation, match="differs from the committed one"):
        record.absorb(2, theirs, 0, 1)


# -- snapshots -----------------------------------------------------------------------------------


def snapshotting(seed: int = 0) -> Simulation:
    """A settled cluster whose nodes have written snapshots and moved their log starts."""
    sim = simulation_for("snapshot_catch_up", seed)
    sim.start_all()
    sim.client.start(10)
    sim.run_for(3_000)
    require_convergence(sim)
    assert all(n.disk.log.snapshot_ids() for n in sim.live_nodes())
    return sim


def test_a_snapshot_that_does_not_hold_the_committed_values_is_caught() -> None:
    sim = snapshotting()
    node = a_follower(sim)
    log = node.disk.log
    end = log.log_end_offset
    epoch = log.last_fetched_epoch
    forged = b"%d 1 %s\nforged" % (end, bytes(16).hex().encode())
    snapshot_id = OffsetAndEpoch(end, epoch)
    data = build_batch_from_values([b""]) + forged
    if not log.create_snapshot(snapshot_id, data):  # the node wrote one there already
        log._snapshots[snapshot_id] = data  # tampered in place
        log.snapshot_changes += 1
    with pytest.raises(InvariantViolation, match="not the committed ones"):
        sim.invariants.check()


def test_a_log_start_without_a_snapshot_there_is_caught() -> None:
    sim = snapshotting()
    node = a_follower(sim)
    log = node.disk.log
    log.advance_log_start_offset(log.log_end_offset)  # past every snapshot it holds
    with pytest.raises(InvariantViolation, match="SnapshotAtLogStart"):
        sim.invariants.check()


def test_a_state_machine_holding_other_values_is_caught() -> None:
    sim = snapshotting()
    node = a_follower(sim)
    node.machine.digest = bytes(16)  # same offset, other contents
    sim.invariants._machine_seen.clear()
    with pytest.raises(InvariantViolation, match="state machine holds"):
        sim.invariants.check()


class LeaderLoader(SimNode):
    """A broken core: it tells a leader's state machine to load the latest snapshot."""

    def _hand_committed(self, ready: Ready) -> None:
        latest = self.disk.log.latest_snapshot_id
        if ready.role == "Leader" and latest is not None and self.machine.claimed_epoch:
            ready = attrs.evolve(ready, loaded_snapshot=latest)
        super()._hand_committed(ready)


def test_a_leader_told_to_load_a_snapshot_is_caught() -> None:
    found = failures("snapshot_catch_up", node_class=LeaderLoader)
    assert found and all("LeaderNeverLoadSnapshot" in f for f in found)


def test_a_core_that_does_not_report_a_downloaded_snapshot_is_caught() -> None:
    real = quorum.raft.snapshots.install_snapshot

    def silent(ctx: CoreContext, state: Follower, snapshot_id: OffsetAndEpoch) -> None:
        real(ctx, state, snapshot_id)
        ctx.outbox.loaded_snapshot = None

    with mock.patch.object(quorum.raft.snapshot_fetch, "install_snapshot", silent):
        found = failures("snapshot_catch_up")
    assert len(found) == len(FEW_SEEDS) and all("must be consecutive" in f for f in found)
