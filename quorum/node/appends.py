"""Appends accepted by the leader, waiting for the high watermark to pass them.

invariant: an append is reported committed only if this node still leads
the epoch in which it accepted the records when the high watermark passes
their last offset. Then the records at those offsets are the ones it wrote
(a leader never truncates its own epoch). If leadership moves first, the
append fails with NOT_LEADER_OR_FOLLOWER: its outcome is unknown (a later
leader may still commit it), which is what Kafka tells a producer too.
"""

from __future__ import annotations

from collections import deque

import attrs

from quorum.node.inputs import AppendOutcome, AppendReply
from quorum.raft import LeaderAndEpoch, OffsetRange
from quorum.wire.error_codes import Errors

__all__ = ["PendingAppends", "not_leader_outcome"]


@attrs.frozen
class _Waiting:
    epoch: int
    offsets: OffsetRange
    reply: AppendReply


def not_leader_outcome(
    leader: LeaderAndEpoch, message: str, error: Errors = Errors.NOT_LEADER_OR_FOLLOWER
) -> AppendOutcome:
    return AppendOutcome(
        error=error,
        message=message,
        leader_id=-1 if leader.leader_id is None else leader.leader_id,
        leader_epoch=leader.epoch,
    )


class PendingAppends:
    def __init__(self, local_id: int) -> None:
        self._local_id = local_id
        self._waiting: deque[_Waiting] = deque()  # in offset order

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, epoch: int, offsets: OffsetRange, reply: AppendReply) -> None:
        assert not self._waiting or self._waiting[-1].offsets.end <= offsets.start, (
            "appends are accepted in offset order"
        )
        self._waiting.append(_Waiting(epoch, offsets, reply))

    def settle(self, leader: LeaderAndEpoch, *, leads: bool, high_watermark: int | None) -> None:
        """Complete what the high watermark passed; fail all if leadership moved."""
        waiting = self._waiting
        if not waiting:
            return
        if not leads or leader.leader_id != self._local_id or leader.epoch != waiting[0].epoch:
            self.fail_all(leader, "leadership moved before the records were committed")
            return
        while waiting and high_watermark is not None and waiting[0].offsets.end <= high_watermark:
            done = waiting.popleft()
            done.reply.finish(
                AppendOutcome(
                    base_offset=done.offsets.start,
                    last_offset=done.offsets.end - 1,
                    leader_id=self._local_id,
                    leader_epoch=done.epoch,
                )
            )

    def fail_all(
        self, leader: LeaderAndEpoch, message: str, error: Errors = Errors.NOT_LEADER_OR_FOLLOWER
    ) -> None:
        outcome = not_leader_outcome(leader, message, error)
        while self._waiting:
            self._waiting.popleft().reply.finish(outcome)
