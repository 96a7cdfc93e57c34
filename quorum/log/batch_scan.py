"""Validate a run of v2 record batches: headers, CRC-32C, offsets and epochs.

One scanner serves appends (batches from the network) and recovery (batches
read back from a segment file): it walks whole batches, stops at the first
one that is not valid, and reports why and where.  It never raises for bad
bytes, so each caller picks its own error channel.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from quorum.wire.batch import LOG_OVERHEAD, BatchHeader, batch_size_at
from quorum.wire.errors import CorruptRecordError

__all__ = ["BatchInfo", "EpochLookup", "ScanResult", "scan_batches"]


@attrs.frozen(kw_only=True)
class BatchInfo:
    """Where one valid batch sits in the scanned buffer and what it covers."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    epoch: int
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@attrs.frozen(kw_only=True)
class ScanResult:
    """The valid prefix of a buffer and, if it stopped early, why.

    ``end`` is the position after the last valid batch.  ``error`` is None when
    the scan reached the end of the buffer or stopped at a trailing partial
    batch (``partial`` then says so); otherwise it describes the bad batch at
    ``end``.
    """

    batches: list[BatchInfo]
    end: int
    error: str | None
    partial: bool


EpochLookup = Callable[[int], int | None]


def _check_batch(
    header: BatchHeader,
    expected_offset: int | None,
    min_epoch: int,
    epoch_at: EpochLookup | None,
    allow_gaps: bool,
) -> str | None:
    if header.last_offset_delta < 0:
        return f"has a negative last offset delta ({header.last_offset_delta})"
    if allow_gaps and expected_offset is not None and header.base_offset < expected_offset:
        return f"has base offset {header.base_offset}, below offset {expected_offset} already held"
    if not allow_gaps and expected_offset is not None and header.base_offset != expected_offset:
        return f"has base offset {header.base_offset} where offset {expected_offset} was expected"
    if header.partition_leader_epoch < min_epoch:
        return (
            f"has partition leader epoch {header.partition_leader_epoch}, "
            f"below the preceding epoch {min_epoch}"
        )
    if epoch_at is not None:
        recorded = epoch_at(header.base_offset)
        if recorded is not None and recorded != header.partition_leader_epoch:
            return (
                f"has partition leader epoch {header.partition_leader_epoch} but the "
                f"leader-epoch checkpoint puts offset {header.base_offset} in epoch {recorded} "
                f"(if the checkpoint is the damaged file, delete it to rebuild it from the log)"
            )
    return None


_PARTIAL = "partial"


def _header_or_problem(
    buf: bytes | bytearray | memoryview, position: int
) -> tuple[BatchHeader | None, str | None]:
    """The header at ``position``; else ``_PARTIAL`` or what is wrong with it."""
    end = len(buf)
    size = batch_size_at(buf, position)
    if size is None:
        return None, _PARTIAL
    if size < LOG_OVERHEAD:
        return None, f"record batch at byte {position} has a negative length"
    try:
        header = BatchHeader.parse(buf, position)
    except CorruptRecordError as exc:
        # a header cut short by the end of the buffer is a partial batch
        return None, _PARTIAL if end - position < size else str(exc)
    if position + size > end:
        return None, _PARTIAL
    return header, None


def scan_batches(
    buf: bytes | bytearray | memoryview,
    *,
    origin: int = 0,
    expected_offset: int | None = None,
    min_epoch: int = 0,
    check_crc: bool = True,
    epoch_at: EpochLookup | None = None,
    monotonic_epochs: bool = True,
    allow_gaps: bool = False,
) -> ScanResult:
    """Walk the whole valid batches at the front of ``buf``.

    Positions in the result (``BatchInfo.position``, ``end`` and messages) are
    offset by ``origin``: the place of ``buf`` in a larger file.
    ``expected_offset``: the base offset the first batch must have; later
    batches must follow contiguously.  None skips offset checks (a leader's
    input, whose offsets are about to be rewritten).  ``min_epoch``: epochs
    must not go below it and (if ``monotonic_epochs``) must not decrease.
    ``epoch_at``: the epoch a trusted record (the leader-epoch checkpoint)
    gives for a base offset, or None where it does not know; a batch that
    disagrees is invalid (the epoch field is not covered by the CRC).
    ``allow_gaps``: offsets need only increase from ``expected_offset`` on (a segment
    the log cleaner rewrote lacks the batches it removed).
    """
    batches: list[BatchInfo] = []
    position = 0
    while position < len(buf):
        header, problem = _header_or_problem(buf, position)
        if header is not None:
            problem = _check_batch(header, expected_offset, min_epoch, epoch_at, allow_gaps)
            if problem is None and check_crc and not header.crc_matches(buf, position):
                problem = "fails its CRC-32C check"
            if problem is not None:
                problem = f"record batch at byte {position} {problem}"
        if problem is not None or header is None:
            partial = problem == _PARTIAL
            error = (
                None
                if partial
                else str(problem).replace(f"at byte {position}", f"at byte {origin + position}")
            )
            return ScanResult(batches=batches, end=origin + position, error=error, partial=partial)
        batches.append(
            BatchInfo(
                position=origin + position,
                size=header.size,
                base_offset=header.base_offset,
                last_offset=header.last_offset,
                epoch=header.partition_leader_epoch,
                max_timestamp=header.max_timestamp,
            )
        )
        expected_offset = header.next_offset if expected_offset is not None else None
        if monotonic_epochs:
            min_epoch = header.partition_leader_epoch
        position += header.size
    return ScanResult(batches=batches, end=origin + position, error=None, partial=False)
