"""pykraft's own client library (``broker.client``, blocking front-ends) against a real cluster."""

from __future__ import annotations

import pytest

from broker.client import (
    BlockingAdmin,
    BlockingConsumer,
    BlockingProducer,
    NewTopic,
    TopicPartition,
)

from .admin_checks import eventually
from .records import PARTITIONS, check_read_back, records


@pytest.mark.parametrize("acks", ["all", "1", "0"])
def test_records_produced_are_consumed(bootstrap: str, acks: str) -> None:
    topic = f"pk-data-{acks}"
    admin = BlockingAdmin({"bootstrap.servers": bootstrap})
    try:
        assert admin.create_topics(
            [NewTopic(name=topic, num_partitions=PARTITIONS, replication_factor=3)]
        ) == {topic: None}
    finally:
        admin.close()
    sent = records(topic)
    with BlockingProducer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": "5"}) as producer:
        futures = [producer.send(topic, value=value, key=key) for key, value in sent]
        producer.flush()
        answers = [future.result(timeout=0) for future in futures]
    acknowledged = {
        value: (answer.partition, answer.offset)
        for (_, value), answer in zip(sent, answers, strict=True)
    }
    if acks == "0":
        assert {answer.offset for answer in answers} == {-1}
    read: list[tuple[int, int, bytes | None, bytes | None]] = []
    with BlockingConsumer({"bootstrap.servers": bootstrap}) as consumer:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)

        def read_all() -> bool:
            read.extend(
                (r.partition, r.offset, r.key, r.value) for r in consumer.poll(timeout_ms=500)
            )
            return len(read) >= len(sent)

        eventually(read_all, f"{len(sent)} records of {topic} read back", 60)
        ends = consumer.end_offsets(partitions)
    check_read_back(sent, read, acknowledged if acks != "0" else None)
    assert sum(ends.values()) == len(sent)
