"""Snapshots and the log start (KIP-630): what the core allows and how it cleans.

* ``snapshot_id_problem``: a state machine may snapshot only committed state
  that the log can vouch for: the id's offset at or below the committed
  offset, at a batch boundary, and its epoch that of the batch ending there
  (Kafka's ``validateOffsetAndEpoch``, checked exactly).
* ``maybe_clean``: Kafka's retention rules, applied by the core every
  ``log_cleaner_interval_ms``, size first, then time. While the log and all
  its snapshots hold more bytes than ``metadata.max.retention.bytes``, or
  while the oldest snapshot's last record is older than
  ``metadata.max.retention.ms``, the oldest snapshot goes and the log start
  moves up to the next one; the latest snapshot always stays. A snapshot's
  time is the LastContainedLogTimestamp of its SnapshotHeaderRecord (the
  first record of its first batch, a raft-level control record, as Kafka
  reads it), read once per snapshot id (``SnapshotTimestamps``: snapshots
  never change). Invariant: a log whose start is above 0 has a snapshot at
  its start (``delete_before`` moves the start only to one).
* ``install_snapshot``: a follower empties its log at a snapshot it just
  downloaded, or already held.
* ``recover_at_start``: the log a node starts with, made consistent (a crash
  after a download but before the truncation), and the snapshot its state
  machine must load first.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from quorum.log.protocol import OffsetAndEpoch, ReplicatedLog, SnapshotData
from quorum.raft.context import CoreContext
from quorum.raft.errors import InvalidSnapshotIdError, RaftError
from quorum.raft.states import Follower
from quorum.wire.batch import BATCH_HEADER_SIZE, BatchHeader
from quorum.wire.codec import decode
from quorum.wire.control import ControlRecordType, parse_control_record
from quorum.wire.errors import WireError
from quorum.wire.messages.control_records import SnapshotHeaderRecord
from quorum.wire.records import decode_batch

__all__ = [
    "BOOTSTRAP_SNAPSHOT_ID",
    "SnapshotTimestamps",
    "create_snapshot",
    "install_snapshot",
    "maybe_clean",
    "recover_at_start",
    "snapshot_id_problem",
    "snapshot_timestamp_ms",
]

# written by ``kafka-storage format`` for dynamic quorums; never served or loaded as state
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


def snapshot_id_problem(log: ReplicatedLog, committed: int, snapshot_id: OffsetAndEpoch) -> str | None:
    """Why ``snapshot_id`` cannot be a new snapshot of this log (None: it can).

    ``committed`` is the highest offset known committed here. Call only for
    ids above the log start (below it there is nothing left to capture).
    """
    offset, epoch = snapshot_id.offset, snapshot_id.epoch
    if offset > committed:
        return f"offset {offset} is above the high watermark {committed}"
    try:
        header = BatchHeader.parse(log.read(offset - 1, 1).records)
    except WireError as exc:  # pragma: no cover - the log holds whole batches
        return f"the log has no readable batch before offset {offset}: {exc}"
    if header.last_offset != offset - 1:
        return (
            f"offset {offset} is inside the batch at offsets "
            f"{header.base_offset}..{header.last_offset}: a snapshot ends at a batch boundary"
        )
    if header.partition_leader_epoch != epoch:
        return (
            f"the batch that ends at offset {offset} has epoch {header.partition_leader_epoch}, "
            f"not {epoch}"
        )
    return None


def create_snapshot(ctx: CoreContext, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
    """``RaftCore.create_snapshot``: validate, then store."""
    if not accepts_snapshot(ctx, snapshot_id):
        return False
    return ctx.log.create_snapshot(snapshot_id, data)


def accepts_snapshot(ctx: CoreContext, snapshot_id: OffsetAndEpoch) -> bool:
    """Whether ``snapshot_id`` would be a new snapshot; raises InvalidSnapshotIdError
    for an id no snapshot may have."""
    log = ctx.log
    if snapshot_id.offset <= log.log_start_offset or snapshot_id in log.snapshot_ids():
        return False
    committed = max(ctx.committed_offset, ctx.state.high_watermark or 0)
    problem = snapshot_id_problem(log, committed, snapshot_id)
    if problem is not None:
        raise InvalidSnapshotIdError(
            f"node {ctx.local_id} cannot write snapshot ({snapshot_id.offset}, "
            f"{snapshot_id.epoch}): {problem}; a snapshot holds state up to the end of a "
            "committed range the core handed over, with the epoch of its last batch"
        )
    return True


def _stored_bytes(log: ReplicatedLog) -> int:
    return log.size_in_bytes + sum(log.snapshot_size(s) for s in log.snapshot_ids())


def snapshot_timestamp_ms(log: ReplicatedLog, snapshot_id: OffsetAndEpoch) -> int | None:
    """The LastContainedLogTimestamp in a snapshot's header: the time of its last record.

    Only the first batch is read: a control batch whose first record is the
    SnapshotHeaderRecord. None for a snapshot that does not start so (not
    one a KRaft node wrote); such a snapshot never ages out.
    """
    try:
        head = BatchHeader.parse(log.read_snapshot(snapshot_id, 0, BATCH_HEADER_SIZE), 0)
        if not head.is_control:
            return None
        records = decode_batch(log.read_snapshot(snapshot_id, 0, head.size)).records
        kind, value = parse_control_record(records[0]) if records else (None, None)
        if kind != ControlRecordType.SNAPSHOT_HEADER:
            return None
        return decode(SnapshotHeaderRecord, 0, value or b"").last_contained_log_timestamp
    except WireError:
        return None


class SnapshotTimestamps:
    """Each held snapshot's header time, read once: a snapshot's bytes never change."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[OffsetAndEpoch, int | None] = {}

    def timestamp_ms(self, log: ReplicatedLog, snapshot_id: OffsetAndEpoch) -> int | None:
        if snapshot_id not in self._known:
            self._known[snapshot_id] = snapshot_timestamp_ms(log, snapshot_id)
        return self._known[snapshot_id]

    def keep_only(self, snapshot_ids: list[OffsetAndEpoch]) -> None:
        """Forget snapshots no longer held (the cache stays as small as the snapshot list)."""
        held = set(snapshot_ids)
        self._known = {s: t for s, t in self._known.items() if s in held}

    @property
    def cached_ids(self) -> frozenset[OffsetAndEpoch]:
        return frozenset(self._known)


def maybe_clean(
    log: ReplicatedLog,
    retention_bytes: int,
    retention_ms: int = -1,
    now_ms: int = 0,
    *,
    timestamps: SnapshotTimestamps | None = None,
) -> bool:
    """Apply the retention rules once (-1 turns a rule off); True if the log start moved.

    Kafka's order and test: the bytes rule, then the time rule, each
    dropping the oldest snapshot while it holds and a newer one exists; a
    snapshot is too old when ``now_ms - its time > retention_ms``.
    ``timestamps`` caches the snapshots' times between cleanings.
    """
    times = SnapshotTimestamps() if timestamps is None else timestamps
    moved = False
    if retention_bytes >= 0:
        moved |= _clean_while(log, lambda _oldest: _stored_bytes(log) > retention_bytes)
    if retention_ms >= 0:

        def too_old(oldest: OffsetAndEpoch) -> bool:
            timestamp = times.timestamp_ms(log, oldest)
            return timestamp is not None and now_ms - timestamp > retention_ms

        moved |= _clean_while(log, too_old)
    times.keep_only(log.snapshot_ids())
    return moved


def _clean_while(log: ReplicatedLog, breached: Callable[[OffsetAndEpoch], bool]) -> bool:
    """Drop the oldest snapshot (start the log at the next) while ``breached(oldest)``."""
    # a snapshot past the log end (a crash mid-download) cannot be a log start, and one
    # below the log start (written by a thread after the start passed it) must not stop
    # the walk: the next cleaning deletes it with the others before the start
    start, end = log.log_start_offset, log.log_end_offset
    ids = [s for s in log.snapshot_ids() if start <= s.offset <= end]
    moved = False
    for oldest, nxt in itertools.pairwise(ids):
        if not breached(oldest) or not log.delete_before(nxt):
            break
        moved = True
    return moved


def install_snapshot(ctx: CoreContext, state: Follower, snapshot_id: OffsetAndEpoch) -> None:
    """Make the log empty at ``snapshot_id`` (held by the log) and tell the driver to load it.

    Records above the committed offset may disagree with the snapshot (the
    leader sent it because they do not prove a common prefix), so they go
    first; the committed prefix below is the snapshot's own history, and
    ``truncate_to_latest_snapshot`` then empties the log at the snapshot.
    """
    log = ctx.log
    assert log.latest_snapshot_id == snapshot_id, (
        f"snapshot {snapshot_id} is not the latest of this log ({log.latest_snapshot_id})"
    )
    floor = max(ctx.committed_offset, log.log_start_offset)
    assert snapshot_id.offset >= floor, (
        f"snapshot {snapshot_id} is below the committed offset {floor}: it would undo commits"
    )
    if log.log_end_offset > floor:
        log.truncate_to(floor)
        ctx.outbox.truncated(floor)
    if not log.truncate_to_latest_snapshot():
        # the log already ends at the snapshot with its epoch: nothing to load
        assert log.log_end_offset == snapshot_id.offset, (snapshot_id, log.log_end_offset)
        return
    ctx.outbox.flush_log = True
    ctx.committed_offset = snapshot_id.offset
    if state.high_watermark is None or state.high_watermark < snapshot_id.offset:
        state.high_watermark = snapshot_id.offset
    ctx.outbox.loaded_snapshot = snapshot_id


def recover_at_start(log: ReplicatedLog) -> OffsetAndEpoch | None:
    """Check and repair the log a node starts with; the snapshot to load first, if any."""
    start = log.log_start_offset
    if start > 0 and all(s.offset != start for s in log.snapshot_ids()):
        raise RaftError(
            f"the metadata log starts at offset {start} but holds no snapshot there "
            f"(snapshots: {[(s.offset, s.epoch) for s in log.snapshot_ids()]}): the "
            "records below it are gone; restore the snapshot or reformat this node"
        )
    latest = log.latest_snapshot_id
    if latest is None or latest.offset == 0:
        return None
    if latest.offset > log.log_end_offset and not log.truncate_to_latest_snapshot():
        # a longer epoch than the snapshot's at a shorter log end: a tail the
        # snapshot replaces (the node crashed after a download, before truncating)
        log.truncate_to(log.log_start_offset)
        emptied = log.truncate_to_latest_snapshot()
        assert emptied, (latest, log.log_end_offset, log.last_fetched_epoch)
    return latest
