"""Produce click events with pykraft's own client library (driver side only).

The one module of the pipeline that imports pykraft: Spark's executors (and a spark-submit
driver that only streams or backfills) need pyspark and nothing else. It creates the
pipeline's three topics when missing (the stream job writes to two of them and Spark's
connector does not create topics) and sends the planned records with an idempotent producer,
acks=all, in order: a record's partition comes from its key (murmur2, as Kafka's producer).
"""

from __future__ import annotations

import attrs

from broker.client import BlockingAdmin, BlockingProducer, NewTopic
from pipeline.clickstream_events import ClickRecord, Topics

__all__ = ["DEFAULT_PARTITIONS", "Placed", "ensure_topics", "produce_records"]

DEFAULT_PARTITIONS = 3


@attrs.frozen(kw_only=True)
class Placed:
    """Where a produced record landed."""

    record: ClickRecord
    partition: int
    offset: int


def ensure_topics(bootstrap: str, topics: Topics, *, partitions: int = DEFAULT_PARTITIONS,
                  replication_factor: int | None = None) -> list[str]:
    """Create whichever of ``topics`` is missing; return the names created.

    The replication factor defaults to min(3, the cluster's brokers): a one-broker
    ``kraft dev`` gets RF 1, a bigger cluster RF 3.
    """
    admin = BlockingAdmin({"bootstrap.servers": bootstrap})
    try:
        existing = set(admin.list_topics())
        missing = [name for name in topics.names() if name not in existing]
        if not missing:
            return []
        factor = replication_factor or min(3, len(admin.describe_cluster().brokers))
        answer = admin.create_topics([
            NewTopic(name=name, num_partitions=partitions, replication_factor=factor)
            for name in missing
        ])
    finally:
        admin.close()
    failed = {name: error for name, error in answer.items() if error is not None}
    if failed:
        raise RuntimeError(f"creating the pipeline's topics failed: {failed}")
    return missing


def produce_records(bootstrap: str, topic: str, records: list[ClickRecord]) -> list[Placed]:
    """Send ``records`` in order (idempotent, acks=all) and return where each one landed."""
    with BlockingProducer({"bootstrap.servers": bootstrap, "linger.ms": "5"}) as producer:
        futures = [producer.send(topic, value=r.value, key=r.key, timestamp_ms=r.timestamp_ms)
                   for r in records]
        producer.flush()
        answers = [future.result(timeout=0) for future in futures]
    return [Placed(record=record, partition=answer.partition, offset=answer.offset)
            for record, answer in zip(records, answers, strict=True)]
