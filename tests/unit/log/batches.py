"""Record batches for the log tests, built with the wire layer's encoder."""

from __future__ import annotations

from collections.abc import Sequence

from quorum.wire.batch import iter_batch_headers
from quorum.wire.records import Record, build_batch, build_batch_from_values

__all__ = ["batch_offsets", "make_batch", "make_timed_batch", "run_of_batches"]


def make_batch(
    record_count: int = 1,
    *,
    base_offset: int = 0,
    epoch: int = -1,
    value_size: int = 8,
    timestamp: int = 1_700_000_000_000,
    tag: int = 0,
) -> bytes:
    """A valid v2 batch of ``record_count`` records whose values encode ``tag``."""
    values = [
        (f"{tag}:{i}:".encode() + b"x" * value_size)[: max(value_size, 1)]
        for i in range(record_count)
    ]
    return build_batch_from_values(
        values, base_offset=base_offset, partition_leader_epoch=epoch, timestamp=timestamp
    )


def make_timed_batch(
    timestamps: Sequence[int], *, base_offset: int = 0, epoch: int = -1, tag: int = 0
) -> bytes:
    """A valid v2 batch with one record per timestamp (CreateTime, in that order)."""
    base = min(timestamps)
    records = [
        Record(offset_delta=i, timestamp_delta=ts - base, value=f"{tag}:{i}".encode())
        for i, ts in enumerate(timestamps)
    ]
    return build_batch(
        records, base_offset=base_offset, partition_leader_epoch=epoch, base_timestamp=base
    )


def run_of_batches(
    counts: Sequence[int],
    *,
    start_offset: int = 0,
    epochs: Sequence[int] | None = None,
    value_size: int = 8,
    tag: int = 0,
) -> bytes:
    """Contiguous batches (as a follower receives them) starting at ``start_offset``."""
    parts = []
    offset = start_offset
    for i, count in enumerate(counts):
        epoch = epochs[i] if epochs is not None else 1
        parts.append(
            make_batch(
                count, base_offset=offset, epoch=epoch, value_size=value_size, tag=tag * 1000 + i
            )
        )
        offset += count
    return b"".join(parts)


def batch_offsets(data: bytes | bytearray | memoryview) -> list[tuple[int, int, int]]:
    """(base offset, last offset, epoch) of each whole batch in ``data``."""
    return [
        (header.base_offset, header.last_offset, header.partition_leader_epoch)
        for _, header in iter_batch_headers(data)
    ]
