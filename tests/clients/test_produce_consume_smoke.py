"""Records produced by confluent-kafka are read back (smoke test of the data plane)."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from deploy import LocalCluster

from .admin_checks import eventually


def test_confluent_produces_and_consumes(bootstrap: str, cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.create_topics([NewTopic("smoke", 1, 3)]).values()
    assert future.result(20) is None
    delivered: list[tuple[int, int]] = []

    def report(err: object, msg: object) -> None:
        assert err is None, err
        delivered.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(1000):
        producer.produce("smoke", value=b"v%d" % i, key=b"k%d" % i, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert sorted(o for _, o in delivered) == list(range(1000))
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "smoke", "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition("smoke", 0, 0)])
    seen: list[bytes] = []

    def read_some() -> bool:
        for msg in consumer.consume(500, timeout=1):
            assert msg.error() is None, msg.error()
            seen.append(msg.value())
        return len(seen) >= 1000

    eventually(read_some, "1000 records read back", 30)
    consumer.close()
    assert seen == [b"v%d" % i for i in range(1000)]
