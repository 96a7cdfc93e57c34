"""Cores with snapshots, for the KIP-630 scenario tests (Kafka's KafkaRaftClientSnapshotTest)."""

from __future__ import annotations

import attrs

from quorum.log import MemoryLog, OffsetAndEpoch, ReplicatedLog
from quorum.raft.core import RaftCore
from quorum.raft.output import Ready
from quorum.raft.rpc import FetchAnswer, FetchSnapshotAnswer
from quorum.wire.codec import encode
from quorum.wire.control import ControlRecordType, build_control_batch
from quorum.wire.messages import FetchRequest, FetchSnapshotRequest
from quorum.wire.messages.control_records import SnapshotHeaderRecord
from quorum.wire.records import build_batch_from_values

from .builders import begin_epoch_request, fetch_request, make_leader, new_core, reply, requests_in
from .harness import TEST_CONFIG

__all__ = [
    "CLEANING_CONFIG",
    "NOW",
    "answer_fetch",
    "answer_fetch_snapshot",
    "commit_batches",
    "committed_leader",
    "epoch_log",
    "following_core",
    "header_snapshot",
    "leader_with_log_start",
    "only_request",
]

NOW = 10_000
# cleaning moves the log start to the latest snapshot (Kafka's rule with a zero byte budget)
CLEANING_CONFIG = attrs.evolve(TEST_CONFIG, metadata_max_retention_bytes=0, append_linger_ms=0)


def epoch_log(*epochs: int) -> MemoryLog:
    """One single-record batch per entry, stamped with that epoch, all flushed."""
    log = MemoryLog()
    for index, epoch in enumerate(epochs):
        log.append(build_batch_from_values([b"r%d" % index]), epoch=epoch)
    log.flush()
    return log


def commit_batches(core: RaftCore, count: int, now_ms: int = NOW) -> Ready:
    """The leader appends ``count`` one-record batches; voter 2 fetches each: all committed."""
    ready = core.poll(now_ms)
    drained_ms = now_ms + TEST_CONFIG.append_linger_ms  # the linger is over by then
    for index in range(count):
        core.propose([b"v%d" % index], now_ms)
        core.poll(drained_ms)
        core.flushed(core.log.flush(), drained_ms)
        ready = core.handle(
            fetch_request(2, core.epoch, offset=core.log.log_end_offset, last_epoch=core.epoch),
            drained_ms,
        )
    assert core.high_watermark == core.log.log_end_offset
    return ready


def committed_leader(batches: int = 3, **config: int) -> RaftCore:
    """Leader 1 of (1, 2, 3) in epoch 1 with ``batches`` committed one-record batches."""
    core = new_core(1, config=attrs.evolve(TEST_CONFIG, **config))
    make_leader(core, NOW)
    commit_batches(core, batches)
    return core


def header_snapshot(timestamp_ms: int, *, batch_timestamp_ms: int = 0) -> bytes:
    """Snapshot bytes that start as a KRaft snapshot does: a control batch holding a
    SnapshotHeaderRecord with LastContainedLogTimestamp ``timestamp_ms``.

    Kafka stamps that batch with its wall clock at writing (``batch_timestamp_ms``);
    the record, not the batch, holds the snapshot's time.
    """
    header = SnapshotHeaderRecord(last_contained_log_timestamp=timestamp_ms)
    return build_control_batch(
        ControlRecordType.SNAPSHOT_HEADER, encode(header, 0), timestamp=batch_timestamp_ms
    ) + build_batch_from_values([b"state"], base_offset=1)


def leader_with_log_start(batches: int = 4) -> RaftCore:
    """Leader 1 of (1, 2, 3) in epoch 1 whose log starts at a snapshot, one batch before its end.

    Offsets: LeaderChange at 0, then one record per batch; snapshots at
    ``end - 2`` and ``end - 1``, the second of which becomes the log start.
    """
    core = new_core(1, config=CLEANING_CONFIG)
    make_leader(core, NOW)
    commit_batches(core, batches)
    end = core.log.log_end_offset
    assert core.create_snapshot(OffsetAndEpoch(end - 2, 1), b"first snapshot")
    assert core.create_snapshot(OffsetAndEpoch(end - 1, 1), b"the latest snapshot, longer")
    assert core.maybe_clean_log(now_ms=0)
    assert core.log.log_start_offset == end - 1
    return core


def following_core(
    node_id: int = 2, *, leader: int = 1, epoch: int = 1, log: ReplicatedLog | None = None
) -> tuple[RaftCore, int, Ready]:
    """A voter following ``leader``, with its first Fetch in flight: (core, request id, Ready)."""
    core = new_core(node_id, log=log)
    ready = core.handle(begin_epoch_request(leader, epoch=epoch), 0)
    ((_, request_id, _),) = requests_in(ready, FetchRequest)
    return core, request_id, ready


def only_request(ready: Ready, kind: type) -> tuple[int, int, object]:
    found = requests_in(ready, kind)
    assert len(found) == 1, f"expected one {kind.__name__}, got {found}"
    return found[0]


def answer_fetch(
    core: RaftCore, request_id: int, now_ms: int, *, source: int = 1, **fields: object
) -> Ready:
    answer = FetchAnswer(leader_id=1, leader_epoch=core.epoch, **fields)  # type: ignore[arg-type]
    return core.handle(reply(source, request_id, answer, "fetch"), now_ms)


def answer_fetch_snapshot(
    core: RaftCore, request_id: int, now_ms: int, *, source: int = 1, **fields: object
) -> Ready:
    defaults: dict[str, object] = {"leader_id": 1, "leader_epoch": core.epoch}
    answer = FetchSnapshotAnswer(**{**defaults, **fields})  # type: ignore[arg-type]
    return core.handle(reply(source, request_id, answer, "fetch_snapshot"), now_ms)


def snapshot_request_of(ready: Ready) -> tuple[int, FetchSnapshotRequest]:
    _, request_id, message = only_request(ready, FetchSnapshotRequest)
    assert isinstance(message, FetchSnapshotRequest)
    return request_id, message
