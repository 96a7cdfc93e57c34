"""Partition replication under faults: real processes, a real Kafka client (confluent-kafka).

3 controllers and 3 brokers; each test makes its own topic of one partition, replication
factor 3 and ``min.insync.replicas`` 2 (the controller's default: a majority), so:

* kill -9 of the partition leader while acks=all records are in flight loses none that
  were acknowledged; the leader comes back as a follower and catches up;
* a paused follower (SIGSTOP) leaves the ISR after ``replica.lag.time.max.ms``, acks=all
  goes on with the two left, and it rejoins once resumed;
* with both followers paused the ISR falls below min ISR: acks=all is refused with
  NOT_ENOUGH_REPLICAS, nothing acknowledged is lost, and acks=all works again once they
  are back (no silent unclean election, no write acknowledged by one replica);
* a reassignment copies the log to the new replica before it completes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from click.testing import CliRunner
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cli.reassign_partitions import reassign_partitions
from deploy import ClusterSpec, LocalCluster
from quorum.client import BlockingKafkaConnection
from quorum.wire.messages import MetadataRequest, MetadataRequestTopic
from tests.clients.admin_checks import eventually
from tests.integration.conftest import _close, _started

_TIMEOUT_S: Final = 20
_ISR_CHANGE_S: Final = 20.0  # replica.lag.time.max.ms is 2 s in the test profile


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    started = _started(tmp_path_factory.mktemp("replication"), ClusterSpec(controllers=3, brokers=3))
    yield started
    _close(started)


@pytest.fixture
def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(f"{host}:{port}" for host, port in map(cluster.address, cluster.broker_ids))


def _partition(admin: AdminClient, topic: str) -> Any:
    return admin.list_topics(topic=topic, timeout=_TIMEOUT_S).topics[topic].partitions[0]


def _isr_seen_by(cluster: LocalCluster, broker_id: int, topic: str) -> list[int]:
    """The ISR of the topic's partition 0 in one broker's image (others may be paused)."""
    host, port = cluster.address(broker_id)
    with BlockingKafkaConnection.connect(host, port, timeout=5) as conn:
        answer = conn.request(
            MetadataRequest(topics=(MetadataRequestTopic(name=topic),)), version=9, timeout=5
        )
    return sorted(answer.topics[0].partitions[0].isr_nodes)


def _create(admin: AdminClient, topic: str) -> None:
    (created,) = admin.create_topics([NewTopic(topic, 1, 3)]).values()
    assert created.result(_TIMEOUT_S) is None
    eventually(lambda: len(_partition(admin, topic).isrs) == 3, f"{topic} has a full ISR")


class _Acks:
    """What the producer was told: acknowledged values and refusals by error code."""

    def __init__(self) -> None:
        self.acknowledged: dict[bytes, int] = {}
        self.refused: list[int] = []

    def __call__(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.acknowledged[msg.value()] = msg.offset()
        else:
            self.refused.append(err.code())


def _produce(producer: Producer, topic: str, values: list[bytes], acks: _Acks) -> None:
    for value in values:
        producer.produce(topic, value=value, on_delivery=acks)
        producer.poll(0)


def _read_all(bootstrap: str, topic: str, at_least: int) -> dict[int, bytes]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    read: dict[int, bytes] = {}

    def enough() -> bool:
        for msg in consumer.consume(1000, timeout=0.5):
            assert msg.error() is None, msg.error()
            read[msg.offset()] = msg.value()
        return len(read) >= at_least

    try:
        eventually(enough, f"{at_least} records of {topic} read back", 60)
    finally:
        consumer.close()
    return read


def _check_nothing_acknowledged_lost(read: dict[int, bytes], acks: _Acks) -> None:
    assert sorted(read) == list(range(len(read))), "a gap in the offsets read back"
    for value, offset in acks.acknowledged.items():
        assert read.get(offset) == value, f"acknowledged {value!r} at {offset}, read {read.get(offset)!r}"


def test_kill_9_of_the_leader_loses_no_acknowledged_record(
    cluster: LocalCluster, bootstrap: str
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "kill-leader"
    _create(admin, topic)
    old_leader = _partition(admin, topic).leader
    acks = _Acks()
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
        "message.timeout.ms": 60_000, "max.in.flight.requests.per.connection": 1,
    })
    _produce(producer, topic, [b"before-%05d" % i for i in range(2000)], acks)
    cluster.kill(old_leader)  # SIGKILL with records in flight
    _produce(producer, topic, [b"during-%05d" % i for i in range(2000)], acks)
    assert producer.flush(90) == 0
    assert acks.refused == [], acks.refused[:5]
    assert len(acks.acknowledged) == 4000
    new_leader = _partition(admin, topic).leader
    assert new_leader not in (old_leader, -1)
    cluster.start_node(old_leader)
    eventually(lambda: len(_partition(admin, topic).isrs) == 3, "the old leader rejoins the ISR",
               _ISR_CHANGE_S)
    read = _read_all(bootstrap, topic, len(acks.acknowledged))
    _check_nothing_acknowledged_lost(read, acks)


def test_a_paused_follower_leaves_the_isr_and_rejoins(cluster: LocalCluster, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "pause-follower"
    _create(admin, topic)
    partition = _partition(admin, topic)
    follower = next(r for r in partition.replicas if r != partition.leader)
    acks = _Acks()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    cluster.pause(follower)
    try:
        # asked of the leader: a client's metadata request may go to the paused broker
        eventually(lambda: follower not in _isr_seen_by(cluster, partition.leader, topic),
                   f"broker {follower} leaves the ISR", _ISR_CHANGE_S)
        _produce(producer, topic, [b"two-%05d" % i for i in range(1000)], acks)
        assert producer.flush(60) == 0
        assert acks.refused == [] and len(acks.acknowledged) == 1000
    finally:
        cluster.resume(follower)
    eventually(lambda: follower in _partition(admin, topic).isrs,
               f"broker {follower} rejoins the ISR", _ISR_CHANGE_S)
    _check_nothing_acknowledged_lost(_read_all(bootstrap, topic, 1000), acks)


def test_below_min_isr_acks_all_is_refused_and_nothing_is_lost(
    cluster: LocalCluster, bootstrap: str
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "below-min-isr"
    _create(admin, topic)
    partition = _partition(admin, topic)
    leader = partition.leader
    followers = [r for r in partition.replicas if r != leader]
    acks = _Acks()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    _produce(producer, topic, [b"full-%05d" % i for i in range(500)], acks)
    assert producer.flush(60) == 0 and len(acks.acknowledged) == 500
    for follower in followers:
        cluster.pause(follower)
    try:
        eventually(lambda: _isr_seen_by(cluster, leader, topic) == [leader],
                   "the ISR shrinks to the leader", _ISR_CHANGE_S)
        host, port = cluster.address(leader)
        refusing = Producer({
            "bootstrap.servers": f"{host}:{port}", "acks": "all", "message.timeout.ms": 3000,
        })
        refused = _Acks()
        _produce(refusing, topic, [b"refused-%05d" % i for i in range(20)], refused)
        refusing.flush(30)
        assert refused.acknowledged == {}, "acks=all acknowledged below min.insync.replicas"
        assert set(refused.refused) <= {
            KafkaError.NOT_ENOUGH_REPLICAS, KafkaError._MSG_TIMED_OUT
        }, refused.refused
        assert refused.refused
    finally:
        for follower in followers:
            cluster.resume(follower)
    eventually(lambda: len(_partition(admin, topic).isrs) == 3, "the ISR is full again",
               _ISR_CHANGE_S)
    _produce(producer, topic, [b"again-%05d" % i for i in range(500)], acks)
    assert producer.flush(60) == 0 and len(acks.acknowledged) == 1000
    read = _read_all(bootstrap, topic, 1000)
    _check_nothing_acknowledged_lost(read, acks)
    # refused before the append (not NOT_ENOUGH_REPLICAS_AFTER_APPEND): never in the log
    assert not [v for v in read.values() if v.startswith(b"refused")]


def test_a_reassignment_moves_the_data_to_the_new_replicas(
    cluster: LocalCluster, bootstrap: str, tmp_path: Path
) -> None:
    """Replicas {a, b} -> {b, c}: c copies the log from the leader, joins the ISR, the
    reassignment completes, and with a (the replica removed) stopped every record is read
    from the new replicas alone."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "reassigned"
    a, b, c = cluster.broker_ids
    (created,) = admin.create_topics(
        [NewTopic(topic, 1, replica_assignment=[[a, b]])]
    ).values()
    assert created.result(_TIMEOUT_S) is None
    eventually(lambda: len(_partition(admin, topic).isrs) == 2, f"{topic} has a full ISR")
    acks = _Acks()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    _produce(producer, topic, [b"moved-%05d" % i for i in range(3000)], acks)
    assert producer.flush(60) == 0 and len(acks.acknowledged) == 3000
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [b, c]},
    ]}))
    controllers = ",".join(
        f"{host}:{port}"
        for host, port in map(cluster.address, set(cluster.node_ids) - set(cluster.broker_ids))
    )
    base = ["--bootstrap-controller", controllers, "--reassignment-json-file", str(plan)]
    executed = CliRunner().invoke(reassign_partitions, [*base, "--execute"])
    assert executed.exit_code == 0, executed.output

    def completed() -> bool:
        verified = CliRunner().invoke(reassign_partitions, [*base, "--verify"])
        return f"Reassignment of partition {topic}-0 is completed." in verified.output

    eventually(completed, "the reassignment completes", _ISR_CHANGE_S)
    eventually(lambda: sorted(_partition(admin, topic).replicas) == sorted([b, c]),
               "every broker's metadata shows the new replicas")
    cluster.stop(a)
    try:
        read = _read_all(bootstrap, topic, 3000)
    finally:
        cluster.start_node(a)
    _check_nothing_acknowledged_lost(read, acks)
