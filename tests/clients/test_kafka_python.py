"""kafka-python (unmodified) against a real cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from deploy import LocalCluster

from .admin_checks import check_partitions, eventually
from .records import PARTITIONS, check_read_back, records

TIMEOUT_MS = 20_000


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    yield client
    client.close()


def test_topics_created_described_and_deleted(admin: KafkaAdminClient, cluster: LocalCluster) -> None:
    answer = admin.create_topics([NewTopic("kp-admin", 3, 3)])
    assert [t["error_code"] for t in answer["topics"]] == [0]
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("kp-admin", 3, 3)], raise_errors=True)
    eventually(lambda: "kp-admin" in admin.list_topics(), "kp-admin listed")
    eventually(
        lambda: admin.describe_topics(["kp-admin"])[0]["error_code"] == 0, "kp-admin described"
    )
    (described,) = admin.describe_topics(["kp-admin"])
    parts = described["partitions"]
    check_partitions(
        {p["partition_index"]: p["leader_id"] for p in parts},
        {p["partition_index"]: p["replica_nodes"] for p in parts},
        partitions=3,
        brokers=cluster.broker_ids,
    )
    admin.delete_topics(["kp-admin"])
    eventually(lambda: "kp-admin" not in admin.list_topics(), "kp-admin gone")


def test_each_broker_describes_its_own_configs(
    admin: KafkaAdminClient, cluster: LocalCluster
) -> None:
    for broker in cluster.broker_ids:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker))
        described = admin.describe_configs([resource], config_filter="all")
        (configs,) = described["broker"].values()
        assert set(described["broker"]) == {str(broker)}
        assert {"min.insync.replicas", "unclean.leader.election.enable"} <= set(configs)


@pytest.mark.parametrize("acks", ["all", 1, 0])
def test_records_produced_are_consumed(
    admin: KafkaAdminClient, bootstrap: str, acks: str | int
) -> None:
    topic = f"kp-data-{acks}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
    sent = records(topic)
    # idempotence (kafka-python's default) comes with the next issue's InitProducerId
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks=acks, enable_idempotence=False, linger_ms=5,
        request_timeout_ms=TIMEOUT_MS,
    )
    futures = [producer.send(topic, key=key, value=value) for key, value in sent]
    producer.flush(timeout=60)
    acknowledged = {}
    for (_, value), future in zip(sent, futures, strict=True):
        metadata = future.get(timeout=0)
        if acks != 0:
            acknowledged[value] = (metadata.partition, metadata.offset)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=TIMEOUT_MS,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    read: list[tuple[int, int, bytes | None, bytes | None]] = []

    def read_all() -> bool:
        for batch in consumer.poll(timeout_ms=500).values():
            read.extend((r.partition, r.offset, r.key, r.value) for r in batch)
        return len(read) >= len(sent)

    eventually(read_all, f"{len(sent)} records of {topic} read back", 60)
    consumer.close()
    check_read_back(sent, read, acknowledged if acks != 0 else None)
