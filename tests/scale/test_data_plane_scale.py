"""10,000 partitions x RF 3 hosted by 3 brokers (30,000 replicas), real processes.

Every broker hosts its replicas: the followers fetch from the leaders in
incremental sessions, and every ISR must fill (each follower caught up and
added by AlterPartition). A record produced with acks=all to every 50th
partition is acknowledged; a broker is killed with kill -9 and started again;
it must rejoin every ISR, the records must all read back, and all six nodes
must end with the same image. The nodes run the shared short-timeout test
profile. (The 100,000-partition scale test hosts its replicas too, idle; this
one produces, reads back and kills a broker under the profile's own lag time.)
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from deploy import LocalCluster
from tests.integration.checks import StartCluster
from tests.integration.test_brokers import active_image, broker_states

from .test_100k_partitions import create_partitions, same_image_everywhere

pytestmark = pytest.mark.timeout(300)

PARTITIONS = 10_000
SAMPLED = range(0, PARTITIONS, 50)
DEADLINE_S = 90.0


def _partitions(cluster: LocalCluster) -> list[dict[str, Any]]:
    [big] = [t for t in active_image(cluster)["topics"] if t["name"] == "hosted"]
    return list(big["partitions"])


def _isrs_full(cluster: LocalCluster) -> bool | None:
    parts = _partitions(cluster)
    return True if all(len(p["isr"]) == 3 for p in parts) else None


def test_10k_hosted_partitions_fill_their_isrs_and_survive_a_broker_kill(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3, brokers=3)
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == dict.fromkeys(cluster.broker_ids, False)
        or None,
        "three unfenced brokers", DEADLINE_S,
    )
    assert create_partitions(cluster, "hosted", PARTITIONS) == 0
    cluster.wait_for(lambda: _isrs_full(cluster), "every ISR full", DEADLINE_S)

    bootstrap = ",".join(f"{h}:{p}" for h, p in map(cluster.address, cluster.broker_ids))
    delivered: dict[int, int] = {}

    def report(err: object, msg: Any) -> None:
        assert err is None, err
        delivered[msg.partition()] = msg.offset()

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for index in SAMPLED:
        producer.produce("hosted", value=b"p%d" % index, partition=index, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    # idempotence is off: a retried batch may have been appended twice (offset 1)
    assert sorted(delivered) == list(SAMPLED)

    victim = cluster.broker_ids[0]
    cluster.kill(victim)
    cluster.wait_for(
        lambda: all(p["leader"] != victim for p in _partitions(cluster)) or None,
        f"broker {victim}'s leaderships moved", DEADLINE_S,
    )
    cluster.start_node(victim)
    cluster.wait_for(lambda: _isrs_full(cluster), f"broker {victim} back in every ISR", DEADLINE_S)
    cluster.wait_for(lambda: same_image_everywhere(cluster), "the same image on all six nodes",
                     DEADLINE_S)

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "scale", "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition("hosted", index, 0) for index in SAMPLED])
    read: dict[tuple[int, int], bytes] = {}

    def all_read() -> bool | None:
        for msg in consumer.consume(500, timeout=0.5):
            assert msg.error() is None, msg.error()
            read[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[assignment]
        return True if all(key in read for key in delivered.items()) else None

    try:
        cluster.wait_for(all_read, "every sampled record read back", DEADLINE_S)
    finally:
        consumer.close()
    # every acknowledged record is where its acknowledgement said, nothing else is there
    assert {read[key] for key in delivered.items()} == {b"p%d" % index for index in SAMPLED}
    assert all(read[(partition, offset)] == b"p%d" % partition for partition, offset in read)
