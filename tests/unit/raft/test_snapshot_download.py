"""The follower's side of KIP-630: downloading a snapshot with FetchSnapshot.

Kafka's KafkaRaftClientSnapshotTest, item 33 of kraft-facts 7.3.
"""

from __future__ import annotations

from pathlib import Path

from quorum.log import FileLog, OffsetAndEpoch, ReplicatedLog
from quorum.raft.rpc import ErrorCode
from quorum.raft.states import Follower, Prospective, Unattached
from quorum.wire.batch import set_base_offset
from quorum.wire.messages import FetchRequest, FetchSnapshotRequest
from quorum.wire.records import build_batch_from_values

from .builders import new_core, requests_in
from .harness import TEST_CONFIG
from .snapshot_builders import (
    answer_fetch,
    answer_fetch_snapshot,
    epoch_log,
    following_core,
    only_request,
    snapshot_request_of,
)

SNAPSHOT = OffsetAndEpoch(100, 1)
DATA = bytes(range(256)) * 3  # 768 bytes


def metadata_log(tmp_path: Path) -> tuple[Path, FileLog]:
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    return directory, FileLog(directory)


def downloading(log: ReplicatedLog | None = None) -> tuple[object, int]:
    """Node 2 following node 1 (epoch 1), told to fetch SNAPSHOT: (core, FetchSnapshot id)."""
    core, request_id, _ = following_core(log=log)
    ready = answer_fetch(core, request_id, 1, snapshot_id=SNAPSHOT, high_watermark=200)
    request_id, message = snapshot_request_of(ready)
    (part,) = message.topics[0].partitions
    assert (part.snapshot_id.end_offset, part.snapshot_id.epoch, part.position) == (100, 1, 0)
    return core, request_id


def test_a_snapshot_id_in_a_fetch_response_starts_a_download() -> None:
    core, request_id, _ = following_core()
    ready = answer_fetch(core, request_id, 1, snapshot_id=SNAPSHOT, high_watermark=200)
    _, message = snapshot_request_of(ready)
    assert message.replica_id == 2 and message.max_bytes == TEST_CONFIG.fetch_snapshot_max_bytes
    assert message.topics[0].name == "__cluster_metadata"
    assert message.topics[0].partitions[0].current_leader_epoch == 1
    assert requests_in(ready, FetchRequest) == []
    # the high watermark says nothing yet: the log is not a prefix of the leader's
    assert core.high_watermark is None  # type: ignore[attr-defined]


def test_a_half_valid_snapshot_id_is_ignored_and_does_not_reset_the_fetch_timer() -> None:
    core, request_id, _ = following_core()
    deadline = core.state.fetch_deadline_ms  # type: ignore[union-attr]
    for bad in (OffsetAndEpoch(100, -1), OffsetAndEpoch(-1, 1)):
        ready = answer_fetch(core, request_id, 5, snapshot_id=bad, high_watermark=200)
        assert requests_in(ready, FetchSnapshotRequest) == []
        assert core.state.fetch_deadline_ms == deadline  # type: ignore[union-attr]
        ready = core.poll(5 + TEST_CONFIG.retry_backoff_ms)
        _, request_id, _ = only_request(ready, FetchRequest)
    assert core.log.log_end_offset == 0


def test_a_download_resumes_at_the_position_reached_and_installs_the_snapshot() -> None:
    core, request_id = downloading(epoch_log(1, 1, 1))  # an old log of three records
    position = 0
    now = 2
    while True:
        chunk = DATA[position : position + 300]
        ready = answer_fetch_snapshot(
            core, request_id, now, snapshot_id=SNAPSHOT, size=len(DATA), position=position, data=chunk
        )
        position += len(chunk)
        if position == len(DATA):
            break
        assert ready.loaded_snapshot is None
        request_id, message = snapshot_request_of(ready)
        assert message.topics[0].partitions[0].position == position
        now += 1
    log = core.log
    assert log.read_snapshot(SNAPSHOT) == DATA
    assert (log.log_start_offset, log.log_end_offset, log.last_fetched_epoch) == (100, 100, 1)
    assert core.high_watermark == 100
    assert ready.loaded_snapshot == SNAPSHOT and ready.committed is None
    assert ready.truncated_to == 0  # three uncommitted records were dropped
    _, _, fetch = only_request(ready, FetchRequest)
    (part,) = fetch.topics[0].partitions
    assert (part.fetch_offset, part.last_fetched_epoch) == (100, 1)
    # committed ranges now start at the snapshot
    ready = answer_fetch(core, only_request(ready, FetchRequest)[1], now + 1, high_watermark=100)
    assert ready.committed is None and ready.loaded_snapshot is None


def test_committed_ranges_after_a_download_start_at_the_snapshot_offset() -> None:
    core, request_id = downloading()
    ready = answer_fetch_snapshot(
        core, request_id, 2, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA
    )
    _, request_id, _ = only_request(ready, FetchRequest)
    batch = bytearray(build_batch_from_values([b"next"], partition_leader_epoch=1))
    set_base_offset(batch, 0, 100)
    ready = answer_fetch(core, request_id, 3, high_watermark=101, records=bytes(batch))
    assert ready.committed is not None and (ready.committed.start, ready.committed.end) == (100, 101)


def test_snapshot_not_found_restarts_the_download_with_a_fetch() -> None:
    core, request_id = downloading()
    ready = answer_fetch_snapshot(
        core, request_id, 2, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA[:10]
    )
    request_id, _ = snapshot_request_of(ready)
    ready = answer_fetch_snapshot(
        core, request_id, 3, partition_error=ErrorCode.SNAPSHOT_NOT_FOUND
    )
    _, _, fetch = only_request(ready, FetchRequest)
    assert fetch.topics[0].partitions[0].fetch_offset == 0
    assert core.state.snapshot_download is None  # type: ignore[union-attr]


def test_an_answer_without_a_snapshot_id_restarts_the_download() -> None:
    core, request_id = downloading()
    ready = answer_fetch_snapshot(core, request_id, 2, snapshot_id=None, size=10, position=0)
    only_request(ready, FetchRequest)
    assert SNAPSHOT not in core.log.snapshot_ids()  # type: ignore[attr-defined]


def test_a_position_out_of_range_restarts_the_download() -> None:
    core, request_id = downloading()
    ready = answer_fetch_snapshot(
        core, request_id, 2, partition_error=ErrorCode.POSITION_OUT_OF_RANGE
    )
    only_request(ready, FetchRequest)


def test_a_chunk_for_another_snapshot_or_position_is_ignored() -> None:
    core, request_id = downloading()
    for wrong in (
        {"snapshot_id": OffsetAndEpoch(90, 1), "position": 0},
        {"snapshot_id": SNAPSHOT, "position": 5},
    ):
        ready = answer_fetch_snapshot(
            core, request_id, 2, size=len(DATA), data=DATA[:10], **wrong  # type: ignore[arg-type]
        )
        assert requests_in(ready, FetchSnapshotRequest) == []  # backing off
        ready = core.poll(2 + TEST_CONFIG.retry_backoff_ms)  # type: ignore[attr-defined]
        request_id, message = snapshot_request_of(ready)
        assert message.topics[0].partitions[0].position == 0  # nothing was kept


def test_a_response_from_a_newer_epoch_without_a_leader_makes_the_node_unattached() -> None:
    core, request_id = downloading()
    answer_fetch_snapshot(
        core,
        request_id,
        2,
        partition_error=ErrorCode.NOT_LEADER_OR_FOLLOWER,
        leader_id=-1,
        leader_epoch=2,
    )
    assert isinstance(core.state, Unattached) and core.epoch == 2  # type: ignore[attr-defined]


def test_a_response_from_a_newer_epoch_with_a_leader_follows_it_and_fetches_again() -> None:
    core, request_id = downloading()
    ready = answer_fetch_snapshot(
        core,
        request_id,
        2,
        partition_error=ErrorCode.FENCED_LEADER_EPOCH,
        leader_id=3,
        leader_epoch=2,
    )
    state = core.state  # type: ignore[attr-defined]
    assert isinstance(state, Follower) and (state.leader_id, state.epoch) == (3, 2)
    assert state.snapshot_download is None
    destination, _, _ = only_request(ready, FetchRequest)
    assert destination == 3


def test_a_response_from_an_older_epoch_is_ignored_and_the_chunk_asked_again() -> None:
    core, request_id = downloading()
    ready = answer_fetch_snapshot(
        core,
        request_id,
        2,
        partition_error=ErrorCode.UNKNOWN_LEADER_EPOCH,
        leader_id=3,
        leader_epoch=0,
    )
    assert isinstance(core.state, Follower) and core.epoch == 1  # type: ignore[attr-defined]
    _, message = snapshot_request_of(ready)
    assert message.topics[0].partitions[0].position == 0


def test_a_fetch_snapshot_response_after_the_node_stood_for_election_is_dropped() -> None:
    core, request_id = downloading()
    core.poll(10_000)  # type: ignore[attr-defined]
    assert isinstance(core.state, Prospective)  # type: ignore[attr-defined]
    ready = answer_fetch_snapshot(
        core, request_id, 10_001, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA
    )
    assert ready.loaded_snapshot is None and SNAPSHOT not in core.log.snapshot_ids()  # type: ignore[attr-defined]


def test_a_snapshot_already_held_is_installed_without_a_download() -> None:
    log = epoch_log(1, 1, 1)
    log.create_snapshot(SNAPSHOT, DATA)  # a crash after storing it, before truncating
    core = new_core(2, log=log)
    assert log.log_end_offset == 100  # start-up emptied the log at the snapshot
    first = core.poll(0)
    assert first.loaded_snapshot == SNAPSHOT


def test_an_observer_downloads_a_snapshot_too() -> None:
    core = new_core(7, voters=(1, 2, 3))
    ready = core.poll(0)
    destination, request_id, _ = only_request(ready, FetchRequest)
    ready = answer_fetch(core, request_id, 1, source=destination, snapshot_id=SNAPSHOT)
    if destination != 1:  # a voter that does not lead names the leader: follow it
        assert isinstance(core.state, Follower) and core.leader_id == 1
        _, request_id, _ = only_request(ready, FetchRequest)
        ready = answer_fetch(core, request_id, 2, snapshot_id=SNAPSHOT, high_watermark=120)
    request_id, _ = snapshot_request_of(ready)
    ready = answer_fetch_snapshot(
        core, request_id, 3, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA
    )
    assert ready.loaded_snapshot == SNAPSHOT and core.log.log_start_offset == 100


def test_a_download_onto_a_file_log_survives_a_restart(tmp_path: Path) -> None:
    directory, log = metadata_log(tmp_path)
    for index in range(3):
        log.append(build_batch_from_values([b"old%d" % index]), epoch=1)
    log.flush()
    core, request_id = downloading(log)
    ready = answer_fetch_snapshot(
        core, request_id, 2, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA
    )
    assert ready.loaded_snapshot == SNAPSHOT
    log.close()
    reopened = FileLog(directory)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 100)
    assert reopened.read_snapshot(SNAPSHOT) == DATA
    first = new_core(2, log=reopened).poll(0)
    assert first.loaded_snapshot == SNAPSHOT
    reopened.close()


def test_a_download_writes_each_chunk_as_it_arrives_and_stores_it_by_a_rename(
    tmp_path: Path,
) -> None:
    directory, log = metadata_log(tmp_path)
    core, request_id = downloading(log)
    partial = directory / "00000000000000000100-0000000001.checkpoint.part"
    for position in (0, 300):
        ready = answer_fetch_snapshot(
            core, request_id, 2 + position, snapshot_id=SNAPSHOT, size=len(DATA),
            position=position, data=DATA[position:position + 300],
        )
        request_id, _ = snapshot_request_of(ready)
        # the chunks so far are on disk, and no snapshot is listed or served yet
        assert partial.read_bytes() == DATA[:position + 300]
        assert log.snapshot_ids() == []
    ready = answer_fetch_snapshot(
        core, request_id, 700, snapshot_id=SNAPSHOT, size=len(DATA), position=600,
        data=DATA[600:],
    )
    assert ready.loaded_snapshot == SNAPSHOT
    assert not partial.exists() and log.snapshot_ids() == [SNAPSHOT]
    assert log.read_snapshot(SNAPSHOT) == DATA
    log.close()


def test_an_interrupted_download_leaves_no_snapshot_and_a_restart_removes_its_part(
    tmp_path: Path,
) -> None:
    directory, log = metadata_log(tmp_path)
    core, request_id = downloading(log)
    answer_fetch_snapshot(
        core, request_id, 2, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA[:300]
    )
    partial = directory / "00000000000000000100-0000000001.checkpoint.part"
    assert partial.exists()
    log.close()  # the node stops half-way
    reopened = FileLog(directory)
    assert not partial.exists() and reopened.snapshot_ids() == []
    assert (reopened.log_start_offset, reopened.log_end_offset) == (0, 0)
    # the next download starts over at position 0 and overwrites any partial copy
    core, request_id = downloading(reopened)
    ready = answer_fetch_snapshot(
        core, request_id, 2, snapshot_id=SNAPSHOT, size=len(DATA), position=0, data=DATA
    )
    assert ready.loaded_snapshot == SNAPSHOT and reopened.read_snapshot(SNAPSHOT) == DATA
    reopened.close()
