"""Check and prepare batches for an append, shared by the file and memory logs.

A leader append rewrites base offsets from the log end offset and stamps the
leader epoch (in place when the caller's buffer is writable); a follower
append keeps both.  A follower of the metadata log must continue the log
exactly; a data partition's follower only needs offsets at or above the log
end that increase from batch to batch (``allow_gaps``: its leader's log
cleaner removed the records in between, as Kafka's ``appendAsFollower``
accepts).  A follower's batches must lie within ``MAX_RELATIVE_OFFSET`` of the
first one, so one segment can index them (a fetch answer comes from one segment
of its leader, so they do).  Either way every batch
is a whole, CRC-valid v2 batch no larger than ``max_message_bytes``, and no
epoch is below ``latest_epoch`` (the log's ``last_fetched_epoch``: the last
batch's epoch, else the latest snapshot's).
"""

from __future__ import annotations

import attrs

from quorum.log.batch_scan import BatchInfo, ScanResult, scan_batches
from quorum.log.errors import InvalidAppendError
from quorum.log.protocol import AppendInfo
from quorum.log.roll import MAX_RELATIVE_OFFSET, beyond_reach
from quorum.wire.batch import set_base_offset, set_partition_leader_epoch

__all__ = ["PreparedAppend", "prepare_follower_append", "prepare_leader_append"]

_ANY_EPOCH = -(2**31)


@attrs.frozen(kw_only=True)
class PreparedAppend:
    """Validated batches with their final offsets and epochs, ready to write."""

    data: bytes | bytearray | memoryview
    batches: list[BatchInfo]
    info: AppendInfo


def _checked(scan: ScanResult, size: int, max_message_bytes: int, role: str) -> None:
    if scan.error is not None:
        raise InvalidAppendError(f"cannot append as {role}: {scan.error}")
    if scan.partial:
        raise InvalidAppendError(
            f"cannot append as {role}: the input ends with a partial batch at byte {scan.end} "
            f"of {size}; pass whole batches only"
        )
    if not scan.batches:
        raise InvalidAppendError(f"cannot append as {role}: no record batches given")
    for batch in scan.batches:
        if batch.size > max_message_bytes:
            raise InvalidAppendError(
                f"cannot append as {role}: the batch at byte {batch.position} is {batch.size} "
                f"bytes, above max.message.bytes {max_message_bytes}"
            )


def _info(batches: list[BatchInfo], size: int) -> AppendInfo:
    return AppendInfo(
        first_offset=batches[0].base_offset,
        last_offset=batches[-1].last_offset,
        last_epoch=batches[-1].epoch,
        batch_count=len(batches),
        size_bytes=size,
    )


def prepare_leader_append(
    data: bytes | bytearray | memoryview,
    *,
    epoch: int,
    log_end_offset: int,
    latest_epoch: int,
    max_message_bytes: int,
    check_crc: bool = True,
) -> PreparedAppend:
    if epoch < 0:
        raise InvalidAppendError(f"cannot append as leader: epoch {epoch} is negative")
    if epoch < latest_epoch:
        raise InvalidAppendError(
            f"cannot append as leader in epoch {epoch}: the log already holds epoch {latest_epoch}"
        )
    scan = scan_batches(data, min_epoch=_ANY_EPOCH, check_crc=check_crc)
    _checked(scan, len(data), max_message_bytes, "leader")
    buf: bytearray | memoryview
    if (isinstance(data, memoryview) and not data.readonly) or isinstance(data, bytearray):
        buf = data
    else:
        buf = bytearray(data)
    batches: list[BatchInfo] = []
    next_offset = log_end_offset
    for batch in scan.batches:
        set_base_offset(buf, batch.position, next_offset)
        set_partition_leader_epoch(buf, batch.position, epoch)
        span = batch.last_offset - batch.base_offset
        batches.append(
            BatchInfo(
                position=batch.position,
                size=batch.size,
                base_offset=next_offset,
                last_offset=next_offset + span,
                epoch=epoch,
                max_timestamp=batch.max_timestamp,
            )
        )
        next_offset += span + 1
    return PreparedAppend(data=buf, batches=batches, info=_info(batches, len(buf)))


def prepare_follower_append(
    data: bytes | bytearray | memoryview,
    *,
    log_end_offset: int,
    latest_epoch: int,
    max_message_bytes: int,
    allow_gaps: bool = False,
) -> PreparedAppend:
    scan = scan_batches(
        data, expected_offset=log_end_offset, min_epoch=latest_epoch, allow_gaps=allow_gaps
    )
    _checked(scan, len(data), max_message_bytes, "follower")
    info = _info(scan.batches, len(data))
    if beyond_reach(info.first_offset, info.last_offset):
        raise InvalidAppendError(
            f"cannot append as follower: offsets {info.first_offset} to {info.last_offset} "
            f"span more than {MAX_RELATIVE_OFFSET}, which no segment can index; "
            f"append them separately"
        )
    return PreparedAppend(data=data, batches=scan.batches, info=info)
