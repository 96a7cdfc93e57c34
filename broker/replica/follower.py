"""The follower side of one partition: where to fetch from, and what an answer does.

* ``fetch_position``: the fetch offset is the log end offset; the last
  fetched epoch is the epoch of the last batch (-1 for an empty log, so the
  leader skips the divergence check, as Kafka sends no epoch then).
* ``truncation_offset`` (KIP-279, Kafka's getOffsetTruncationState): on a
  DivergingEpoch ``(epoch, end offset)`` the follower cuts at the smaller of
  the leader's end offset and its own end offset for that epoch, never above
  its log end; the producer state is then rebuilt to the new log end at its
  next need (``Partition.after_truncation``). When the follower does not know the leader's epoch, it cuts at
  the end of its largest epoch below it and fetches again (the next answer
  may diverge further back).
* ``apply_fetched``: whole batches are appended as they are (offsets and
  epochs are the leader's) and update the producer state (no checks: the
  leader made them), then the high watermark becomes
  ``min(leader's HW, own log end offset)`` and the log start follows the
  leader's (up to the high watermark).
"""

from __future__ import annotations

import attrs

from broker.replica.partition import Partition
from broker.replica.producer_state import appended_batches
from quorum.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LogError, OffsetAndEpoch
from quorum.wire.batch import iter_batch_headers
from quorum.wire.errors import WireError

__all__ = ["FetchPosition", "FetchedOutcome", "apply_fetched", "fetch_position",
           "truncate_to_diverging_epoch", "truncation_offset"]


@attrs.frozen(kw_only=True)
class FetchPosition:
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int


@attrs.frozen(kw_only=True)
class FetchedOutcome:
    """What one partition's fetch answer did to the follower's log."""

    appended: bool = False
    high_watermark_moved: bool = False
    # the answer could not be appended (corrupt or out of order): back off and fetch again
    error: str | None = None


def fetch_position(partition: Partition) -> FetchPosition:
    log = partition.log
    empty = log.log_start_offset == log.log_end_offset
    return FetchPosition(
        fetch_offset=log.log_end_offset,
        last_fetched_epoch=UNDEFINED_EPOCH if empty else log.last_fetched_epoch,
        log_start_offset=log.log_start_offset,
    )


def truncation_offset(partition: Partition, diverging: OffsetAndEpoch) -> int:
    """Where to cut the log after the leader answered DivergingEpoch ``diverging``."""
    log_end = partition.log_end_offset
    if diverging.offset == UNDEFINED_OFFSET:
        return log_end  # nothing known: keep the log, fetch again
    local = partition.log.end_offset_for_epoch(diverging.epoch)
    if local.offset == UNDEFINED_OFFSET or local.epoch == UNDEFINED_EPOCH:
        return min(diverging.offset, log_end)
    if local.epoch != diverging.epoch:
        # the leader's epoch is unknown here: cut to the end of ours below it, ask again
        return min(local.offset, log_end)
    return min(local.offset, diverging.offset, log_end)


def truncate_to_diverging_epoch(partition: Partition, diverging: OffsetAndEpoch) -> int:
    """Cut the log for a DivergingEpoch answer; the new log end offset."""
    offset = truncation_offset(partition, diverging)
    if offset < partition.log_end_offset:
        if offset < partition.log_start_offset:
            partition.log.truncate_fully_and_start_at(offset)
        else:
            partition.log.truncate_to(offset)
        partition.after_truncation()
    return partition.log_end_offset


def _whole_batches(records: bytes | memoryview) -> memoryview:
    """The records up to the end of their last whole batch (fetch data may end mid-batch)."""
    view = memoryview(records)
    end = 0
    for position, header in iter_batch_headers(view, check_crc=False):
        end = position + header.size
    return view[:end]


def apply_fetched(
    partition: Partition,
    *,
    records: bytes | memoryview | None,
    leader_high_watermark: int,
    leader_log_start_offset: int,
    now_ms: int = 0,
) -> FetchedOutcome:
    appended = False
    if records:
        try:
            batches = _whole_batches(records)
            if len(batches):
                before = partition.log_position()
                partition.log.append_as_follower(batches)
                # the same producer state as the leader's, unchecked (the leader checked)
                partition.track_appended(before, appended_batches(batches), now_ms)
                appended = True
        except (LogError, WireError) as exc:
            return FetchedOutcome(error=f"cannot append the fetched records: {exc}")
    moved = partition.learn_high_watermark(leader_high_watermark)
    if leader_log_start_offset > partition.log_start_offset:
        new_start = min(leader_log_start_offset, partition.high_watermark)
        if new_start > partition.log_start_offset:
            partition.log.advance_log_start_offset(new_start)
    return FetchedOutcome(appended=appended, high_watermark_moved=moved)
