"""Record batch v2 throughput: build, decode, and the broker's in-place path.

Run ``python -m bench.bench_records [--runs 5] [--mib 8]``.  Workload: 16 KiB
batches of ~100-byte records (8-byte key, 100-byte value, no headers).  Every
figure is the median of ``--runs`` runs over ``--mib`` MiB of batches.  The
kafka-python column runs its independent pure-Python codec on the same
records, as a reference point measured in the same process, interleaved run by
run with ours so that machine load affects both alike.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from quorum.wire.batch_checks import assign_offsets_to_batches, validate_batch
from quorum.wire.compression import Compression
from quorum.wire.records import Record, build_batch, decode_batch

__all__ = ["main"]

BATCH_BYTES = 16 * 1024
VALUE_BYTES = 100
KEY_BYTES = 8


def make_record_sets(total_bytes: int, seed: int = 1) -> list[list[Record]]:
    """Record lists that each encode to about BATCH_BYTES (compressible-ish text values)."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghij ") for _ in range(10)) for _ in range(64)]
    # 61-byte batch header; each record adds ~10 bytes of varints and attributes
    per_batch = (BATCH_BYTES - 61) // (VALUE_BYTES + KEY_BYTES + 10)
    batches = []
    for _ in range(max(1, total_bytes // BATCH_BYTES)):
        batches.append([
            Record(
                offset_delta=i,
                timestamp_delta=i,
                key=b"key-%04d" % rng.randrange(10_000),
                value=b"".join(rng.choices(words, k=VALUE_BYTES // 10)),
            )
            for i in range(per_batch)
        ])
    return batches


def _kafka_python() -> tuple[Any, Any] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    except ImportError:
        return None
    return DefaultRecordBatch, DefaultRecordBatchBuilder


def _kp_build(builder_cls: Any, sets: Sequence[list[Record]], codec: Compression) -> list[bytes]:
    out = []
    for records in sets:
        builder = builder_cls(2, codec, False, -1, -1, -1, 1 << 22)
        for r in records:
            builder.append(r.offset_delta, 1000 + r.timestamp_delta, r.key, r.value, [])
        out.append(bytes(builder.build()))
    return out


def _kp_decode(batch_cls: Any, batches: Sequence[bytes]) -> int:
    return sum(1 for b in batches for _ in batch_cls(b))


def paired_medians(actions: Sequence[Callable[[], Any]], runs: int) -> list[float]:
    """Median seconds of each action, run interleaved so machine load hits all alike."""
    samples: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, out in zip(actions, samples, strict=True):
            start = time.perf_counter()
            action()
            out.append(time.perf_counter() - start)
    return [statistics.median(s) for s in samples]


def bench_codec(sets: list[list[Record]], codec: Compression, runs: int) -> list[str]:
    name = codec.name.lower()
    batches = [build_batch(r, compression=codec, base_timestamp=1000) for r in sets]
    raw_bytes = sum(len(build_batch(r)) for r in sets)  # throughput counts uncompressed bytes
    count = sum(len(r) for r in sets)
    actions: list[Callable[[], Any]] = [
        lambda: [build_batch(r, compression=codec) for r in sets],
        lambda: [decode_batch(b) for b in batches],
    ]
    kp = _kafka_python()
    if kp is not None:
        batch_cls, builder_cls = kp
        theirs = _kp_build(builder_cls, sets, codec)
        actions += [
            lambda: _kp_build(builder_cls, sets, codec),
            lambda: _kp_decode(batch_cls, theirs),
        ]
    times = paired_medians(actions, runs)
    rows = [_row(f"pykraft build {name}", raw_bytes, count, times[0]),
            _row(f"pykraft decode {name}", raw_bytes, count, times[1])]
    if kp is not None:
        rows += [
            _row(f"kafka-python build {name}", raw_bytes, count, times[2], ratio=times[2] / times[0]),
            _row(f"kafka-python decode {name}", raw_bytes, count, times[3], ratio=times[3] / times[1]),
        ]
    return rows


def _row(name: str, size: int, count: int, seconds: float, ratio: float | None = None) -> str:
    mb_s = size / seconds / 1e6
    extra = f"   time ratio kafka-python / pykraft {ratio:.2f}" if ratio is not None else ""
    return f"{name:<30} {mb_s:9.1f} MB/s {count / seconds:13,.0f} records/s{extra}"


def bench_in_place(sets: list[list[Record]], runs: int) -> list[str]:
    """Offset assignment and CRC validation per MiB of stored batches (the broker hot path)."""
    log = b"".join(build_batch(r) for r in sets)
    mib = len(log) / (1 << 20)
    buf = bytearray(log)

    def validate_all() -> None:
        pos = 0
        while pos < len(buf):
            pos += validate_batch(buf, pos).size

    assign, validate = paired_medians(
        [lambda: assign_offsets_to_batches(buf, 1_000_000, 7), validate_all], runs
    )
    return [
        f"{'assign offsets + epoch':<30} {assign / mib * 1e6:9.1f} us/MiB "
        f"({len(sets)} batches, {assign / len(sets) * 1e6:.2f} us/batch)",
        f"{'validate (header + CRC-32C)':<30} {validate / mib * 1e6:9.1f} us/MiB "
        f"({validate / len(sets) * 1e6:.2f} us/batch)",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=float, default=8.0)
    args = parser.parse_args(argv)
    sets = make_record_sets(int(args.mib * (1 << 20)))
    per_batch = len(sets[0])
    print(f"{len(sets)} batches of {per_batch} records ({KEY_BYTES} B key, {VALUE_BYTES} B value),"
          f" {len(build_batch(sets[0]))} B each; median of {args.runs} runs")
    for codec in (Compression.NONE, Compression.GZIP):
        for line in bench_codec(sets, codec, args.runs):
            print(line)
    for line in bench_in_place(sets, args.runs):
        print(line)


if __name__ == "__main__":
    main()
