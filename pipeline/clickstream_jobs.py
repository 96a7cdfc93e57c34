"""The clickstream pipeline's Spark jobs: the streaming job and the time-range backfill.

The streaming job is three queries, each with a checkpoint of its own under one directory:

* ``aggregates``: the events topic -> parse -> valid events -> per-minute, per-page counts
  with a watermark -> the parquet table (Spark's file sink: exactly once; a (minute, page)
  row is appended once, when the watermark closes the minute);
* ``dead-letters``: the events topic -> parse -> rejected records -> the dead-letter topic
  (the Kafka sink: at least once, like every Kafka sink);
* ``publish``: the parquet table, read as a file stream (only committed files: the file
  source follows the sink's ``_spark_metadata`` log) -> the aggregates topic, key the page.

Publishing from the table rather than from a second aggregation keeps one source of truth:
the topic carries exactly the rows the table committed (at least once). With ``availableNow``
the first two run side by side until they have read everything, then ``publish`` runs.

The backfill is a batch read of the events topic from ``startingTimestamp`` to
``endingTimestamp`` (ListOffsets by time; events are produced in time order, so the range is
exactly the events of that time), aggregated the same way, optionally overwriting a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.clickstream_events import Topics
from pipeline.clickstream_frames import (
    AGGREGATE_SCHEMA,
    aggregate_records,
    dead_letter_records,
    minute_aggregates,
    parse_events,
    valid_events,
)

__all__ = [
    "DEFAULT_WATERMARK",
    "Backfill",
    "StreamRun",
    "StreamSettings",
    "backfill",
    "read_range",
    "run_available_now",
    "run_until_stopped",
    "start_aggregates",
    "start_dead_letters",
    "start_publish",
]

# how late an event may be and still count: Spark drops events older than the watermark
DEFAULT_WATERMARK = "1 minute"
QUERY_NAMES = ("aggregates", "dead-letters", "publish")


@attrs.frozen(kw_only=True)
class StreamSettings:
    """Where the streaming job reads and writes."""

    bootstrap: str
    table: str
    checkpoint: str  # one directory; each query checkpoints in a subdirectory named for it
    topics: Topics = attrs.field(factory=Topics)
    watermark_delay: str = DEFAULT_WATERMARK
    # extra options of the Kafka source (e.g. kafka.fetch.max.wait.ms), and of both Kafka
    # sinks (e.g. kafka.linger.ms); security settings go in both
    source_options: Mapping[str, str] = attrs.field(factory=dict)
    sink_options: Mapping[str, str] = attrs.field(factory=dict)

    def checkpoint_of(self, query: str) -> str:
        return str(PurePosixPath(self.checkpoint) / query)


@attrs.frozen(kw_only=True)
class StreamRun:
    """What an ``availableNow`` run did: rows read per query, and the watermark it reached."""

    input_rows: Mapping[str, int]
    watermark: str | None


def _kafka_stream(spark: SparkSession, settings: StreamSettings) -> DataFrame:
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", settings.bootstrap)
              .option("subscribe", settings.topics.events)
              .option("startingOffsets", "earliest"))
    for key, value in settings.source_options.items():
        reader = reader.option(key, value)
    return reader.load()


def _kafka_sink_options(settings: StreamSettings, topic: str) -> dict[str, str]:
    return {**settings.sink_options, "kafka.bootstrap.servers": settings.bootstrap,
            "topic": topic}


def start_aggregates(spark: SparkSession, settings: StreamSettings, *,
                     available_now: bool) -> StreamingQuery:
    """Per-minute aggregates of the valid events into the parquet table, exactly once."""
    events = valid_events(parse_events(_kafka_stream(spark, settings)))
    writer = (minute_aggregates(events, settings.watermark_delay).writeStream
              .queryName("clickstream-aggregates").format("parquet").outputMode("append")
              .option("path", settings.table)
              .option("checkpointLocation", settings.checkpoint_of("aggregates")))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def start_dead_letters(spark: SparkSession, settings: StreamSettings, *,
                       available_now: bool) -> StreamingQuery:
    """Rejected records, as they came plus why, into the dead-letter topic."""
    frame = dead_letter_records(parse_events(_kafka_stream(spark, settings)))
    writer = frame.writeStream.queryName("clickstream-dead-letters").format("kafka")
    for key, value in _kafka_sink_options(settings, settings.topics.dead_letters).items():
        writer = writer.option(key, value)
    writer = writer.option("checkpointLocation", settings.checkpoint_of("dead-letters"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def start_publish(spark: SparkSession, settings: StreamSettings, *,
                  available_now: bool) -> StreamingQuery:
    """The table's committed rows into the aggregates topic (start after ``start_aggregates``:
    its sink creates the table's metadata log that this file source follows)."""
    rows = spark.readStream.schema(AGGREGATE_SCHEMA).parquet(settings.table)
    writer = aggregate_records(rows).writeStream.queryName("clickstream-publish").format("kafka")
    for key, value in _kafka_sink_options(settings, settings.topics.aggregates).items():
        writer = writer.option(key, value)
    writer = writer.option("checkpointLocation", settings.checkpoint_of("publish"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def _finish(query: StreamingQuery, timeout_s: int) -> int:
    """Wait for an ``availableNow`` query to end; raise its error; return the rows it read."""
    try:
        if not query.awaitTermination(timeout_s):
            raise TimeoutError(f"query {query.name} did not finish within {timeout_s}s")
    finally:
        query.stop()
    error = query.exception()
    if error is not None:
        raise error
    return sum(progress["numInputRows"] for progress in query.recentProgress)


def _watermark(query: StreamingQuery) -> str | None:
    for progress in reversed(query.recentProgress):
        watermark = progress.get("eventTime", {}).get("watermark")
        if watermark is not None:
            return str(watermark)
    return None


def run_available_now(spark: SparkSession, settings: StreamSettings,
                      timeout_s: int = 300) -> StreamRun:
    """Read what the events topic holds now through all three queries, then stop.

    A later run with the same checkpoints reads only what arrived since (and the state
    store keeps the windows the watermark has not closed yet)."""
    aggregates = start_aggregates(spark, settings, available_now=True)
    try:
        dead_letters = start_dead_letters(spark, settings, available_now=True)
    except Exception:
        aggregates.stop()
        raise
    try:
        aggregated = _finish(aggregates, timeout_s)
    finally:
        rejected = _finish(dead_letters, timeout_s)
    published = _finish(start_publish(spark, settings, available_now=True), timeout_s)
    counts = dict(zip(QUERY_NAMES, (aggregated, rejected, published), strict=True))
    return StreamRun(input_rows=counts, watermark=_watermark(aggregates))


def run_until_stopped(spark: SparkSession, settings: StreamSettings) -> None:
    """Run the three queries until one fails or the process is stopped."""
    queries = [start_aggregates(spark, settings, available_now=False)]
    try:
        queries.append(start_dead_letters(spark, settings, available_now=False))
        queries.append(start_publish(spark, settings, available_now=False))
        spark.streams.awaitAnyTermination()
    finally:
        for query in queries:
            query.stop()
    for query in queries:
        error = query.exception()
        if error is not None:
            raise error


@attrs.frozen(kw_only=True)
class Backfill:
    aggregates: DataFrame
    events: int
    malformed: int


def read_range(spark: SparkSession, bootstrap: str, topic: str, start_ms: int, end_ms: int,
               options: Mapping[str, str] | None = None) -> DataFrame:
    """The records of ``topic`` with ``start_ms <= timestamp < end_ms`` (per partition, from
    the first offset at or after ``start_ms`` to the first at or after ``end_ms``)."""
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingTimestamp", str(start_ms))
              .option("endingTimestamp", str(end_ms))
              # a partition with nothing at or after start_ms has nothing in the range:
              # read it from its end rather than fail (Spark's default strategy is "error")
              .option("startingOffsetsByTimestampStrategy", "latest"))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()


def backfill(spark: SparkSession, bootstrap: str, topic: str, start_ms: int, end_ms: int, *,
             path: str | None = None, options: Mapping[str, str] | None = None) -> Backfill:
    """Aggregate the events of ``[start_ms, end_ms)`` again; overwrite ``path`` if given."""
    parsed = parse_events(read_range(spark, bootstrap, topic, start_ms, end_ms, options)).cache()
    try:
        counts = parsed.groupBy(F.col("problem").isNull().alias("valid")).count().collect()
        by_validity = {row.valid: row["count"] for row in counts}
        aggregates = minute_aggregates(valid_events(parsed), DEFAULT_WATERMARK).orderBy(
            "window_start", "page")
        if path is not None:
            aggregates.write.mode("overwrite").parquet(path)
            aggregates = spark.read.parquet(path).orderBy("window_start", "page")
        else:
            aggregates = aggregates.localCheckpoint()
    finally:
        parsed.unpersist()
    return Backfill(aggregates=aggregates, events=by_validity.get(True, 0),
                    malformed=by_validity.get(False, 0))
