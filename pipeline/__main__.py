"""The clickstream pipeline's command line.

    python -m pipeline generate --bootstrap HOST:PORT [--count 600] [--malformed 4] ...
    python -m pipeline stream   --bootstrap HOST:PORT --table DIR --checkpoint DIR [--available-now]
    python -m pipeline backfill --bootstrap HOST:PORT --start TIME --end TIME [--path DIR]
    python -m pipeline run      --bootstrap HOST:PORT --work DIR [generate's options]

``run`` generates, then streams with ``availableNow`` and prints the aggregates (a table and
a chart). Under spark-submit the file itself is the application (``spark-submit ...
--py-files pipeline.zip pipeline/__main__.py stream --master URL ...``): ``stream`` and
``backfill`` need pyspark only; ``generate`` and ``run`` also need pykraft's client library on
the driver, so only they import it.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.clickstream_events import Topics, plan_events
from pipeline.clickstream_jobs import (
    DEFAULT_WATERMARK,
    StreamSettings,
    backfill,
    run_available_now,
    run_until_stopped,
)
from pipeline.clickstream_report import MinuteCount, chart
from pipeline.spark_session import build_spark_session

__all__ = ["main", "parse_time_ms"]


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (UTC when it names no zone)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO 8601 time, got {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", required=True, help="the cluster's bootstrap servers")
    parser.add_argument("--events-topic", default=Topics().events)
    parser.add_argument("--dead-letter-topic", default=Topics().dead_letters)
    parser.add_argument("--aggregates-topic", default=Topics().aggregates)


def _spark_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", default="local[2]",
                        help="Spark's master (under spark-submit give the same one again)")
    parser.add_argument("--conf", type=_pair, action="append", default=[],
                        help="a Spark setting KEY=VALUE (repeatable)")
    parser.add_argument("--source-option", type=_pair, action="append", default=[],
                        help="a Kafka source option KEY=VALUE (repeatable)")
    parser.add_argument("--sink-option", type=_pair, action="append", default=[],
                        help="a Kafka sink option KEY=VALUE (repeatable)")


def _generate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--count", type=int, default=600, help="records to produce")
    parser.add_argument("--malformed", type=int, default=4,
                        help="how many of them are malformed on purpose")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=int, default=10,
                        help="the events' time span, ending now unless --start is given")
    parser.add_argument("--start", type=parse_time_ms, default=None,
                        help="the first event's earliest time (epoch ms or ISO 8601)")
    parser.add_argument("--partitions", type=int, default=3,
                        help="partitions of topics created now")


def _stream_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--watermark", default=DEFAULT_WATERMARK,
                        help="how late an event may come and still be counted")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline",
                                     description="The clickstream pipeline on pykraft.")
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="produce click events (pykraft's client)")
    _common(generate)
    _generate_options(generate)
    stream = commands.add_parser("stream", help="the streaming job")
    _common(stream)
    _spark_options(stream)
    _stream_options(stream)
    stream.add_argument("--table", required=True, help="the parquet table's directory")
    stream.add_argument("--checkpoint", required=True, help="the job's checkpoint directory")
    stream.add_argument("--available-now", action="store_true",
                        help="read what is there, then stop (default: run until stopped)")
    back = commands.add_parser("backfill", help="aggregate a time range again (batch)")
    _common(back)
    _spark_options(back)
    back.add_argument("--start", type=parse_time_ms, required=True, help="inclusive")
    back.add_argument("--end", type=parse_time_ms, required=True, help="exclusive")
    back.add_argument("--path", default=None, help="write the aggregates here (overwrite)")
    run = commands.add_parser("run", help="generate, then stream with availableNow, then show")
    _common(run)
    _generate_options(run)
    _spark_options(run)
    _stream_options(run)
    run.add_argument("--work", type=Path, required=True,
                     help="the table and checkpoint go here (reuse it to continue)")
    return parser


def _topics(args: argparse.Namespace) -> Topics:
    return Topics(events=args.events_topic, dead_letters=args.dead_letter_topic,
                  aggregates=args.aggregates_topic)


def _generate(args: argparse.Namespace) -> None:
    # pykraft's client only here: spark-submit drivers that stream or backfill run without it
    from pipeline.clickstream_generate import ensure_topics, produce_records

    span_ms = args.minutes * 60_000
    start_ms = args.start if args.start is not None else int(time.time() * 1000) - span_ms
    records = plan_events(args.count, seed=args.seed, start_ms=start_ms, span_ms=span_ms,
                          malformed=args.malformed)
    created = ensure_topics(args.bootstrap, _topics(args), partitions=args.partitions)
    if created:
        print(f"created topics {', '.join(created)}")
    placed = produce_records(args.bootstrap, args.events_topic, records)
    partitions = sorted({p.partition for p in placed})
    print(f"produced {len(placed)} records ({args.malformed} malformed) to "
          f"{args.events_topic} partitions {partitions}, times "
          f"{_utc(records[0].timestamp_ms)} to {_utc(records[-1].timestamp_ms)}"
          if placed else "produced nothing")


def _utc(ms: int) -> str:
    return _utc_time(ms).strftime("%Y-%m-%d %H:%M:%S")


def _session(args: argparse.Namespace, name: str) -> SparkSession:
    return build_spark_session(name, master=args.master, extra_conf=dict(args.conf))


def _settings(args: argparse.Namespace, table: str, checkpoint: str) -> StreamSettings:
    return StreamSettings(bootstrap=args.bootstrap, table=table, checkpoint=checkpoint,
                          topics=_topics(args), watermark_delay=args.watermark,
                          source_options=dict(args.source_option),
                          sink_options=dict(args.sink_option))


def show(aggregates: DataFrame) -> None:
    """Print the aggregates as a table (times in the session's zone, UTC) and as a chart."""
    ordered = aggregates.orderBy("window_start", "page")
    ordered.show(ordered.count(), truncate=False)
    # epoch milliseconds: collected timestamps would be in this process's zone, not UTC
    rows = ordered.select("page", F.unix_millis("window_start").alias("start_ms"),
                          "events").collect()
    print(chart([MinuteCount(r.page, _utc_time(r.start_ms), r.events) for r in rows]))


def _utc_time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


def _stream(args: argparse.Namespace, table: str, checkpoint: str, *, available_now: bool,
            show_table: bool) -> None:
    spark = _session(args, "pykraft-clickstream")
    try:
        settings = _settings(args, table, checkpoint)
        if not available_now:
            run_until_stopped(spark, settings)
            return
        done = run_available_now(spark, settings)
        rows = ", ".join(f"{name} {count}" for name, count in done.input_rows.items())
        print(f"rows read: {rows}; watermark {done.watermark}")
        if show_table:
            show(spark.read.parquet(table))
    finally:
        spark.stop()


def _backfill(args: argparse.Namespace) -> None:
    spark = _session(args, "pykraft-clickstream-backfill")
    try:
        result = backfill(spark, args.bootstrap, args.events_topic, args.start, args.end,
                          path=args.path, options=dict(args.source_option))
        print(f"{result.events} events and {result.malformed} malformed records from "
              f"{_utc(args.start)} to {_utc(args.end)}")
        show(result.aggregates)
    finally:
        spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "generate":
        _generate(args)
    elif args.command == "stream":
        _stream(args, args.table, args.checkpoint, available_now=args.available_now,
                show_table=False)
    elif args.command == "backfill":
        _backfill(args)
    else:
        _generate(args)
        work: Path = args.work
        _stream(args, str(work / "table"), str(work / "checkpoint"), available_now=True,
                show_table=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
