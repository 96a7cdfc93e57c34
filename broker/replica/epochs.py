"""A leader's answer to "where does epoch E end?" (DivergingEpoch, OffsetForLeaderEpoch).

Kafka's leader writes ``(its epoch, its log end offset)`` into the leader-epoch
cache when it becomes leader, before any append
(``UnifiedLog.maybeAssignEpochStartOffset``): a follower may hold records of
an epoch newer than every epoch in the new leader's log (successive elections
in a short time), and only that entry lets the leader tell it where its own
log ends. Our log protocol keeps no epoch that starts at the log end (a crash
could not tell it from a lost append), so the leader answers as if the entry
were there: ``leader_end_offset_for_epoch`` is Kafka's
``LeaderEpochFileCache.endOffsetFor`` over the log's cache plus
``(leader_epoch, epoch_start_offset)``.
"""

from __future__ import annotations

from quorum.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, OffsetAndEpoch, ReplicatedLog

__all__ = ["UNDEFINED", "leader_end_offset_for_epoch"]

UNDEFINED = OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)


def leader_end_offset_for_epoch(
    log: ReplicatedLog, epoch: int, *, leader_epoch: int, epoch_start_offset: int
) -> OffsetAndEpoch:
    """The largest epoch <= ``epoch`` in the log, and where the next one starts.

    The leader's own epoch ends at the log end offset; an epoch newer than it
    is undefined.
    """
    if epoch == UNDEFINED_EPOCH or epoch > leader_epoch:
        return UNDEFINED
    if epoch == leader_epoch:
        return OffsetAndEpoch(log.log_end_offset, leader_epoch)
    if log.log_start_offset == log.log_end_offset:
        # nothing cached: only the leader's own entry, which is above ``epoch``
        return OffsetAndEpoch(epoch_start_offset, epoch)
    latest = log.last_fetched_epoch
    assert latest <= leader_epoch, (
        f"the log holds epoch {latest}, newer than its leader's epoch {leader_epoch}"
    )
    if latest < leader_epoch and epoch >= latest:
        # the leader has not appended in its epoch: its entry is the next one
        return OffsetAndEpoch(epoch_start_offset, latest)
    return log.end_offset_for_epoch(epoch)
