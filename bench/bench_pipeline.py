"""Spark's own Kafka connector on pykraft and on Apache Kafka: rows/s and MB/s of three jobs.

Run ``python -m bench.bench_pipeline [--records 1000000] [--value-bytes 100] [--partitions 6]
[--runs 1] [--sides pykraft,kafka]`` (pyspark from ``scripts/ensure-pyspark``; Kafka's jars
from ``deploy/kafka/resolve``).

One SparkSession (``local[2]``, ``pipeline.build_spark_session``) for the whole run; the
clusters one at a time, 3 controllers + 3 brokers each (``bench.vs_kafka_sides``: pykraft
at Kafka's default timeouts, Kafka with its start script's JVM settings), each started,
measured and stopped before the next starts. Per run, into a fresh topic (RF 3,
``--partitions`` partitions):

* **write**: ``spark.range(N)`` as ``--value-bytes``-byte values, null keys, written by the
  connector (its default producer: idempotent, acks=all);
* **count**: ``spark.read.format("kafka")...count()`` (checked equal to N);
* **parquet**: the same read written to a parquet directory (its row count checked).

Each figure is the wall time of the Spark action; MB/s counts value bytes only. Rows are
medians over ``--runs``. The first side also pays the JVM's warm-up (class loading, code
generation): a warm-up run of 10,000 records precedes the measured ones on every side.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.spark_sides import SIDES, add_sides_option, chosen_sides, spark_in_scratch
from bench.vs_kafka_sides import Side
from broker.client import BlockingAdmin, NewTopic

JOBS = ("write", "count", "parquet")
WARM_UP_RECORDS = 10_000


@attrs.frozen(kw_only=True)
class Figure:
    side: str
    job: str
    records: int
    value_bytes: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.records * self.value_bytes / 1e6 / self.seconds


def _bootstrap(side: Side) -> str:
    return ",".join(f"{host}:{port}" for host, port in map(side.broker_address, side.brokers))


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = BlockingAdmin({"bootstrap.servers": bootstrap})
    try:
        answer = admin.create_topics(
            [NewTopic(name=topic, num_partitions=partitions, replication_factor=3)])
    finally:
        admin.close()
    if answer != {topic: None}:
        raise RuntimeError(f"creating {topic} failed: {answer}")


def _timed(action: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def _read(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).load())


def _one_run(spark: SparkSession, bootstrap: str, topic: str, *, records: int,
             value_bytes: int, partitions: int, scratch: Path) -> dict[str, float]:
    """The three jobs on a fresh topic; their wall times in seconds."""
    _create_topic(bootstrap, topic, partitions)
    values = spark.range(records, numPartitions=partitions).select(
        F.lpad(F.col("id").cast("string"), value_bytes, "x").cast("binary").alias("value"))
    write_s, _ = _timed(lambda: values.write.format("kafka").option(
        "kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
    count_s, counted = _timed(lambda: _read(spark, bootstrap, topic).count())
    if counted != records:
        raise RuntimeError(f"{topic}: {counted} records read, {records} written")
    out = scratch / topic
    parquet_s, _ = _timed(lambda: _read(spark, bootstrap, topic).write.parquet(str(out)))
    stored = spark.read.parquet(str(out)).count()
    if stored != records:
        raise RuntimeError(f"{topic}: {stored} rows in parquet, {records} written")
    return {"write": write_s, "count": count_s, "parquet": parquet_s}


def measure_side(spark: SparkSession, name: str, base: Path, *, records: int,
                 value_bytes: int, partitions: int, runs: int) -> list[Figure]:
    side = SIDES[name](base / name)
    # each side's parquet output apart: the topics of both sides have the same names
    scratch = base / f"{name}-out"
    try:
        bootstrap = _bootstrap(side)
        _one_run(spark, bootstrap, "warm-up", records=WARM_UP_RECORDS, value_bytes=value_bytes,
                 partitions=partitions, scratch=scratch)
        times = [
            _one_run(spark, bootstrap, f"bench-{run}", records=records, value_bytes=value_bytes,
                     partitions=partitions, scratch=scratch)
            for run in range(runs)
        ]
    finally:
        side.close()
    return [
        Figure(side=name, job=job, records=records, value_bytes=value_bytes,
               seconds=statistics.median(t[job] for t in times))
        for job in JOBS
    ]


def report(figures: Sequence[Figure]) -> str:
    lines = ["| side | job | records | seconds | rows/s | MB/s |", "|---|---|---:|---:|---:|---:|"]
    lines += [
        f"| {f.side} | {f.job} | {f.records:,} | {f.seconds:.2f} | {f.rows_per_s:,.0f} "
        f"| {f.mb_per_s:.1f} |"
        for f in figures
    ]
    by = {(f.side, f.job): f for f in figures}
    ratios = [f"| {job} | {by[('kafka', job)].seconds / by[('pykraft', job)].seconds:.2f} |"
              for job in JOBS if ('pykraft', job) in by and ('kafka', job) in by]
    if ratios:
        lines += ["", "| job | rows/s pykraft / Kafka |", "|---|---:|", *ratios]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_pipeline",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--runs", type=int, default=1)
    add_sides_option(parser)
    args = parser.parse_args(argv)
    names = chosen_sides(parser, args)
    with spark_in_scratch("pykraft-bench-pipeline") as (spark, base):
        figures = [
            figure
            for name in names
            for figure in measure_side(spark, name, base, records=args.records,
                                       value_bytes=args.value_bytes,
                                       partitions=args.partitions, runs=args.runs)
        ]
    print(report(figures))


if __name__ == "__main__":
    main()
