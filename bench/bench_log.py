"""File log throughput: leader appends with and without fsync, sequential reads.

Run ``python -m bench.bench_log [--dir DIR] [--runs 5] [--mib 64]``.  Workload:
16 KiB v2 batches of ~100-byte records, appended one batch per call as a
leader (offsets rewritten, CRC checked).  "fsync per batch" calls ``flush()``
after every append, as the metadata log does before acknowledging.  Reads go
from the log start to the end with 1 MiB ``max_bytes``, from the page cache.
Each row is the median [min-max] of ``--runs`` runs; the "raw file" rows do
the same writes with plain ``os.write`` (and ``os.fsync``) on the same disk in
the same run, so the ratio column shows what the log itself costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from quorum.log import FileLog, LogConfig
from quorum.wire.records import build_batch_from_values

__all__ = ["main"]

BATCH_BYTES = 16 * 1024
MIB = 1024 * 1024


def make_batch() -> bytes:
    values = [b"v" * 100 for _ in range((BATCH_BYTES - 61) // 110)]
    return build_batch_from_values(values, timestamp=1_700_000_000_000)


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
        reader, log = log_read(base, batch, count)
        results["raw file pread"] = measure(args.runs, raw_read(base))
        results["log read (1 MiB max_bytes)"] = measure(args.runs, reader)
        log.close()
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
        "log read (1 MiB max_bytes)": "raw file pread",
    }
    for name, rates in results.items():
        reference = references.get(name)
        print(row(name, rates, results[reference] if reference else None, len(batch)))


if __name__ == "__main__":
    main()
