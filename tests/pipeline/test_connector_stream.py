"""Structured Streaming with Spark's own Kafka connector against pykraft (issue 21)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import DataStreamWriter

from broker.client import NewPartitions, TopicPartition

from .support import Sent, admin, create_topic, produce, read_back

QUERY_TIMEOUT_S = 90


def kafka_stream_writer(spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path,
                        **options: str) -> DataStreamWriter:
    """A stream of ``topic`` from its beginning to a checkpointed writer, run once to the end."""
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    frame = reader.load().selectExpr("partition", "offset", "value")
    return (frame.writeStream.option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True))


def run_to_end(writer: DataStreamWriter) -> list[dict[str, Any]]:
    """Start an ``availableNow`` query, wait until it has read everything, return its progress."""
    query = writer.start()
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), f"not done in {QUERY_TIMEOUT_S}s"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return query.recentProgress


def rows_read(progress: list[dict[str, Any]]) -> list[int]:
    """numInputRows of each micro-batch that read anything."""
    return [p["numInputRows"] for p in progress if p["numInputRows"]]


def sink_rows(spark: SparkSession, sink: Path) -> list[tuple[int, int, bytes]]:
    # the file sink's _spark_metadata log names the files of committed batches only
    rows = spark.read.parquet(str(sink)).collect()
    return sorted((row.partition, row.offset, bytes(row.value)) for row in rows)


def sent_rows(topic: str, count: int, start: int = 0) -> list[Sent]:
    return [Sent(partition=i % 3, value=b"%s-%d" % (topic.encode(), i))
            for i in range(start, start + count)]


def test_an_available_now_query_restarted_from_its_checkpoint_reads_only_new_records(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "stream-available-now"
    create_topic(bootstrap, topic, partitions=3)
    first = sent_rows(topic, 20)
    placed = produce(bootstrap, topic, first)
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"

    def writer() -> DataStreamWriter:
        return kafka_stream_writer(spark, bootstrap, topic, checkpoint).format(
            "parquet").option("path", str(sink))

    assert sum(rows_read(run_to_end(writer()))) == 20
    assert sink_rows(spark, sink) == sorted(
        (p, o, r.value) for r, (p, o) in zip(first, placed, strict=True))
    second = sent_rows(topic, 10, start=20)
    placed += produce(bootstrap, topic, second)
    assert sum(rows_read(run_to_end(writer()))) == 10
    assert sink_rows(spark, sink) == sorted(
        (p, o, r.value) for r, (p, o) in zip(first + second, placed, strict=True))


def test_max_offsets_per_trigger_bounds_every_micro_batch(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "stream-max-offsets"
    create_topic(bootstrap, topic, partitions=3)
    produce(bootstrap, topic, sent_rows(topic, 30))
    writer = kafka_stream_writer(spark, bootstrap, topic, tmp_path / "checkpoint",
                                 maxOffsetsPerTrigger="7").format("noop")
    sizes = rows_read(run_to_end(writer))
    assert sum(sizes) == 30
    assert max(sizes) <= 7
    assert len(sizes) >= 5, sizes


def test_a_streaming_kafka_sink_writes_each_partition_in_order(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    source, target = "stream-source", "stream-target"
    create_topic(bootstrap, source, partitions=3)
    create_topic(bootstrap, target, partitions=3)
    sent = sent_rows(source, 45)
    produce(bootstrap, source, sent)
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "20"))
    writer = (reader.load().selectExpr("partition", "value").writeStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
              .option("checkpointLocation", str(tmp_path / "checkpoint"))
              .trigger(availableNow=True))
    assert sum(rows_read(run_to_end(writer))) == len(sent)
    read = read_back(bootstrap, target, partitions=3, count=len(sent))
    assert len(read) == len(sent)
    for partition in range(3):
        landed = [r.value for r in sorted(read, key=lambda r: r.offset) if r.partition == partition]
        assert landed == [r.value for r in sent if r.partition == partition]


def test_records_deleted_before_a_restart_fail_the_query_unless_fail_on_data_loss_is_false(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "stream-data-loss"
    create_topic(bootstrap, topic, partitions=3)
    placed = produce(bootstrap, topic, sent_rows(topic, 30))
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"

    def writer(fail_on_data_loss: str) -> DataStreamWriter:
        return kafka_stream_writer(
            spark, bootstrap, topic, checkpoint, failOnDataLoss=fail_on_data_loss
        ).format("parquet").option("path", str(sink))

    assert sum(rows_read(run_to_end(writer("true")))) == 30
    later = sent_rows(topic, 30, start=30)
    placed += produce(bootstrap, topic, later)
    # partition 0 holds offsets 10-19 unread; DeleteRecords moves its log start to 15
    with admin(bootstrap) as client:
        assert client.delete_records({TopicPartition(topic, 0): 15}) == {
            TopicPartition(topic, 0): 15}
    # the executor's Fetch at offset 10 gets OFFSET_OUT_OF_RANGE (reset policy none)
    lost = (r"(?s)Some data may have been lost.*"
            rf"Could not read records in offset \[10, 20\) for topic partition {topic}-0")
    with pytest.raises(StreamingQueryException, match=lost):
        run_to_end(writer("true"))
    run_to_end(writer("false"))
    assert sink_rows(spark, sink) == sorted(
        (p, o, f"{topic}-{i}".encode()) for i, (p, o) in enumerate(placed)
        if not (p == 0 and 10 <= o < 15))


def test_partitions_added_between_runs_are_read_from_their_beginning(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "stream-new-partitions"
    create_topic(bootstrap, topic, partitions=2)
    produce(bootstrap, topic, [Sent(partition=i % 2, value=b"a%d" % i) for i in range(10)])
    writer = kafka_stream_writer(spark, bootstrap, topic, tmp_path / "checkpoint").format(
        "parquet").option("path", str(tmp_path / "sink"))
    assert sum(rows_read(run_to_end(writer))) == 10
    with admin(bootstrap) as client:
        assert client.create_partitions({topic: NewPartitions(total_count=3)}) == {topic: None}
    produce(bootstrap, topic, [Sent(partition=i % 3, value=b"b%d" % i) for i in range(9)])
    assert sum(rows_read(run_to_end(writer))) == 9
    assert sorted(p for p, _, _ in sink_rows(spark, tmp_path / "sink")) == sorted(
        [0, 1] * 5 + [0, 1, 2] * 3)
