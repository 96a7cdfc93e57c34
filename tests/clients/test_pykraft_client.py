"""pykraft's own client library (``broker.client``, blocking front-ends) against a real cluster."""

from __future__ import annotations

import time

import pytest

from broker.client import (
    BlockingAdmin,
    BlockingConsumer,
    BlockingProducer,
    NewTopic,
    OffsetSpec,
    TopicPartition,
)
from deploy import LocalCluster

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


def test_offsets_log_dirs_delete_records_and_delete_topic(
    bootstrap: str, cluster: LocalCluster
) -> None:
    topic = "pk-offsets"
    tp = TopicPartition(topic, 0)
    admin = BlockingAdmin({"bootstrap.servers": bootstrap})
    try:
        assert admin.create_topics(
            [NewTopic(name=topic, num_partitions=1, replication_factor=3)]
        ) == {topic: None}
        # recent timestamps: records from 1970 are past retention.ms, and the test profile's
        # retention check (every second) could delete them while DeleteRecords waits for the
        # followers (the low watermark would then be the log end)
        base_ms = int(time.time() * 1000) - 60_000
        with BlockingProducer({"bootstrap.servers": bootstrap}) as producer:
            futures = [
                producer.send(topic, value=b"r%03d" % i, timestamp_ms=base_ms + i * 10)
                for i in range(100)
            ]
            producer.flush()
        assert [f.result(timeout=0).offset for f in futures] == list(range(100))
        listed = admin.list_offsets(
            {tp: OffsetSpec.EARLIEST}
        )[tp]
        assert listed is not None and listed.offset == 0
        latest = admin.list_offsets({tp: OffsetSpec.LATEST})[tp]
        assert latest is not None and latest.offset == 100
        # by time: the first record at or after the timestamp
        by_time = admin.list_offsets({tp: base_ms + 425})[tp]
        assert by_time is not None and (by_time.offset, by_time.timestamp) == (43, base_ms + 430)
        newest = admin.list_offsets({tp: OffsetSpec.MAX_TIMESTAMP})[tp]
        assert newest is not None and newest.offset == 99

        # every replica's broker reports the partition's log with its size
        dirs = admin.describe_log_dirs()
        assert sorted(dirs) == sorted(cluster.broker_ids)
        for broker, by_path in dirs.items():
            [described] = by_path.values()
            assert described.error is None, broker
            assert described.replicas[(topic, 0)].size > 0, broker

        assert admin.delete_records({tp: 40}) == {tp: 40}
        assert admin.list_offsets({tp: OffsetSpec.EARLIEST})[tp].offset == 40  # type: ignore[union-attr]
        with BlockingConsumer({"bootstrap.servers": bootstrap}) as consumer:
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            read: list[int] = []

            def read_rest() -> bool:
                read.extend(r.offset for r in consumer.poll(timeout_ms=500))
                return len(read) >= 60

            eventually(read_rest, "the records after the deleted ones", 30)
        assert read == list(range(40, 100))

        assert admin.delete_topics([topic]) == {topic: None}
        eventually(lambda: topic not in admin.list_topics(), f"{topic} gone")
    finally:
        admin.close()
