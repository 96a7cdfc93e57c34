"""Keyed batches and whole-log reads for the log cleaner's tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from quorum.log import CleanerConfig, CleaningResult, FileLog, LogCleaner, LogConfig, OpenMode
from quorum.wire.batch import BatchHeader
from quorum.wire.compression import Compression
from quorum.wire.records import Record, build_batch, iter_batches

__all__ = [
    "CLEANER",
    "COMPACTED",
    "T0",
    "Entry",
    "clean",
    "keyed_batch",
    "latest_by_key",
    "open_log",
    "read_batches",
    "read_entries",
    "reopen_after_crash",
]

T0 = 1_700_000_000_000
# small segments (each append of a few records rolls soon) and a sparse index
COMPACTED = LogConfig(segment_bytes=400, index_interval_bytes=150, compact=True, delete=False)
CLEANER = CleanerConfig(min_cleanable_dirty_ratio=0.0, delete_retention_ms=1_000)

Pair = tuple[bytes | None, bytes | None]


@attrs.frozen
class Entry:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def keyed_batch(
    pairs: Sequence[Pair],
    *,
    timestamp: int = T0,
    producer_id: int = -1,
    base_sequence: int = -1,
    compression: int = Compression.NONE,
) -> bytes:
    records = [
        Record(offset_delta=i, timestamp_delta=i, key=key, value=value)
        for i, (key, value) in enumerate(pairs)
    ]
    return build_batch(
        records,
        base_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
        compression=compression,
    )


def open_log(directory: Path, config: LogConfig = COMPACTED) -> FileLog:
    mode = OpenMode.for_data_partition(log_start_offset=None, recovery_point=0, clean_shutdown=False)
    return FileLog(directory, config, mode=mode)


def reopen_after_crash(log: FileLog) -> FileLog:
    """What a restart after kill -9 opens: recovery from offset 0."""
    log.abandon()
    return open_log(log.directory, log.config)


def read_batches(log: FileLog) -> list[tuple[BatchHeader, list[Entry]]]:
    """Every batch from the log start, by fetches of 1 KiB from each next offset."""
    found: list[tuple[BatchHeader, list[Entry]]] = []
    offset = log.log_start_offset
    for _ in range(10_000):
        if offset >= log.log_end_offset:
            return found
        result = log.read(offset, 1024)
        assert result.next_offset > offset, f"a read at {offset} made no progress"
        for batch in iter_batches(result.records):
            entries = [
                Entry(batch.offset_of(r), r.key, r.value, batch.timestamp_of(r))
                for r in batch.records
            ]
            found.append((batch.header, entries))
        offset = result.next_offset
    raise AssertionError("the log did not end within 10,000 reads")


def read_entries(log: FileLog) -> list[Entry]:
    return [entry for _, entries in read_batches(log) for entry in entries]


def latest_by_key(entries: Sequence[Entry]) -> dict[bytes | None, Entry]:
    latest: dict[bytes | None, Entry] = {}
    for entry in entries:
        latest[entry.key] = entry
    return latest


def clean(
    cleaner: LogCleaner,
    log: FileLog,
    *,
    now_ms: int,
    config: CleanerConfig = CLEANER,
    high_watermark: int | None = None,
) -> CleaningResult:
    """One round as the broker runs it (judged, run, checkpoint kept in memory)."""
    hw = log.log_end_offset if high_watermark is None else high_watermark
    candidate = cleaner.judge(log, high_watermark=hw, now_ms=now_ms, config=config)
    result = cleaner.job(log, candidate, config=config, now_ms=now_ms).run_to_end()
    cleaner.finish(log, result)
    return result
