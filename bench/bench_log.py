"""File log throughput: leader appends with and without fsync, sequential reads; a broker
log directory of many partitions.

Run ``python -m bench.bench_log [--dir DIR] [--runs 5] [--mib 64] [--partitions 100000]``.  Workload:
16 KiB v2 batches of ~100-byte records, appended one batch per call as a
leader (offsets rewritten, CRC checked).  "fsync per batch" calls ``flush()``
after every append, as the metadata log does before acknowledging.  Reads go
from the log start to the end with 1 MiB ``max_bytes``, from the page cache.
Each row is the median [min-max] of ``--runs`` runs; the "raw file" rows do
the same writes with plain ``os.write`` (and ``os.fsync``) on the same disk in
the same run, so the ratio column shows what the log itself costs.
"data log append" is a data partition (no sync on roll; the time index and
offset index kept every ``index.interval.bytes``, each batch one timestamp
above the last batch's offsets), and
"offset_for_timestamp" looks up random timestamps in that log.

The partitions part (``--partitions N``, 0 to skip) creates N partition logs
of one batch each through ``LogDirectory.open_log`` (directory,
``partition.metadata``, one append), closes the directory cleanly, then times
what a broker start does: opening the directory (listing, checkpoints,
marker), ``open_log`` of every partition (reads ``partition.metadata``, no
segment file opened), and the first read of every partition (each log loaded,
with at most ``log.max.open.files`` = 1,000 files open at once).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from quorum.log import FileLog, LogConfig, LogDirectory, OpenFiles, OpenMode, PartitionKey
from quorum.wire.records import build_batch_from_values

__all__ = ["main"]

BATCH_BYTES = 16 * 1024
MIB = 1024 * 1024


BASE_TIMESTAMP = 1_700_000_000_000


def make_batch(timestamp: int = BASE_TIMESTAMP) -> bytes:
    values = [b"v" * 100 for _ in range((BATCH_BYTES - 61) // 110)]
    return build_batch_from_values(values, timestamp=timestamp)


def timed(action: Callable[[], int]) -> tuple[float, int]:
    """(seconds, bytes moved) of one run."""
    start = time.perf_counter()
    moved = action()
    return time.perf_counter() - start, moved


def log_append(directory: Path, batch: bytes, count: int, fsync: bool) -> Callable[[], int]:
    def run() -> int:
        log = FileLog(directory / "bench-0", LogConfig())
        try:
            for _ in range(count):
                log.append(batch, epoch=1)
                if fsync:
                    log.flush()
            return len(batch) * count
        finally:
            log.close()
            shutil.rmtree(directory / "bench-0")

    return run


DATA_MODE = OpenMode.for_data_partition(log_start_offset=None, recovery_point=0, clean_shutdown=True)
DATA_CONFIG = LogConfig(verify_closed_segments_on_open=False)


def timed_batches(count: int) -> list[bytes]:
    """Batches whose timestamp (one per batch) is the base offset's, in ms past a base."""
    per_batch = (BATCH_BYTES - 61) // 110
    return [make_batch(BASE_TIMESTAMP + i * per_batch) for i in range(count)]


def data_append(directory: Path, batches: list[bytes]) -> Callable[[], int]:
    def run() -> int:
        log = FileLog(directory / "data-0", DATA_CONFIG, mode=DATA_MODE)
        try:
            for batch in batches:
                log.append(batch, epoch=1)
            return sum(len(batch) for batch in batches)
        finally:
            log.close()
            shutil.rmtree(directory / "data-0")

    return run


def timestamp_lookups(directory: Path, batches: list[bytes], lookups: int) -> list[float]:
    """Lookups per second of random timestamps, one figure per run of ``lookups``."""
    log = FileLog(directory / "lookup-0", DATA_CONFIG, mode=DATA_MODE)
    for batch in batches:
        log.append(batch, epoch=1)
    # the last batch's timestamp: every target up to it is found
    span = log.log_end_offset - log.read(0, 1).next_offset + 1
    rng = random.Random(7)
    rates = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(lookups):
            found = log.offset_for_timestamp(BASE_TIMESTAMP + rng.randrange(span))
            assert found is not None
        rates.append(lookups / (time.perf_counter() - start))
    log.close()
    return rates


def partition_logs(base: Path, partitions: int) -> list[tuple[str, float]]:
    """(step, seconds) of creating ``partitions`` logs and then of a broker start on them."""
    path = base / "partitions"
    topic_id = uuid.UUID(int=0x5EED)
    keys = [PartitionKey(topic_id, index) for index in range(partitions)]
    batch = build_batch_from_values([b"v" * 100] * 10, timestamp=BASE_TIMESTAMP)
    steps: list[tuple[str, float]] = []

    # setup, with fsync off: about ten syncs per new partition (partition.metadata, the
    # epoch checkpoint, their directory entries) would make it minutes on a slow disk
    synced = os.fsync
    os.fsync = lambda fd: None
    try:
        start = time.perf_counter()
        directory = LogDirectory(path, DATA_CONFIG, files=OpenFiles(max_open=1000))
        for key in keys:
            directory.create_log(key, ("bench", key.partition)).append(batch, epoch=1)
        directory.write_high_watermarks(dict.fromkeys(keys, 10))
        directory.close()
        seconds = time.perf_counter() - start
    finally:
        os.fsync = synced
    steps.append((f"create {partitions:,} logs and close (fsync off)", seconds))

    files = OpenFiles(max_open=1000)
    start = time.perf_counter()
    directory = LogDirectory(path, DATA_CONFIG, files=files)
    steps.append(("open the log directory", time.perf_counter() - start))
    start = time.perf_counter()
    logs = [directory.create_log(key, ("bench", key.partition)) for key in keys]
    assert all(directory.checkpointed_high_watermark(key) == 10 for key in keys)
    steps.append(("open_log of every partition", time.perf_counter() - start))
    assert files.open_count == 0
    start = time.perf_counter()
    for log in logs:
        assert log.read(0, MIB).next_offset == 10
    steps.append(("first read of every partition", time.perf_counter() - start))
    assert files.open_count <= 1000
    start = time.perf_counter()
    directory.close()
    steps.append(("close the log directory", time.perf_counter() - start))
    return steps


def raw_append(directory: Path, batch: bytes, count: int, fsync: bool) -> Callable[[], int]:
    def run() -> int:
        path = directory / "raw.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for _ in range(count):
                os.write(fd, batch)
                if fsync:
                    os.fsync(fd)
            return len(batch) * count
        finally:
            os.close(fd)
            path.unlink()

    return run


def log_read(directory: Path, batch: bytes, count: int) -> tuple[Callable[[], int], FileLog]:
    log = FileLog(directory / "read-0", LogConfig())
    for _ in range(count):
        log.append(batch, epoch=1)
    log.flush()

    def run() -> int:
        offset, moved = log.log_start_offset, 0
        while offset < log.log_end_offset:
            result = log.read(offset, MIB)
            moved += len(result.records)
            offset = result.next_offset
        return moved

    return run, log


def raw_read(directory: Path) -> Callable[[], int]:
    path = directory / "read-0" / f"{0:020d}.log"

    def run() -> int:
        fd = os.open(path, os.O_RDONLY)
        try:
            moved, position = 0, 0
            while chunk := os.pread(fd, MIB, position):
                moved += len(chunk)
                position += len(chunk)
            return moved
        finally:
            os.close(fd)

    return run


def measure(runs: int, action: Callable[[], int]) -> list[float]:
    """MB/s of each run."""
    rates = []
    for _ in range(runs):
        seconds, moved = timed(action)
        rates.append(moved / MIB / seconds)
    return rates


def row(name: str, rates: list[float], reference: list[float] | None, batch_size: int) -> str:
    median = statistics.median(rates)
    spread = f"{median:8.1f} [{min(rates):.1f}-{max(rates):.1f}]"
    ratio = f"{median / statistics.median(reference):5.2f}" if reference else "    -"
    return f"| {name:<28} | {spread:<26} | {median * MIB / batch_size:10.0f} | {ratio} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a temp dir)"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=int, default=64, help="MiB per no-fsync run")
    parser.add_argument("--fsync-batches", type=int, default=256, help="batches per fsync run")
    parser.add_argument(
        "--partitions", type=int, default=100_000, help="partition logs to create (0: skip)"
    )
    parser.add_argument("--lookups", type=int, default=2_000, help="timestamp lookups per run")
    args = parser.parse_args(argv)
    if args.dir:
        Path(args.dir).mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench-log-", dir=args.dir))
    batch = make_batch()
    count = args.mib * MIB // len(batch)
    try:
        results = {
            "raw file write": measure(args.runs, raw_append(base, batch, count, False)),
            "log append": measure(args.runs, log_append(base, batch, count, False)),
            "raw file write + fsync": measure(
                args.runs, raw_append(base, batch, args.fsync_batches, True)
            ),
            "log append + flush": measure(
                args.runs, log_append(base, batch, args.fsync_batches, True)
            ),
        }
        data_batches = timed_batches(count)
        results["data log append"] = measure(args.runs, data_append(base, data_batches))
        reader, log = log_read(base, batch, count)
        results["raw file pread"] = measure(args.runs, raw_read(base))
        results["log read (1 MiB max_bytes)"] = measure(args.runs, reader)
        log.close()
        lookup_rates = timestamp_lookups(base, data_batches, args.lookups)
        steps = partition_logs(base, args.partitions) if args.partitions else []
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        f"$ python -m bench.bench_log {' '.join(sys.argv[1:] if argv is None else argv)}".rstrip()
    )
    print(
        f"{len(batch)}-byte batches; {count} per no-fsync run, {args.fsync_batches} per "
        f"fsync run; median [min-max] of {args.runs} runs; directory {args.dir or 'temp'}"
    )
    print(f"| {'case':<28} | {'MB/s':<26} | {'batches/s':>10} | ratio |")
    print(f"|{'-' * 30}|{'-' * 28}|{'-' * 12}|-------|")
    references = {
        "log append": "raw file write",
        "log append + flush": "raw file write + fsync",
        "data log append": "raw file write",
        "log read (1 MiB max_bytes)": "raw file pread",
    }
    for name, rates in results.items():
        reference = references.get(name)
        print(row(name, rates, results[reference] if reference else None, len(batch)))
    median = statistics.median(lookup_rates)
    print(
        f"offset_for_timestamp in a log of {count} batches: {median:,.0f} lookups/s "
        f"[{min(lookup_rates):,.0f}-{max(lookup_rates):,.0f}] (5 runs of {args.lookups})"
    )
    for step, seconds in steps:
        print(f"| {step:<56} | {seconds:8.2f} s |")


if __name__ == "__main__":
    main()
