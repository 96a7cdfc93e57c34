"""FetchSnapshot (api 59): the leader serves a snapshot in chunks, a follower downloads it.

Leader: Kafka's checks in Kafka's order (cluster id; topic and partition;
the epoch checks of a leader-only request; a snapshot it holds that is not
the bootstrap one; a position inside it), then the bytes
``[position, position + min(MaxBytes, size))`` with the whole size. A
successful FetchSnapshot from a voter counts for check quorum, as a Fetch does.

Follower (voter or observer): a Fetch answered with a SnapshotId starts a
download (``start_download``); while it runs, the follower sends
FetchSnapshot at the position it has reached instead of Fetch, one request
in flight. SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE or an answer without a
snapshot id drop the partial download and the follower fetches again (the
leader cleaned that snapshot away; the next Fetch names the new one). A
chunk that is not the one asked for is ignored. The chunks go to the log's
partial copy of the snapshot as they arrive (each synced); when ``written ==
size`` the copy is stored (a rename) and the log emptied at it
(``install_snapshot``).
"""

from __future__ import annotations

from typing import Final

import attrs

from quorum.log.protocol import OffsetAndEpoch
from quorum.raft import snapshot_adapters
from quorum.raft.adapters import METADATA_PARTITION, METADATA_TOPIC
from quorum.raft.common import handle_common_response, leader_only_error
from quorum.raft.context import CoreContext
from quorum.raft.output import InboundRequest
from quorum.raft.rpc import ErrorCode, FetchSnapshotAnswer, FetchSnapshotAsk
from quorum.raft.snapshots import BOOTSTRAP_SNAPSHOT_ID, install_snapshot
from quorum.raft.states import Follower, Leader, SnapshotDownload
from quorum.wire.messages import FetchSnapshotRequest, FetchSnapshotResponse

__all__ = [
    "handle_fetch_snapshot_request",
    "handle_fetch_snapshot_response",
    "on_fetch_snapshot_request",
    "on_fetch_snapshot_response",
    "send_fetch_snapshot",
    "start_download",
]

# answers that mean "this download cannot go on": start again with a Fetch
_RESTART: Final = frozenset({ErrorCode.SNAPSHOT_NOT_FOUND, ErrorCode.POSITION_OUT_OF_RANGE})


# -- the leader ---------------------------------------------------------------------------


def _answer(ctx: CoreContext, error: ErrorCode) -> FetchSnapshotAnswer:
    leader = ctx.leader_id
    return FetchSnapshotAnswer(
        partition_error=error, leader_id=-1 if leader is None else leader, leader_epoch=ctx.epoch
    )


def handle_fetch_snapshot_request(
    ctx: CoreContext, ask: FetchSnapshotAsk, now_ms: int
) -> FetchSnapshotAnswer:
    if not ctx.cluster_id_ok(ask.cluster_id):
        return FetchSnapshotAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID)
    if (ask.topic_name, ask.partition) != (METADATA_TOPIC, METADATA_PARTITION):
        unknown = _answer(ctx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return attrs.evolve(unknown, topic_name=ask.topic_name, partition=ask.partition)
    error = leader_only_error(ctx, ask.current_leader_epoch)
    state = ctx.state
    if error is not None or not isinstance(state, Leader):
        return _answer(ctx, error or ErrorCode.NOT_LEADER_OR_FOLLOWER)
    log, snapshot_id = ctx.log, ask.snapshot_id
    if snapshot_id == BOOTSTRAP_SNAPSHOT_ID or snapshot_id not in log.snapshot_ids():
        return _answer(ctx, ErrorCode.SNAPSHOT_NOT_FOUND)
    size = log.snapshot_size(snapshot_id)
    if not 0 <= ask.position < size:
        return _answer(ctx, ErrorCode.POSITION_OUT_OF_RANGE)
    if ask.max_bytes <= 0:
        # Kafka would return an empty chunk, and the download would never end
        return FetchSnapshotAnswer(error=ErrorCode.INVALID_REQUEST)
    data = log.read_snapshot(snapshot_id, ask.position, min(ask.max_bytes, size))
    state.leadership.note_voter_fetch(ask.replica_id, now_ms)
    return attrs.evolve(
        _answer(ctx, ErrorCode.NONE),
        snapshot_id=snapshot_id,
        size=size,
        position=ask.position,
        data=data,
    )


def on_fetch_snapshot_request(
    ctx: CoreContext, envelope: InboundRequest, now_ms: int
) -> FetchSnapshotResponse:
    assert isinstance(envelope.message, FetchSnapshotRequest)
    ask = snapshot_adapters.parse_fetch_snapshot_request(envelope.message)
    if ask is None:
        answer = FetchSnapshotAnswer(error=ErrorCode.INVALID_REQUEST)
    else:
        answer = handle_fetch_snapshot_request(ctx, ask, now_ms)
    return snapshot_adapters.fetch_snapshot_response(answer)


# -- the follower ---------------------------------------------------------------------------


def start_download(ctx: CoreContext, state: Follower, snapshot_id: OffsetAndEpoch) -> None:
    """The leader answered a Fetch with ``snapshot_id``: download it (or use our copy)."""
    floor = max(ctx.committed_offset, state.high_watermark or 0)
    # invariant: a leader only sends a snapshot past everything this node committed
    assert snapshot_id.offset >= floor, (
        f"the leader sent snapshot {snapshot_id}, below this node's committed offset {floor}"
    )
    if snapshot_id in ctx.log.snapshot_ids():
        install_snapshot(ctx, state, snapshot_id)
    else:
        state.snapshot_download = SnapshotDownload(snapshot_id)


def send_fetch_snapshot(ctx: CoreContext, state: Follower, now_ms: int) -> None:
    download = state.snapshot_download
    assert download is not None
    ask = FetchSnapshotAsk(
        cluster_id=ctx.cluster_id,
        replica_id=ctx.local_id,
        max_bytes=ctx.config.fetch_snapshot_max_bytes,
        topic_name=METADATA_TOPIC,
        partition=METADATA_PARTITION,
        current_leader_epoch=ctx.epoch,
        snapshot_id=download.snapshot_id,
        position=download.written,
    )
    ctx.send_request(state.leader_id, snapshot_adapters.fetch_snapshot_request(ask), now_ms)


def handle_fetch_snapshot_response(
    ctx: CoreContext, source: int, answer: FetchSnapshotAnswer, now_ms: int
) -> None:
    restart = answer.error == ErrorCode.NONE and answer.partition_error in _RESTART
    error = ErrorCode.NONE if restart else (answer.error or answer.partition_error)
    if handle_common_response(
        ctx, source, now_ms, error=error, leader_id=answer.leader_id, epoch=answer.leader_epoch
    ):
        return
    state = ctx.state
    if not isinstance(state, Follower) or state.leader_id != source:
        return
    download = state.snapshot_download
    if download is None:
        return
    if restart or answer.snapshot_id is None:
        state.snapshot_download = None
        state.fetch_deadline_ms = ctx.fetch_deadline(now_ms)
        return
    written = download.written
    if answer.snapshot_id != download.snapshot_id or answer.position != written:
        ctx.requests.back_off(source, now_ms)  # not the chunk this node asked for
        return
    state.heard_from_leader(ctx.fetch_deadline(now_ms))
    end = written + len(answer.data)
    if end > answer.size or (not answer.data and written < answer.size):
        state.snapshot_download = None  # a chunk that does not fit: start over
        return
    ctx.log.write_partial_snapshot(download.snapshot_id, written, answer.data)
    download.written = end
    if end == answer.size:
        state.snapshot_download = None
        ctx.log.store_partial_snapshot(download.snapshot_id)
        install_snapshot(ctx, state, download.snapshot_id)


def on_fetch_snapshot_response(
    ctx: CoreContext, source: int, msg: FetchSnapshotResponse, now_ms: int
) -> None:
    answer = snapshot_adapters.parse_fetch_snapshot_response(msg)
    handle_fetch_snapshot_response(ctx, source, answer, now_ms)
