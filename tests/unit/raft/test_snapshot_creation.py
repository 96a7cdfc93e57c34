"""Snapshots the state machine writes, the log start they allow, and start-up with them.

Item 34 of kraft-facts 7.3 (createSnapshot refusals), Kafka's retention rule
(metadata.max.retention.bytes; the .ms half is in test_snapshot_retention_ms) and the
start-up contract of ``loaded_snapshot``.
"""

from __future__ import annotations

import attrs
import pytest

from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.raft.core import RaftCore
from quorum.raft.errors import InvalidSnapshotIdError, RaftError
from quorum.raft.output import Ready
from quorum.raft.rpc import FetchAnswer
from quorum.wire.batch import set_base_offset
from quorum.wire.messages import FetchRequest
from quorum.wire.records import build_batch_from_values

from .builders import begin_epoch_request, fetch_request, make_leader, new_core, reply, requests_in
from .harness import TEST_CONFIG
from .snapshot_builders import NOW, committed_leader, epoch_log, leader_with_log_start

# -- refusals (KafkaRaftClientSnapshotTest.testCreateSnapshotAs*WithInvalidSnapshotId) --------


def test_a_leader_refuses_a_snapshot_above_its_high_watermark() -> None:
    core = committed_leader()
    core.propose([b"uncommitted"], NOW)
    core.poll(NOW + 100)
    hw = core.high_watermark
    assert core.log.log_end_offset == hw + 1
    with pytest.raises(InvalidSnapshotIdError, match="above the high watermark"):
        core.create_snapshot(OffsetAndEpoch(hw + 1, 1), b"s")
    assert core.log.snapshot_ids() == []


def test_a_leader_refuses_a_snapshot_whose_epoch_is_not_the_logs() -> None:
    core = committed_leader()
    for epoch in (0, 2):
        with pytest.raises(InvalidSnapshotIdError, match="has epoch 1"):
            core.create_snapshot(OffsetAndEpoch(3, epoch), b"s")


def test_a_snapshot_must_end_at_a_batch_boundary() -> None:
    core = new_core(1, config=attrs.evolve(TEST_CONFIG, append_linger_ms=0))
    make_leader(core, NOW)
    core.propose([b"a", b"b", b"c"], NOW)  # one batch at offsets 1..3
    core.flushed(core.log.flush(), NOW)
    core.handle(fetch_request(2, 1, offset=4, last_epoch=1), NOW)
    assert core.high_watermark == 4
    with pytest.raises(InvalidSnapshotIdError, match="batch boundary"):
        core.create_snapshot(OffsetAndEpoch(2, 1), b"s")
    assert core.create_snapshot(OffsetAndEpoch(4, 1), b"s")


def test_a_follower_refuses_a_snapshot_above_its_high_watermark_or_with_a_wrong_epoch() -> None:
    core = new_core(2, log=epoch_log(1, 1, 1, 1))
    ready = core.handle(begin_epoch_request(1, epoch=2), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    answer = FetchAnswer(leader_id=1, leader_epoch=2, high_watermark=2)
    core.handle(reply(1, request_id, answer, "fetch"), 1)
    assert core.high_watermark == 2
    with pytest.raises(InvalidSnapshotIdError, match="above the high watermark"):
        core.create_snapshot(OffsetAndEpoch(3, 1), b"s")
    with pytest.raises(InvalidSnapshotIdError, match="epoch"):
        core.create_snapshot(OffsetAndEpoch(2, 2), b"s")
    assert core.create_snapshot(OffsetAndEpoch(2, 1), b"s")


def test_a_snapshot_at_or_below_the_log_start_or_already_held_is_not_created() -> None:
    core = leader_with_log_start()
    start = core.log.log_start_offset
    latest = core.log.latest_snapshot_id
    assert latest is not None
    assert not core.create_snapshot(OffsetAndEpoch(start, 1), b"again")
    assert not core.create_snapshot(OffsetAndEpoch(start - 1, 1), b"older")
    assert not core.create_snapshot(latest, b"again")
    assert core.log.read_snapshot(latest) != b"again"


def test_a_new_core_with_an_empty_log_creates_no_snapshot_at_zero() -> None:
    core = new_core(1, voters=(1,))
    assert not core.create_snapshot(OffsetAndEpoch(0, 0), b"nothing")


# -- retention ------------------------------------------------------------------------------


def test_the_log_start_moves_to_the_next_snapshot_only_over_the_retention_bytes() -> None:
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=10_000)
    core.create_snapshot(OffsetAndEpoch(3, 1), b"a")
    core.create_snapshot(OffsetAndEpoch(5, 1), b"b")
    assert not core.maybe_clean_log(now_ms=0)
    log: MemoryLog = core.log
    assert log.log_start_offset == 0 and len(log.snapshot_ids()) == 2  # under the limit
    small = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=1)
    small.create_snapshot(OffsetAndEpoch(3, 1), b"a")
    assert not small.maybe_clean_log(now_ms=0)
    assert small.log.log_start_offset == 0  # the only snapshot is the latest: kept with its log
    small.create_snapshot(OffsetAndEpoch(5, 1), b"b")
    assert small.log.log_start_offset == 0  # nothing moves until the rule is applied
    assert small.maybe_clean_log(now_ms=0)
    assert small.log.log_start_offset == 5
    assert small.log.snapshot_ids() == [OffsetAndEpoch(5, 1)]


def test_no_retention_limit_keeps_every_snapshot_and_the_whole_log() -> None:
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=-1)
    for offset in (2, 4, 6):
        core.create_snapshot(OffsetAndEpoch(offset, 1), b"x" * 1000)
    assert core.log.log_start_offset == 0 and len(core.log.snapshot_ids()) == 3
    assert core.maybe_clean_log(now_ms=0) is False


def test_several_old_snapshots_go_in_one_cleaning_until_one_is_left() -> None:
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=0)
    for offset in (2, 4, 6):
        core.create_snapshot(OffsetAndEpoch(offset, 1), b"x" * 10)
    assert core.log.log_start_offset == 0 and len(core.log.snapshot_ids()) == 3
    assert core.maybe_clean_log(now_ms=0)
    assert core.log.log_start_offset == 6
    assert core.log.snapshot_ids() == [OffsetAndEpoch(6, 1)]


def test_the_retention_rule_is_applied_every_cleaner_interval() -> None:
    interval = 50_000  # the core started at 0: the first cleaning is due then
    core = committed_leader(
        batches=6, append_linger_ms=0, metadata_max_retention_bytes=0, log_cleaner_interval_ms=interval
    )
    core.create_snapshot(OffsetAndEpoch(3, 1), b"a")
    core.create_snapshot(OffsetAndEpoch(5, 1), b"b")
    core.poll(interval - 1)
    assert core.log.log_start_offset == 0
    core.poll(interval)
    assert core.log.log_start_offset == 5
    core.create_snapshot(OffsetAndEpoch(7, 1), b"c")
    ready = core.poll(2 * interval - 1)
    assert core.log.log_start_offset == 5 and ready.next_deadline_ms == 2 * interval
    core.poll(2 * interval)
    assert core.log.log_start_offset == 7


# -- start-up --------------------------------------------------------------------------------


def restarted(log: MemoryLog, node_id: int = 2) -> tuple[RaftCore, Ready]:
    core = new_core(node_id, log=log)
    return core, core.poll(0)


def test_a_restarted_node_loads_its_latest_snapshot_first() -> None:
    log = epoch_log(1, 1, 1, 1, 1)
    log.create_snapshot(OffsetAndEpoch(2, 1), b"old")
    log.create_snapshot(OffsetAndEpoch(4, 1), b"new")
    core, first = restarted(log)
    assert first.loaded_snapshot == OffsetAndEpoch(4, 1)
    assert core.poll(1).loaded_snapshot is None  # told once
    ready = core.handle(begin_epoch_request(1, epoch=2), 2)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    answer = FetchAnswer(leader_id=1, leader_epoch=2, high_watermark=5)
    ready = core.handle(reply(1, request_id, answer, "fetch"), 3)
    assert ready.committed is not None and (ready.committed.start, ready.committed.end) == (4, 5)


def test_a_restarted_node_without_snapshots_loads_nothing() -> None:
    _, first = restarted(epoch_log(1, 1))
    assert first.loaded_snapshot is None


def test_the_bootstrap_snapshot_is_not_loaded_as_state() -> None:
    log = MemoryLog()
    log.create_snapshot(OffsetAndEpoch(0, 0), b"voters")
    _, first = restarted(log)
    assert first.loaded_snapshot is None


def test_a_single_voter_restarting_as_leader_loads_its_snapshot_before_leading() -> None:
    log = epoch_log(1, 1, 1)
    log.create_snapshot(OffsetAndEpoch(3, 1), b"state")
    core = new_core(1, voters=(1,), log=log)
    first = core.poll(0)
    assert first.loaded_snapshot == OffsetAndEpoch(3, 1) and core.is_leader
    ready = core.flushed(core.log.flush(), 0)
    assert ready.loaded_snapshot is None
    assert ready.committed is not None and ready.committed.start == 3


def test_a_log_started_above_zero_without_a_snapshot_there_refuses_to_start() -> None:
    log = epoch_log(1, 1, 1, 1)
    log.advance_log_start_offset(2)
    with pytest.raises(RaftError, match="holds no snapshot there"):
        new_core(2, log=log)


def test_a_crash_between_download_and_truncation_is_repaired_at_start() -> None:
    # a short tail of a higher epoch than the downloaded snapshot's
    log = epoch_log(1, 1, 5)
    log.create_snapshot(OffsetAndEpoch(10, 3), b"downloaded")
    _, first = restarted(log)
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)
    assert log.last_fetched_epoch == 3
    assert first.loaded_snapshot == OffsetAndEpoch(10, 3)


def test_a_follower_fetches_from_the_snapshot_after_a_restart() -> None:
    log = MemoryLog()
    log.create_snapshot(OffsetAndEpoch(7, 2), b"s")
    log.truncate_to_latest_snapshot()
    batch = bytearray(build_batch_from_values([b"x"], partition_leader_epoch=2))
    set_base_offset(batch, 0, 7)
    log.append_as_follower(bytes(batch))
    core, _ = restarted(log)
    ready = core.handle(begin_epoch_request(1, epoch=2), 1)
    ((_, _, fetch),) = requests_in(ready, FetchRequest)
    part = fetch.topics[0].partitions[0]
    assert (part.fetch_offset, part.last_fetched_epoch) == (8, 2)

