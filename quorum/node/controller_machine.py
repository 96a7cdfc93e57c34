"""``ControllerMachine``: the controller state machine in the task that owns the core.

It keeps ``QuorumController``'s committed image in step with the log (replay
of committed ranges, snapshots the core downloaded), makes the controller
active once this node leads and has replayed everything before its epoch
(Kafka's rule: claim only after catching up to the epoch start), and
renounces when leadership moves. Requests are evaluated against the working
image at the exact offsets their records will get; each answer waits until
the high watermark passes what the request wrote or saw, so no client ever
learns of uncommitted metadata. The committed image is written as a snapshot
when ``SnapshotPolicy`` says so (Kafka's bytes-between-snapshots and
snapshot-interval settings).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from quorum.controller.controller import QuorumController
from quorum.controller.elections import offline_partitions
from quorum.controller.error_responses import error_response
from quorum.controller.image import TopicPartition
from quorum.controller.log_records import read_committed_range
from quorum.controller.results import ControllerResult
from quorum.controller.snapshot import read_snapshot
from quorum.log import OffsetAndEpoch
from quorum.node.inputs import ControllerCall
from quorum.node.snapshot_policy import SnapshotPolicy, write_image_snapshot
from quorum.raft import Leader, OffsetRange, RaftCore, Ready
from quorum.raft.snapshots import snapshot_timestamp_ms
from quorum.wire.error_codes import Errors
from quorum.wire.messages import PartitionChangeRecord, PartitionRecord, RemoveTopicRecord
from quorum.wire.metadata_serde import encode_metadata_record

__all__ = ["ControllerMachine"]

_PARTITION_RECORDS = (PartitionRecord, PartitionChangeRecord, RemoveTopicRecord)

logger = logging.getLogger(__name__)


@attrs.frozen
class _Answer:
    wait_until: int  # the high watermark that makes the answer true
    epoch: int
    request: Any
    response: Any
    reply: Callable[[object], None]


class ControllerMachine:
    def __init__(
        self,
        controller: QuorumController,
        *,
        snapshot_max_bytes: int = 20 * 1024 * 1024,
        snapshot_max_interval_ms: int = 3_600_000,
    ) -> None:
        self.controller = controller
        self._snapshots = SnapshotPolicy(
            max_bytes=snapshot_max_bytes, max_interval_ms=snapshot_max_interval_ms
        )
        self._last_timestamp_ms = 0  # of the last record replayed (snapshot headers)
        self._answers: deque[_Answer] = deque()
        self._epoch = -1  # the epoch this node leads in while active
        # where the records just computed will land (checked when they are proposed)
        self._expected_offset: int | None = None
        self._claim = False  # leads and caught up: activate at the next ``due``
        self._offline: list[TopicPartition] = []

    # -- the hook -------------------------------------------------------------------------

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None:
        if ready.loaded_snapshot is not None:
            self._load_snapshot(core, ready.loaded_snapshot, now_ms)
        if ready.committed is not None:
            self._replay(core, ready.committed, now_ms)
        self._follow_leadership(core, now_ms)
        self._answer(core.high_watermark)

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> list[bytes]:
        controller = self.controller
        start = core.next_append_offset
        if not controller.is_active or start is None:
            leader = core.leader_id
            text = f"node {core.node_id} is not the active controller" + (
                "" if leader is None else f"; node {leader} leads the quorum"
            )
            item.reply(error_response(item.request, Errors.NOT_CONTROLLER, text))
            return []
        result = controller.handle(item.request, item.version, now_ms=now_ms, next_offset=start)
        payloads = [encode_metadata_record(r) for r in result.records]
        self._expected_offset = start
        # an answer without records still waits for everything proposed before it
        self._answers.append(
            _Answer(start + len(payloads), self._epoch, item.request, result.response, item.reply)
        )
        return payloads

    def proposed(self, offsets: OffsetRange) -> None:
        assert offsets.start == self._expected_offset, (
            f"records computed for offset {self._expected_offset} landed at {offsets.start}"
        )
        self._expected_offset = None

    def due(self, core: RaftCore, now_ms: int) -> list[bytes]:
        next_offset = core.next_append_offset
        if next_offset is None:
            return []
        if self._claim:
            self._claim = False
            result = self._activate(core, now_ms, next_offset)
        elif self.controller.is_active:
            result = self.controller.tick(now_ms, next_offset=next_offset)
        else:
            return []
        self._expected_offset = next_offset
        return [encode_metadata_record(r) for r in result.records]

    def deadline_ms(self) -> int | None:
        if self._claim:
            return 0
        if not self.controller.is_active:
            return None
        return self.controller.next_deadline_ms()

    def close(self) -> None:
        self._fail_answers("the node is shutting down")

    # -- committed state ---------------------------------------------------------------------

    def _load_snapshot(self, core: RaftCore, snapshot_id: OffsetAndEpoch, now_ms: int) -> None:
        assert not self.controller.is_active, "a leader never loads a snapshot"
        image = read_snapshot(core.log.read_snapshot(snapshot_id), snapshot_id)
        self.controller.load_snapshot(image)
        self._last_timestamp_ms = snapshot_timestamp_ms(core.log, snapshot_id) or 0
        self._snapshots.reset(now_ms)
        logger.info("loaded metadata snapshot %d-%d", snapshot_id.offset, snapshot_id.epoch)

    def _replay(self, core: RaftCore, committed: OffsetRange, now_ms: int) -> None:
        controller = self.controller
        start = max(committed.start, controller.committed.provenance.offset)
        if start >= committed.end:
            return
        read = read_committed_range(core.log, start, committed.end)
        last_epoch = read.last_epoch
        controller.replay_committed(
            [record for _, record in read.records], committed.end,
            controller.committed.provenance.epoch if last_epoch is None else last_epoch,
        )
        if read.last_timestamp_ms is not None:
            self._last_timestamp_ms = read.last_timestamp_ms
        if any(isinstance(r, _PARTITION_RECORDS) for _, r in read.records):
            self._report_offline()
        reason = self._snapshots.replayed(read.size_bytes, now_ms)
        if reason is not None:
            write_image_snapshot(
                core, controller.committed, reason, timestamp_ms=self._last_timestamp_ms
            )
            self._snapshots.reset(now_ms)

    def _report_offline(self) -> None:
        """Log when the set of partitions without a leader changes (an alarm, not a guess)."""
        offline = offline_partitions(self.controller.committed)
        if offline == self._offline:
            return
        self._offline = offline
        if offline:
            shown = ", ".join(str(tp) for tp in offline[:20])
            more = f" and {len(offline) - 20} more" if len(offline) > 20 else ""
            logger.warning(
                "%d partition(s) offline, no eligible leader in the ISR and unclean election "
                "not enabled for them: %s%s", len(offline), shown, more,
            )
        else:
            logger.info("no partition is offline")

    # -- leadership ----------------------------------------------------------------------------

    def _follow_leadership(self, core: RaftCore, now_ms: int) -> None:
        controller = self.controller
        state = core.state
        leads = isinstance(state, Leader)
        if not leads:
            self._claim = False
        if controller.is_active and (not leads or core.epoch != self._epoch):
            controller.deactivate()
            self._fail_answers("leadership moved before the request's records were committed")
            logger.info("controller renounced (epoch %d)", self._epoch)
        if leads and not controller.is_active:
            assert isinstance(state, Leader)
            # everything before this epoch must be in the image first (Kafka's claim rule)
            if controller.committed.provenance.offset > state.epoch_start_offset:
                self._claim = True

    def _activate(self, core: RaftCore, now_ms: int, next_offset: int) -> ControllerResult[None]:
        self._epoch = core.epoch
        result = self.controller.activate(now_ms, next_offset=next_offset, epoch=core.epoch)
        logger.info("controller active in epoch %d at offset %d", core.epoch, next_offset)
        return result

    # -- answers ---------------------------------------------------------------------------

    def _answer(self, high_watermark: int | None) -> None:
        answers = self._answers
        while answers and high_watermark is not None and answers[0].wait_until <= high_watermark:
            done = answers.popleft()
            done.reply(done.response)

    def _fail_answers(self, text: str) -> None:
        while self._answers:
            done = self._answers.popleft()
            done.reply(error_response(done.request, Errors.NOT_CONTROLLER, text))
