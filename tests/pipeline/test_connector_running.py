"""Spark's Kafka connector while a query runs: broker faults, topic changes, trigger bounds (issue 21).

Each query here is a long-running micro-batch query (a short processing-time trigger) to
Spark's file sink, whose checkpoint and ``_spark_metadata`` log make it exactly once: the
sink must end holding every record produced, each once, whatever happened to the cluster
between the batches. Waits poll the sink or the query with a deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from broker.client import NewPartitions
from deploy import LocalCluster
from deploy.waiting import wait_until

from .support import Sent, admin, create_topic, produce

DEADLINE_S = 90.0
TRIGGER = "200 milliseconds"
REPLICATION = 3


def _wait(condition: Callable[[], bool], what: str, query: StreamingQuery | None = None,
          timeout_s: float = DEADLINE_S) -> None:
    def holds() -> bool:
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        return condition()

    wait_until(holds, what, timeout_s)


@contextmanager
def _file_sink_query(spark: SparkSession, bootstrap: str, topic: str, tmp: Path,
                     **options: str) -> Iterator[tuple[StreamingQuery, Callable[[], list[tuple[int, int, bytes]]]]]:
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    sink = tmp / "sink"
    query = (reader.load().selectExpr("partition", "offset", "value").writeStream
             .format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(tmp / "checkpoint"))
             .trigger(processingTime=TRIGGER).start())

    def rows() -> list[tuple[int, int, bytes]]:
        if not (sink / "_spark_metadata").exists():
            return []
        try:
            # the sink's metadata log names the files of committed batches only
            found = spark.read.parquet(str(sink)).collect()
        except AnalysisException:
            return []  # no batch committed a file yet: nothing to infer a schema from
        return sorted((r.partition, r.offset, bytes(r.value)) for r in found)

    try:
        yield query, rows
    finally:
        query.stop()


def _records(topic: str, start: int, count: int, partitions: int) -> list[Sent]:
    return [Sent(partition=i % partitions, value=b"%s-%d" % (topic.encode(), i))
            for i in range(start, start + count)]


def _expected(records: list[Sent], placed: list[tuple[int, int]]) -> list[tuple[int, int, bytes]]:
    return sorted((p, o, r.value) for r, (p, o) in zip(records, placed, strict=True))


def _leader_of(bootstrap: str, topic: str, partition: int) -> int:
    with admin(bootstrap) as client:
        described = client.describe_topics([topic])[topic]
    leader = described.partitions[partition].leader
    assert leader is not None, f"{topic}-{partition} has no leader"
    return leader.node_id


def test_a_query_rides_through_kill_9_of_a_partition_leader_and_writes_every_record_once(
    spark: SparkSession, bootstrap: str, cluster: LocalCluster, tmp_path: Path
) -> None:
    topic = "faults-leader-killed"
    create_topic(bootstrap, topic, partitions=3)
    first = _records(topic, 0, 60, 3)
    placed = produce(bootstrap, topic, first)
    # the connector's Admin retries a listOffsets whose leader died only after its API
    # timeout (60 s by default; the same against Kafka 4.4.0): 10 s keeps the test short
    with _file_sink_query(spark, bootstrap, topic, tmp_path,
                          **{"kafka.default.api.timeout.ms": "10000",
                             "kafka.request.timeout.ms": "5000"}) as (query, rows):
        _wait(lambda: rows() == _expected(first, placed), "the first records in the sink", query)
        victim = _leader_of(bootstrap, topic, 0)
        cluster.kill(victim)
        try:
            # the producer retries until a new leader answers (acks=all, two replicas left)
            second = _records(topic, 60, 60, 3)
            placed += produce(bootstrap, topic, second)
            _wait(lambda: rows() == _expected(first + second, placed),
                  "every record once after the leader's kill", query)
            assert query.isActive and query.exception() is None
        finally:
            cluster.start_node(victim)  # the layer's other tests share the cluster


def test_partitions_added_while_a_query_runs_are_read_from_their_start(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "faults-partitions-added"
    create_topic(bootstrap, topic, partitions=2, replication_factor=REPLICATION)
    first = _records(topic, 0, 20, 2)
    placed = produce(bootstrap, topic, first)
    with _file_sink_query(spark, bootstrap, topic, tmp_path) as (query, rows):
        _wait(lambda: rows() == _expected(first, placed), "the first records in the sink", query)
        with admin(bootstrap) as client:
            assert client.create_partitions({topic: NewPartitions(total_count=4)}) == {topic: None}
        later = _records(topic, 20, 40, 4)
        placed += produce(bootstrap, topic, later)
        _wait(lambda: rows() == _expected(first + later, placed),
              "the records of the new partitions", query)
        assert {p for p, _, _ in rows()} == {0, 1, 2, 3}


def _query_past_a_deletion(spark: SparkSession, bootstrap: str, tmp: Path,
                           fail_on_data_loss: bool) -> StreamingQuery:
    """A query of a topic that is deleted while it runs, once it failed or ran on."""
    fail = "true" if fail_on_data_loss else "false"
    topic = f"faults-deleted-{fail}"
    create_topic(bootstrap, topic, partitions=2, replication_factor=REPLICATION)
    records = _records(topic, 0, 10, 2)
    placed = produce(bootstrap, topic, records)
    with _file_sink_query(spark, bootstrap, topic, tmp, failOnDataLoss=fail) as (query, rows):
        _wait(lambda: rows() == _expected(records, placed), "the records in the sink", query)
        with admin(bootstrap) as client:
            assert client.delete_topics([topic]) == {topic: None}
        if fail_on_data_loss:
            _wait(lambda: query.exception() is not None, "the query to fail")
            return query
        # the query runs on: the topic made again under the same name is read from the
        # offsets it had reached in the old one (what lies below them is the loss it accepts)
        create_topic(bootstrap, topic, partitions=2, replication_factor=REPLICATION)
        again = _records(topic, 100, 30, 2)
        placed_again = produce(bootstrap, topic, again)
        reached = {p: o + 1 for p, o in placed}
        past = {row for row in _expected(again, placed_again) if row[1] >= reached[row[0]]}
        assert len(past) == 20
        _wait(lambda: past <= set(rows()), "the new topic's records past the old offsets", query)
        assert query.isActive
        return query


def test_a_deleted_topic_fails_a_query_that_fails_on_data_loss_and_not_one_that_does_not(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    failed = _query_past_a_deletion(spark, bootstrap, tmp_path / "fails", True)
    # what the same query says against Kafka 4.4.0 (checked with deploy.KafkaCluster): the
    # connector's offset reader finds the topic gone
    message = str(failed.exception())
    assert "UnknownTopicOrPartitionException" in message, message
    ran_on = _query_past_a_deletion(spark, bootstrap, tmp_path / "runs-on", False)
    assert ran_on.exception() is None


def test_min_offsets_per_trigger_holds_a_batch_back_until_enough_records_wait(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "running-min-offsets"
    create_topic(bootstrap, topic, partitions=1, replication_factor=REPLICATION)
    first = _records(topic, 0, 10, 1)
    placed = produce(bootstrap, topic, first)
    # a progress event for every idle trigger, so the test sees the triggers that held back
    interval = "spark.sql.streaming.noDataProgressEventInterval"
    before = spark.conf.get(interval)
    spark.conf.set(interval, "0ms")
    try:
        with _file_sink_query(spark, bootstrap, topic, tmp_path, minOffsetsPerTrigger="30",
                              maxTriggerDelay="10m") as (query, rows):
            # Spark's first batch takes what is there, whatever the minimum
            _wait(lambda: rows() == _expected(first, placed), "the first batch", query)
            second = _records(topic, 10, 10, 1)
            placed += produce(bootstrap, topic, second)
            held = len(query.recentProgress)
            _wait(lambda: len(query.recentProgress) >= held + 3,
                  "three triggers with 10 new records, under the minimum", query)
            assert rows() == _expected(first, placed[:10])
            third = _records(topic, 20, 25, 1)
            placed += produce(bootstrap, topic, third)
            _wait(lambda: rows() == _expected(first + second + third, placed), "every record",
                  query)
            # the 10 held back went with the 25 after them, in one batch of 35
            batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
            assert batches == [10, 35], batches
    finally:
        spark.conf.set(interval, before or "10s")
