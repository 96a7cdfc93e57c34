"""The clickstream pipeline's transformations, as functions from DataFrame to DataFrame.

Shared by the streaming job and the batch backfill (``clickstream_jobs``): both read Kafka
rows (``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``), parse them
with ``parse_events``, and aggregate the valid ones with ``minute_aggregates``. Executors
need pyspark only.

A record is valid when its value is a JSON object carrying every field of ``EVENT_SCHEMA``
with the right type (``from_json`` in Spark's PERMISSIVE mode turns a missing or mistyped
field into a null, and an unparseable text into nulls throughout); anything else gets a
``problem`` and goes to the dead-letter topic with that text in a header, never silently
dropped.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from pipeline.clickstream_events import EVENT_FIELDS

__all__ = [
    "AGGREGATE_SCHEMA",
    "ERROR_HEADER",
    "EVENT_SCHEMA",
    "NOT_AN_EVENT",
    "SOURCE_HEADER",
    "aggregate_records",
    "dead_letter_records",
    "minute_aggregates",
    "parse_events",
    "valid_events",
]

EVENT_SCHEMA = StructType([
    StructField("event_id", StringType()),
    StructField("user", StringType()),
    StructField("page", StringType()),
    StructField("action", StringType()),
    StructField("ts", LongType()),
])
assert tuple(EVENT_SCHEMA.fieldNames()) == EVENT_FIELDS

# the parquet table: one row per (minute, page) once the watermark has closed the minute
AGGREGATE_SCHEMA = StructType([
    StructField("page", StringType()),
    StructField("window_start", TimestampType()),
    StructField("window_end", TimestampType()),
    StructField("events", LongType()),
    StructField("clicks", LongType()),
])

ERROR_HEADER = "dlq.error"
SOURCE_HEADER = "dlq.source"
NOT_AN_EVENT = "not a JSON click event"
MISSING = "missing or invalid field: "


def _problem(event: Column) -> Column:
    """Null for a valid event, else what is wrong with it."""
    missing = [F.when(event[name].isNull(), F.lit(name)) for name in EVENT_FIELDS]
    nothing = F.lit(True)
    for name in EVENT_FIELDS:
        nothing = nothing & event[name].isNull()
    listed = F.concat_ws(", ", *missing)  # concat_ws skips the nulls of present fields
    return (F.when(nothing, F.lit(NOT_AN_EVENT))
            .when(listed != "", F.concat(F.lit(MISSING), listed)))


def parse_events(raw: DataFrame) -> DataFrame:
    """Kafka rows plus ``event`` (the parsed struct) and ``problem`` (null when valid)."""
    event = F.from_json(F.col("value").cast("string"), EVENT_SCHEMA)
    return (raw.select("key", "value", "topic", "partition", "offset", "timestamp",
                       event.alias("event"))
            .withColumn("problem", _problem(F.col("event"))))


def valid_events(parsed: DataFrame) -> DataFrame:
    """The valid events' fields, with ``event_time`` (a timestamp) from ``ts``."""
    return (parsed.where(F.col("problem").isNull()).select("event.*")
            .withColumn("event_time", F.timestamp_millis("ts")))


def dead_letter_records(parsed: DataFrame) -> DataFrame:
    """Rows for the dead-letter topic: the record as it came, what is wrong, where it was."""
    source = F.format_string("%s-%d@%d", "topic", "partition", "offset")
    headers = F.array(
        F.struct(F.lit(ERROR_HEADER).alias("key"), F.col("problem").cast("binary").alias("value")),
        F.struct(F.lit(SOURCE_HEADER).alias("key"), source.cast("binary").alias("value")),
    )
    return parsed.where(F.col("problem").isNotNull()).select(
        "key", "value", headers.alias("headers"))


def minute_aggregates(events: DataFrame, watermark_delay: str) -> DataFrame:
    """Events and clicks per page per minute of event time, in ``AGGREGATE_SCHEMA``.

    In a stream the watermark (the latest event time seen minus ``watermark_delay``) both
    drops events later than it and closes windows: in append mode a (minute, page) row is
    written once, when the watermark passes the minute's end. A batch ignores the watermark.
    """
    clicks = F.sum(F.when(F.col("action") == "click", 1).otherwise(0)).cast("long")
    return (events.withWatermark("event_time", watermark_delay)
            .groupBy(F.window("event_time", "1 minute"), "page")
            .agg(F.count(F.lit(1)).alias("events"), clicks.alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "events", "clicks"))


def aggregate_records(aggregates: DataFrame) -> DataFrame:
    """Rows for the aggregates topic: key the page, value a JSON object with epoch-ms times."""
    value = F.to_json(F.struct(
        "page", F.unix_millis("window_start").alias("window_start_ms"),
        F.unix_millis("window_end").alias("window_end_ms"), "events", "clicks"))
    return aggregates.select(F.col("page").cast("binary").alias("key"),
                             value.cast("binary").alias("value"))
