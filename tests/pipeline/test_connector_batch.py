"""Batch reads and writes with Spark's own Kafka connector against pykraft (issue 21)."""

from __future__ import annotations

import json
import time

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from .support import Sent, create_topic, kafka_reader, positions, produce, read_back

# recent timestamps: the test profile's retention would delete records from 1970
BASE_MS = int(time.time() * 1000) - 600_000
KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def ten_per_partition(bootstrap: str, topic: str, step_ms: int = 100) -> None:
    """Offsets 0-9 in each of 3 partitions; record i of a partition at BASE_MS + i * step_ms."""
    create_topic(bootstrap, topic, partitions=3)
    produce(bootstrap, topic, [
        Sent(partition=p, value=b"%d-%d" % (p, i), timestamp_ms=BASE_MS + i * step_ms)
        for i in range(10) for p in range(3)
    ])


def expected(topic: str, ranges: dict[int, range]) -> list[tuple[str, int, int]]:
    return sorted((topic, p, o) for p, offsets in ranges.items() for o in offsets)


def test_a_batch_read_returns_exactly_the_produced_rows_and_columns(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-all-columns"
    create_topic(bootstrap, topic, partitions=3)
    sent = [
        Sent(partition=i % 3, key=None if i % 5 == 0 else b"k%d" % i, value=b"v%03d" % i,
             headers=(("h", b"%d" % i), ("n", None)) if i % 2 else (),
             timestamp_ms=BASE_MS + i)
        for i in range(30)
    ]
    placed = produce(bootstrap, topic, sent)
    frame = kafka_reader(spark, bootstrap, subscribe=topic, includeHeaders="true").load()
    assert frame.columns == [*KAFKA_COLUMNS, "headers"]
    rows = frame.withColumn("ms", F.unix_millis("timestamp")).collect()
    got = sorted(
        (row.partition, row.offset, row.key, row.value, row.ms, row.timestampType,
         tuple((h.key, h.value) for h in row.headers or ()), row.topic)
        for row in rows
    )
    want = sorted(
        (partition, offset, r.key, r.value, r.timestamp_ms, 0, r.headers, topic)
        for r, (partition, offset) in zip(sent, placed, strict=True)
    )
    assert got == want
    # without includeHeaders there is no headers column
    assert kafka_reader(spark, bootstrap, subscribe=topic).load().columns == KAFKA_COLUMNS


def test_starting_and_ending_offsets_earliest_latest_and_per_partition_json(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-offsets"
    ten_per_partition(bootstrap, topic)
    assert positions(spark, bootstrap, subscribe=topic, startingOffsets="earliest",
                     endingOffsets="latest") == expected(topic, dict.fromkeys(range(3), range(10)))
    # -2 is earliest, -1 latest; ending offsets are exclusive
    starting = json.dumps({topic: {"0": -2, "1": 3, "2": 5}})
    ending = json.dumps({topic: {"0": 4, "1": -1, "2": 8}})
    assert positions(spark, bootstrap, subscribe=topic, startingOffsets=starting,
                     endingOffsets=ending) == expected(
        topic, {0: range(4), 1: range(3, 10), 2: range(5, 8)})


def test_starting_and_ending_timestamps_select_by_list_offsets_for_time(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-timestamps"
    ten_per_partition(bootstrap, topic)
    # the first offset whose timestamp is at or after the bound: record 3 and record 7
    assert positions(spark, bootstrap, subscribe=topic, startingTimestamp=str(BASE_MS + 250),
                     endingTimestamp=str(BASE_MS + 650)) == expected(
        topic, dict.fromkeys(range(3), range(3, 7)))
    by_partition = json.dumps({topic: {"0": BASE_MS, "1": BASE_MS + 499, "2": BASE_MS + 900}})
    assert positions(spark, bootstrap, subscribe=topic,
                     startingOffsetsByTimestamp=by_partition) == expected(
        topic, {0: range(10), 1: range(5, 10), 2: range(9, 10)})
    ending = json.dumps({topic: {"0": BASE_MS + 100, "1": BASE_MS + 5_000, "2": BASE_MS}})
    assert positions(spark, bootstrap, subscribe=topic,
                     endingOffsetsByTimestamp=ending) == expected(
        topic, {0: range(1), 1: range(10)})


def test_a_starting_timestamp_past_every_record_fails_unless_the_strategy_is_latest(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-timestamp-none"
    ten_per_partition(bootstrap, topic)
    late = json.dumps({topic: {"0": BASE_MS + 5_000, "1": BASE_MS + 5_000, "2": BASE_MS}})
    # ListOffsets answers -1 (no record at or after the time): Spark's default is to fail
    with pytest.raises(PySparkException, match="No offset matched from request of topic-partition"):
        # the driver asks again numRetries times, retryIntervalMs apart (1 s by default)
        positions(spark, bootstrap, subscribe=topic, startingOffsetsByTimestamp=late,
                  **{"fetchOffset.retryIntervalMs": "10"})
    assert positions(spark, bootstrap, subscribe=topic, startingOffsetsByTimestamp=late,
                     startingOffsetsByTimestampStrategy="latest") == expected(
        topic, {2: range(10)})


def test_min_partitions_splits_partitions_into_tasks_that_read_disjoint_ranges(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-min-partitions"
    ten_per_partition(bootstrap, topic)
    # each Spark task has a consumer of its own, in one group, fetching its slice at once
    frame = kafka_reader(spark, bootstrap, subscribe=topic, minPartitions="6").load()
    assert frame.rdd.getNumPartitions() >= 6
    rows = frame.select("topic", "partition", "offset").collect()
    assert sorted((r.topic, r.partition, r.offset) for r in rows) == expected(
        topic, dict.fromkeys(range(3), range(10)))


def test_subscribe_subscribe_pattern_and_assign_pick_their_topics_and_partitions(
    spark: SparkSession, bootstrap: str
) -> None:
    for topic in ("choose-a-1", "choose-a-2", "choose-b-1"):
        ten_per_partition(bootstrap, topic)
    every = dict.fromkeys(range(3), range(10))
    assert positions(spark, bootstrap, subscribe="choose-a-1,choose-b-1") == sorted(
        expected("choose-a-1", every) + expected("choose-b-1", every))
    assert positions(spark, bootstrap, subscribePattern="choose-a-[0-9]") == sorted(
        expected("choose-a-1", every) + expected("choose-a-2", every))
    assign = json.dumps({"choose-a-2": [0, 2], "choose-b-1": [1]})
    assert positions(spark, bootstrap, assign=assign) == sorted(
        expected("choose-a-2", {0: range(10), 2: range(10)}) + expected("choose-b-1", {1: range(10)}))


def test_read_committed_reads_up_to_the_high_watermark_without_transactions(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-read-committed"
    ten_per_partition(bootstrap, topic)
    options = {"subscribe": topic, "kafka.isolation.level": "read_committed"}
    assert positions(spark, bootstrap, **options) == expected(
        topic, dict.fromkeys(range(3), range(10)))
    assign = json.dumps({topic: {"0": -2, "1": 4, "2": -2}})
    ending = json.dumps({topic: {"0": -1, "1": -1, "2": 6}})
    assert positions(spark, bootstrap, **options, startingOffsets=assign,
                     endingOffsets=ending) == expected(
        topic, {0: range(10), 1: range(4, 10), 2: range(6)})


HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                StructField("value", BinaryType())]))
WRITE_SCHEMA = StructType([
    StructField("seq", IntegerType()),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("headers", HEADERS),
])


def test_a_batch_write_lands_every_row_in_order_per_partition(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-write"
    create_topic(bootstrap, topic, partitions=3)
    rows = [
        (i, b"k%d" % i, b"v%03d" % i, topic, i % 3, [("seq", b"%d" % i), ("none", None)])
        for i in range(60)
    ]
    frame = spark.createDataFrame(rows, WRITE_SCHEMA)
    # each Kafka partition's rows in one Spark task, in seq order: the order they must land in
    (frame.repartition(3, "partition").sortWithinPartitions("seq").drop("seq")
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save())
    read = read_back(bootstrap, topic, partitions=3, count=len(rows))
    assert len(read) == len(rows)
    for partition in range(3):
        landed = sorted((r for r in read if r.partition == partition), key=lambda r: r.offset)
        want = [row for row in rows if row[4] == partition]
        assert [(r.key, r.value, tuple(r.headers)) for r in landed] == [
            (key, value, tuple(headers)) for _, key, value, _, _, headers in want]
        assert [r.offset for r in landed] == list(range(len(want)))


def test_the_topic_option_overrides_the_topic_column_and_the_partitioner_places_keys(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "batch-write-option"
    create_topic(bootstrap, topic, partitions=3)
    rows = [(b"key-%d" % (i % 7), b"v%03d" % i, "no-such-topic") for i in range(40)]
    frame = spark.createDataFrame(rows, "key binary, value binary, topic string")
    (frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).save())
    read = read_back(bootstrap, topic, partitions=3, count=len(rows))
    partitions_of_key: dict[bytes | None, set[int]] = {}
    for record in read:
        partitions_of_key.setdefault(record.key, set()).add(record.partition)
    # one task wrote every row: each partition holds its rows in the frame's order
    for partition in range(3):
        values = [r.value for r in sorted(read, key=lambda r: r.offset) if r.partition == partition]
        assert values == [v for k, v, _ in rows if partition in partitions_of_key[k]]
    assert sorted(r.value for r in read) == sorted(v for _, v, _ in rows)
    assert all(len(found) == 1 for found in partitions_of_key.values())
