"""The clickstream pipeline's micro-batches at a steady event rate, on pykraft and on Apache Kafka.

Run ``python -m bench.bench_pipeline_stream [--rate 10000] [--seconds 40] [--warm-up-s 10]
[--sides pykraft,kafka]`` (pyspark from ``scripts/ensure-pyspark``,
Kafka's jars from ``deploy/kafka/resolve``).

For each side, one at a time (``bench.vs_kafka_sides``: 3 controllers + 3 brokers; pykraft
at Kafka's default timeouts, Kafka with its start script's JVM settings): the pipeline's
topics (3 partitions, RF 3), the streaming job's aggregates query
(``pipeline.clickstream_jobs.start_aggregates``: parse, valid events, per-minute counts per
page with a watermark, the parquet table) at Spark's default trigger (a micro-batch starts
as soon as the last one ended and records wait), and a producer
thread in the bench process sending ``--rate`` click events per second (pykraft's client,
a slice every 100 ms, event time = now) for ``--seconds``. From the query's progress, every
micro-batch that started after ``--warm-up-s``: its rows, its duration
(``durationMs.triggerExecution``: fetching the records from the brokers, parsing,
aggregating, writing the state and the table) and the rates Spark reports. An event waits
at most one batch for its batch to start, then that batch's duration: the batch duration is
the pipeline's latency; the job keeps up when the processed rate matches the input rate. One SparkSession (``local[2]``)
for both sides.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from pyspark.sql import SparkSession

from bench.spark_sides import SIDES, add_sides_option, chosen_sides, spark_in_scratch
from bench.vs_kafka_sides import Side
from broker.client import BlockingProducer
from pipeline.clickstream_events import Topics, plan_events
from pipeline.clickstream_generate import ensure_topics
from pipeline.clickstream_jobs import StreamSettings, start_aggregates

_SLICE_S = 0.1


@attrs.frozen(kw_only=True)
class StreamFigures:
    side: str
    batches: int
    rows_per_batch: float
    duration_p50_ms: float
    duration_p99_ms: float
    input_rows_per_s: float
    processed_rows_per_s: float
    sent: int


def _bootstrap(side: Side) -> str:
    return ",".join(f"{h}:{p}" for h, p in map(side.broker_address, side.brokers))


def _produce_steadily(bootstrap: str, topic: str, rate: int, seconds: float,
                      stop: threading.Event, sent: list[int]) -> None:
    """``rate`` events per second in 100 ms slices until ``seconds`` pass or ``stop`` is set."""
    per_slice = max(1, int(rate * _SLICE_S))
    with BlockingProducer({"bootstrap.servers": bootstrap, "linger.ms": "5"}) as producer:
        start = time.monotonic()
        index = 0
        while not stop.is_set() and time.monotonic() - start < seconds:
            now_ms = int(time.time() * 1000)
            records = plan_events(per_slice, seed=index, start_ms=now_ms, span_ms=100)
            for record in records:
                producer.send(topic, value=record.value, key=record.key,
                              timestamp_ms=record.timestamp_ms)
            sent[0] += len(records)
            index += 1
            # the next slice's time: a slow slice is caught up, never sent twice
            delay = start + index * _SLICE_S - time.monotonic()
            if delay > 0:
                stop.wait(delay)
        producer.flush()


def _figures(name: str, progress: Sequence[dict[str, Any]], sent: int) -> StreamFigures:
    busy = [p for p in progress if p["numInputRows"]]
    if not busy:
        raise RuntimeError(f"{name}: no micro-batch read any event")
    durations = sorted(p["durationMs"]["triggerExecution"] for p in busy)
    return StreamFigures(
        side=name, batches=len(busy),
        rows_per_batch=statistics.median(p["numInputRows"] for p in busy),
        duration_p50_ms=statistics.median(durations),
        duration_p99_ms=durations[min(len(durations) - 1, int(len(durations) * 0.99))],
        input_rows_per_s=statistics.median(p["inputRowsPerSecond"] for p in busy),
        processed_rows_per_s=statistics.median(p["processedRowsPerSecond"] for p in busy),
        sent=sent,
    )


def measure_side(spark: SparkSession, name: str, base: Path, *, rate: int, seconds: float,
                 warm_up_s: float) -> StreamFigures:
    side = SIDES[name](base / name)
    try:
        bootstrap = _bootstrap(side)
        topics = Topics()
        ensure_topics(bootstrap, topics, replication_factor=3)
        settings = StreamSettings(bootstrap=bootstrap, table=str(base / f"{name}-table"),
                                  checkpoint=str(base / f"{name}-checkpoint"), topics=topics)
        stop, sent = threading.Event(), [0]
        producer = threading.Thread(
            target=_produce_steadily, args=(bootstrap, topics.events, rate, seconds, stop, sent),
            name="bench-producer", daemon=True)
        query = start_aggregates(spark, settings, available_now=False)
        producer.start()
        started = time.time()
        try:
            producer.join(seconds + 30)
        finally:
            stop.set()
            query.stop()
        if query.exception() is not None:
            raise RuntimeError(f"{name}: the query failed: {query.exception()}")
        # progress timestamps are ISO UTC; keep the batches that began after the warm-up
        after = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started + warm_up_s))
        progress = [p for p in query.recentProgress if p["timestamp"][:19] >= after]
        return _figures(name, progress, sent[0])
    finally:
        side.close()


def report(figures: Sequence[StreamFigures], rate: int) -> str:
    lines = [f"{rate:,} events/s, Spark's default trigger", "",
             "| side | micro-batches | rows per batch | batch duration p50 (ms) | p99 (ms) "
             "| input rows/s | processed rows/s | events sent |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [
        f"| {f.side} | {f.batches} | {f.rows_per_batch:,.0f} | {f.duration_p50_ms:,.0f} "
        f"| {f.duration_p99_ms:,.0f} | {f.input_rows_per_s:,.0f} | {f.processed_rows_per_s:,.0f} "
        f"| {f.sent:,} |"
        for f in figures
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_pipeline_stream",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--warm-up-s", type=float, default=10.0)
    add_sides_option(parser)
    args = parser.parse_args(argv)
    names = chosen_sides(parser, args)
    with spark_in_scratch("pykraft-bench-pipeline-stream") as (spark, base):
        figures = [measure_side(spark, name, base, rate=args.rate, seconds=args.seconds,
                                warm_up_s=args.warm_up_s)
                   for name in names]
    print(report(figures, args.rate))


if __name__ == "__main__":
    main()
