"""Log cleaner throughput on a compacted topic's log, and the longest step it causes.

Run ``python -m bench.bench_cleaner [--runs 3] [--mib 64] [--keys 10000]
[--value-bytes 100] [--batch-records 100] [--slice-batches 200] [--slice-kib 256]
[--codec none]``.
Workload: one partition log of ``--mib`` MiB of record batches (``--batch-records``
records each, keys drawn at random from ``--keys``, values of ``--value-bytes``)
in segments of 16 MiB, then one full cleaning round (``CleaningJob``) from the
log start to the active segment, run slice by slice as the broker runs it (the
fsyncs inline).  Reported, median of ``--runs`` runs each on a fresh log: MiB/s
cleaned (bytes of the segments read over the round's wall time), the records
kept, and the longest single slice, i.e. the longest the trio thread would be
held away from every other task (the fsync of each cleaned segment is timed
separately: the broker runs it in a worker thread).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import attrs

from quorum.log import CleanerConfig, FileLog, LogCleaner, LogConfig, OpenMode, SyncFile
from quorum.wire.compression import Compression
from quorum.wire.records import Record, build_batch

__all__ = ["main"]

T0 = 1_700_000_000_000


@attrs.frozen(kw_only=True)
class Round:
    seconds: float
    bytes_read: int
    records_read: int
    records_kept: int
    slices: int
    longest_slice_ms: float
    longest_fsync_ms: float
    segments: int


def fill(directory: Path, args: argparse.Namespace, rng: random.Random) -> FileLog:
    config = LogConfig(segment_bytes=16 << 20, compact=True, delete=False)
    mode = OpenMode.for_data_partition(log_start_offset=None, recovery_point=0, clean_shutdown=True)
    log = FileLog(directory / "bench-0", config, mode=mode)
    value = b"v" * args.value_bytes
    codec = Compression[args.codec.upper()]
    target = args.mib << 20
    size = 0
    while size < target:
        records = [
            Record(offset_delta=i, key=b"key-%d" % rng.randrange(args.keys), value=value)
            for i in range(args.batch_records)
        ]
        batch = build_batch(records, base_timestamp=T0, compression=codec)
        log.append(batch, epoch=1)
        size += len(batch)
    log.roll()
    return log


def clean_once(log: FileLog, slice_batches: int, slice_kib: int) -> Round:
    cleaner = LogCleaner(slice_batches=slice_batches, slice_bytes=slice_kib * 1024)
    config = CleanerConfig(min_cleanable_dirty_ratio=0.0)
    candidate = cleaner.judge(log, high_watermark=log.log_end_offset, now_ms=T0, config=config)
    job = cleaner.job(log, candidate, config=config, now_ms=T0)
    longest_slice = longest_fsync = 0.0
    started = last = time.perf_counter()
    for effect in job.steps():
        now = time.perf_counter()
        if isinstance(effect, SyncFile):
            longest_slice = max(longest_slice, now - last)
            effect.perform()
            last = time.perf_counter()
            longest_fsync = max(longest_fsync, last - now)
            continue
        longest_slice = max(longest_slice, now - last)
        last = now
    end = time.perf_counter()
    longest_slice = max(longest_slice, end - last)
    assert job.result is not None and job.result.end_offset is not None, job.result
    stats = job.result.stats
    return Round(
        seconds=end - started,
        bytes_read=candidate.cleanable_bytes,
        records_read=stats.records_read,
        records_kept=stats.records_kept,
        slices=stats.slices,
        longest_slice_ms=longest_slice * 1000,
        longest_fsync_ms=longest_fsync * 1000,
        segments=stats.segments_replaced,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--batch-records", type=int, default=100)
    parser.add_argument("--slice-batches", type=int, default=200)
    parser.add_argument("--slice-kib", type=int, default=256)
    parser.add_argument("--codec", default="none", choices=[c.name.lower() for c in Compression])
    args = parser.parse_args(argv)
    rounds = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            log = fill(Path(tmp), args, random.Random(run))
            try:
                rounds.append(clean_once(log, args.slice_batches, args.slice_kib))
            finally:
                log.close()
    rate = statistics.median(r.bytes_read / r.seconds / (1 << 20) for r in rounds)
    print(
        f"cleaner: {args.mib} MiB log, {args.keys:,} keys, {args.value_bytes} B values, "
        f"{args.batch_records} records/batch, codec {args.codec}, "
        f"slices of {args.slice_batches} batches or {args.slice_kib} KiB; "
        f"median of {args.runs} runs"
    )
    header = (
        f"{'run':<5}{'MiB/s':>8}{'s':>8}{'records':>12}{'kept':>10}{'segments':>10}"
        f"{'slices':>8}{'longest slice ms':>18}{'longest fsync ms':>18}"
    )
    print(header)
    print("-" * len(header))
    for i, r in enumerate(rounds):
        print(
            f"{i:<5}{r.bytes_read / r.seconds / (1 << 20):>8.1f}{r.seconds:>8.2f}"
            f"{r.records_read:>12,}{r.records_kept:>10,}{r.segments:>10}{r.slices:>8}"
            f"{r.longest_slice_ms:>18.1f}{r.longest_fsync_ms:>18.1f}"
        )
    print(f"median: {rate:.1f} MiB/s cleaned; longest slice "
          f"{statistics.median(r.longest_slice_ms for r in rounds):.1f} ms (median of runs)")


if __name__ == "__main__":
    main()
