"""Topics, records and read-backs for the pipeline tests, with pykraft's own client library."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

import attrs
from pyspark.sql import DataFrameReader, SparkSession

from broker.client import (
    BlockingAdmin,
    BlockingConsumer,
    BlockingProducer,
    ConsumerRecord,
    NewTopic,
    TopicPartition,
)

__all__ = [
    "SHORT_FETCH_WAIT",
    "Sent",
    "admin",
    "create_topic",
    "kafka_reader",
    "positions",
    "produce",
    "read_all",
    "read_back",
]


@attrs.frozen(kw_only=True)
class Sent:
    """One record to produce (partition given: the tests know where each record lands)."""

    partition: int
    value: bytes
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None


@contextlib.contextmanager
def admin(bootstrap: str) -> Iterator[BlockingAdmin]:
    client = BlockingAdmin({"bootstrap.servers": bootstrap})
    try:
        yield client
    finally:
        client.close()


def create_topic(bootstrap: str, name: str, partitions: int = 3,
                 replication_factor: int = 3) -> None:
    with admin(bootstrap) as client:
        answer = client.create_topics(
            [NewTopic(name=name, num_partitions=partitions,
                      replication_factor=replication_factor)]
        )
    assert answer == {name: None}, answer


def produce(bootstrap: str, topic: str, records: Sequence[Sent]) -> list[tuple[int, int]]:
    """Send ``records`` (acks=all) and return each one's (partition, offset)."""
    with BlockingProducer({"bootstrap.servers": bootstrap, "linger.ms": "5"}) as producer:
        futures = [
            producer.send(topic, value=r.value, key=r.key, headers=r.headers,
                          partition=r.partition, timestamp_ms=r.timestamp_ms)
            for r in records
        ]
        producer.flush()
        answers = [future.result(timeout=0) for future in futures]
    return [(answer.partition, answer.offset) for answer in answers]


def read_back(bootstrap: str, topic: str, partitions: int, count: int,
              timeout_s: float = 30.0) -> list[ConsumerRecord]:
    """Read ``count`` records of ``topic`` from the beginning (assign + seek, no group)."""
    read: list[ConsumerRecord] = []
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    deadline = time.monotonic() + timeout_s
    with BlockingConsumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        while len(read) < count:
            assert time.monotonic() < deadline, f"{len(read)} of {count} records of {topic} read"
            read.extend(consumer.poll(timeout_ms=500))
    return read


def read_all(bootstrap: str, topic: str, partitions: int,
             timeout_s: float = 30.0) -> list[ConsumerRecord]:
    """Every record of ``topic`` up to its end offsets now (so duplicates would show)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with BlockingConsumer({"bootstrap.servers": bootstrap}) as consumer:
        ends = consumer.end_offsets(tps)
    return read_back(bootstrap, topic, partitions, sum(ends.values()), timeout_s)


def kafka_reader(spark: SparkSession, bootstrap: str, **options: str) -> DataFrameReader:
    """``spark.read.format("kafka")`` at the cluster, with ``options``."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


# Each executor consumer's poll also sends the next Fetch, which waits fetch.max.wait.ms
# (500) at the log end; the ListOffsets Spark sends next queues behind it on the same
# connection (a broker answers a connection in order). A tiny read thus takes about 1.3 s
# at the defaults, on Kafka as on pykraft, and about 0.5 s with a short wait.
SHORT_FETCH_WAIT = {"kafka.fetch.max.wait.ms": "50"}


def positions(spark: SparkSession, bootstrap: str, **options: str) -> list[tuple[str, int, int]]:
    """The (topic, partition, offset) of every row a batch read with ``options`` returns."""
    rows = kafka_reader(spark, bootstrap, **SHORT_FETCH_WAIT, **options).load().select(
        "topic", "partition", "offset").collect()
    return sorted((row.topic, row.partition, row.offset) for row in rows)
