"""Codec throughput on a Fetch response carrying 1 MiB of record batches.

Run ``python -m bench.bench_codec [--runs 5] [--partitions 16] [--kib 64]``.
Workload: one topic, ``--partitions`` partitions of ``--kib`` KiB of record
bytes each, encoded and decoded as FetchResponse v12 (first flexible version)
and v11 (last classic one).  Each figure is the median of ``--runs`` runs.  The
"copies" column counts how often the record bytes are copied, checked on the
objects themselves (identity of the encoder's chunks, ``memoryview.obj`` of
decoded fields) rather than assumed.  A 1 MiB ``bytes`` copy and kafka-python's
independent decoder of the same body are measured in the same process for scale.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from quorum.wire import codec
from quorum.wire.framing import FrameDecoder
from quorum.wire.messages.fetch import FetchResponse, FetchResponsePartition, FetchResponseTopic
from quorum.wire.protocol import ResponseHeader, decode_response, encode_response

__all__ = ["main"]

FETCH_KEY = 1


def make_response(partitions: int, kib: int) -> tuple[FetchResponse, list[bytes]]:
    records = [bytes([i % 251]) * (kib * 1024) for i in range(partitions)]
    parts = tuple(
        FetchResponsePartition(partition_index=i, high_watermark=1000 + i, records=r)
        for i, r in enumerate(records)
    )
    topic = FetchResponseTopic(topic="bench", partitions=parts)
    return FetchResponse(throttle_time_ms=0, session_id=0, responses=(topic,)), records


def median_rate(fn: Callable[[], Any], runs: int, min_seconds: float = 0.2) -> float:
    """Median calls per second over ``runs`` runs of at least ``min_seconds`` each."""
    fn()
    rates = []
    for _ in range(runs):
        count = 0
        start = time.perf_counter()
        while True:
            fn()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        rates.append(count / elapsed)
    return statistics.median(rates)


def encode_copies(msg: FetchResponse, version: int, records: list[bytes]) -> int:
    """Copies of the record bytes made by ``encode``: chunks are the originals, then one join."""
    parts = codec.encode_parts(msg, version)
    ids = {id(p) for p in parts}
    assert all(id(r) in ids for r in records), "the encoder copied a records value"
    return 1  # b"".join(parts) in encode()


def decode_copies(decoded: Any, frame: object) -> int:
    views = [p.records for t in decoded.responses for p in t.partitions]
    return sum(0 if isinstance(v, memoryview) and v.obj is frame else 1 for v in views)


def kafka_python_decoder(body: bytes, version: int) -> Callable[[], Any] | None:
    try:
        from kafka.protocol.consumer import FetchResponse as KpFetchResponse
    except ImportError:
        return None

    def run() -> Any:
        return KpFetchResponse.decode(body, version=version)

    try:
        run()
    except Exception:  # an optional reference column: skip it if it cannot read v12
        return None
    return run


def bench_version(version: int, args: argparse.Namespace) -> list[tuple[str, float, int | str]]:
    msg, records = make_response(args.partitions, args.kib)
    body = codec.encode(msg, version)
    framed = encode_response(ResponseHeader(1), FETCH_KEY, version, msg)
    payload = framed[4:]
    out = bytearray()

    def encode_into() -> None:
        out.clear()
        codec.encode_into(msg, version, out)

    # what 64 KiB socket reads would hand over (cut outside the timed code)
    chunks = [framed[start : start + 65536] for start in range(0, len(framed), 65536)]

    def decode_chunked() -> Any:
        decoder = FrameDecoder()
        for chunk in chunks:
            decoder.feed(chunk)
        frame = decoder.next_frame()
        assert frame is not None
        return decode_response(frame, FETCH_KEY, version)

    whole = codec.decode(FetchResponse, version, body)
    assert whole == msg
    chunked = decode_chunked()[1]
    rows: list[tuple[str, float, int | str]] = [
        ("encode -> bytes", median_rate(lambda: codec.encode(msg, version), args.runs),
         encode_copies(msg, version, records)),
        ("encode_into(bytearray)", median_rate(encode_into, args.runs), 1),
        ("encode_response (framed)",
         median_rate(lambda: encode_response(ResponseHeader(1), FETCH_KEY, version, msg),
                     args.runs), 1),
        ("decode(bytes)", median_rate(lambda: codec.decode(FetchResponse, version, body),
                                      args.runs), decode_copies(whole, body)),
        ("decode_response(payload)",
         median_rate(lambda: decode_response(payload, FETCH_KEY, version), args.runs),
         decode_copies(decode_response(payload, FETCH_KEY, version)[1], payload)),
        ("64 KiB feeds + FrameDecoder + decode", median_rate(decode_chunked, args.runs),
         f"1 (join); {decode_copies(chunked, chunked.responses[0].partitions[0].records.obj)}"
         " in decode"),
    ]
    reference = kafka_python_decoder(body, version)
    if reference is not None:
        rows.append(("kafka-python decode (reference)", median_rate(reference, args.runs), "-"))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--kib", type=int, default=64)
    args = parser.parse_args(argv)
    total_mib = args.partitions * args.kib / 1024
    blob = bytes(args.partitions * args.kib * 1024)
    memcpy = median_rate(lambda: bytearray(blob), args.runs)
    print(f"Fetch response, {args.partitions} partitions x {args.kib} KiB = {total_mib:g} MiB of "
          f"records; median of {args.runs} runs")
    print(f"reference: one copy of {total_mib:g} MiB (bytearray(b)): "
          f"{memcpy:,.0f}/s, {1e6 / memcpy:,.0f} us")
    header = f"{'version':<8}{'operation':<38}{'ops/s':>10}{'us/op':>10}{'MiB/s':>10}  copies"
    print(header)
    print("-" * (len(header) + 12))
    for version in (12, 11):
        for name, rate, copies in bench_version(version, args):
            print(f"v{version:<7}{name:<38}{rate:>10,.0f}{1e6 / rate:>10,.1f}"
                  f"{rate * total_mib:>10,.0f}  {copies}")


if __name__ == "__main__":
    main()
