"""confluent-kafka (librdkafka, unmodified) against a real cluster."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from deploy import LocalCluster

from . import group_scenarios as scenarios
from .admin_checks import check_partitions, eventually
from .records import PARTITIONS, check_read_back, records

TIMEOUT_S = 20


@pytest.fixture
def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def test_topics_created_described_and_deleted(admin: AdminClient, cluster: LocalCluster) -> None:
    # the first thing a new user tries: librdkafka asks for all topics with a count it
    # never shrinks (trailing bytes after the request body)
    assert "cf-admin" not in admin.list_topics(timeout=TIMEOUT_S).topics
    (future,) = admin.create_topics([NewTopic("cf-admin", 3, 3)]).values()
    assert future.result(TIMEOUT_S) is None
    (again,) = admin.create_topics([NewTopic("cf-admin", 3, 3)]).values()
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        again.result(TIMEOUT_S)

    def described() -> bool:
        found = admin.list_topics(topic="cf-admin", timeout=TIMEOUT_S).topics["cf-admin"]
        return found.error is None

    eventually(described, "cf-admin described")
    topic = admin.list_topics(topic="cf-admin", timeout=TIMEOUT_S).topics["cf-admin"]
    check_partitions(
        {p.id: p.leader for p in topic.partitions.values()},
        {p.id: p.replicas for p in topic.partitions.values()},
        partitions=3,
        brokers=cluster.broker_ids,
    )
    (gone,) = admin.delete_topics(["cf-admin"]).values()
    assert gone.result(TIMEOUT_S) is None
    eventually(
        lambda: "cf-admin" not in admin.list_topics(timeout=TIMEOUT_S).topics, "cf-admin gone"
    )


@pytest.mark.parametrize("acks", ["all", "1", "0"])
def test_records_produced_are_consumed(admin: AdminClient, bootstrap: str, acks: str) -> None:
    topic = f"cf-data-{acks}"
    (created,) = admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values()
    assert created.result(TIMEOUT_S) is None
    sent = records(topic)
    acknowledged: dict[bytes, tuple[int, int]] = {}
    failures: list[object] = []

    def delivered(err: object, msg: Message) -> None:
        if err is not None:
            failures.append(err)
        elif acks != "0":
            acknowledged[msg.value()] = (msg.partition(), msg.offset())  # type: ignore[index]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5})
    for key, value in sent:
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert failures == []
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read: list[tuple[int, int, bytes | None, bytes | None]] = []

    def read_all() -> bool:
        for msg in consumer.consume(1000, timeout=0.5):
            assert msg.error() is None, msg.error()
            read.append((msg.partition(), msg.offset(), msg.key(), msg.value()))  # type: ignore[arg-type]
        return len(read) >= len(sent)

    eventually(read_all, f"{len(sent)} records of {topic} read back", 60)
    consumer.close()
    check_read_back(sent, read, acknowledged if acks != "0" else None)


def test_a_topic_is_created_on_first_use(admin: AdminClient, bootstrap: str) -> None:
    """auto.create.topics.enable (Kafka's default): producing to an unknown topic creates it
    with the cluster's defaults, and the record is delivered."""
    delivered: list[tuple[int, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    producer.produce(
        "cf-auto", value=b"first",
        on_delivery=lambda err, msg: delivered.append((msg.partition(), msg.offset()))
        if err is None else None,
    )
    assert producer.flush(30) == 0
    assert delivered == [(0, 0)]
    topic = admin.list_topics(topic="cf-auto", timeout=TIMEOUT_S).topics["cf-auto"]
    assert topic.error is None and len(topic.partitions) == 1


class _Producer:
    """librdkafka's producer, idempotent (its default is off) at acks=all."""

    def __init__(self, bootstrap: str) -> None:
        self._producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5,
        })
        self._acknowledged: dict[bytes, tuple[int, int]] = {}
        self._failures: list[str] = []

    def _delivered(self, err: object, msg: Message) -> None:
        if err is not None:
            self._failures.append(str(err))
        else:
            self._acknowledged[msg.value()] = (msg.partition(), msg.offset())  # type: ignore[index]

    def send(self, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        for key, value in pairs:
            while True:
                try:
                    self._producer.produce(topic, value=value, key=key, on_delivery=self._delivered)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    self._producer.poll(0.1)
            self._producer.poll(0)

    def flush(self, timeout_s: float) -> None:
        assert self._producer.flush(timeout_s) == 0, "records still unanswered"

    def acknowledged(self) -> dict[bytes, tuple[int, int]]:
        self._producer.poll(0)
        return dict(self._acknowledged)

    def failures(self) -> list[str]:
        self._producer.poll(0)
        return list(self._failures)

    def close(self) -> None:
        self._producer.flush(5)


class _Consumer:
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._topic = topic
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": scenarios.SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": scenarios.HEARTBEAT_INTERVAL_MS,
        })
        self._consumer.subscribe([topic])

    def poll(self, timeout_s: float) -> list[scenarios.Read]:
        read: list[scenarios.Read] = []
        for msg in self._consumer.consume(1000, timeout=timeout_s):
            assert msg.error() is None, msg.error()
            read.append((msg.partition(), msg.offset(), msg.key(), msg.value()))  # type: ignore[arg-type]
        return read

    def assignment(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self._consumer.assignment())

    def positions(self) -> dict[int, int]:
        assigned = self._consumer.assignment()
        if not assigned:
            return {}
        return {tp.partition: tp.offset for tp in self._consumer.position(assigned) if tp.offset >= 0}

    def commit(self) -> None:
        try:
            self._consumer.commit(asynchronous=False)
        except KafkaException as error:
            # nothing consumed since the last commit: nothing to commit
            if error.args[0].code() != KafkaError._NO_OFFSET:
                raise

    def committed(self) -> dict[int, int]:
        asked = [TopicPartition(self._topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in self._consumer.committed(asked, timeout=TIMEOUT_S)
                if tp.offset >= 0}

    def close(self) -> None:
        self._consumer.close()


class _ConfluentKafka:
    name = "cf"

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = bootstrap

    def producer(self) -> scenarios.Producer:
        return _Producer(self._bootstrap)

    def consumer(self, group: str, topic: str) -> scenarios.Consumer:
        return _Consumer(self._bootstrap, group, topic)


def test_a_group_shares_commits_resumes_and_rebalances(cluster: LocalCluster, bootstrap: str) -> None:
    scenarios.group_shares_commits_resumes_and_rebalances(_ConfluentKafka(bootstrap), cluster, bootstrap)


# the coordinator kill in CI: confluent-kafka (the other clients with --all-clients)
def test_a_group_carries_on_after_its_coordinators_kill(cluster: LocalCluster, bootstrap: str) -> None:
    scenarios.group_carries_on_after_coordinator_kill(_ConfluentKafka(bootstrap), cluster, bootstrap)


@pytest.mark.all_clients
def test_an_idempotent_producer_writes_once_across_a_leader_kill(
    cluster: LocalCluster, bootstrap: str
) -> None:
    scenarios.idempotent_producer_survives_leader_kill(_ConfluentKafka(bootstrap), cluster, bootstrap)
