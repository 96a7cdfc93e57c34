"""Consumer groups and idempotent producers: three scenarios written once, run by every client.

Each client's module adapts its client to ``Client`` (an idempotent acks=all producer; a
consumer subscribed through a group, auto commit off, reading from the earliest offset) and
runs the scenarios on its module's cluster:

* ``group_shares_commits_resumes_and_rebalances``: 10,000 records produced idempotently; two
  consumers of one group share the partitions; they commit, read an uncommitted tail, stop;
  two new ones resume from the committed offsets (no loss, no record below them again);
  a third joins and the group rebalances with every partition still owned.
* ``group_carries_on_after_coordinator_kill``: kill -9 of the broker coordinating the group;
  the members carry on from their committed offsets, commit to the new coordinator, and a
  new member starts where they committed.
* ``idempotent_producer_survives_leader_kill``: kill -9 of a partition leader while an
  idempotent producer sends at acks=all; every record is in the topic once, in send order.

A killed broker is started again before the scenario ends, so the module's cluster stays whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Final, Protocol

from confluent_kafka.admin import AdminClient, NewTopic

from deploy import LocalCluster
from quorum.client import BlockingKafkaConnection
from quorum.wire.messages import (
    FindCoordinatorRequest,
    MetadataRequest,
    MetadataRequestTopic,
)

from .admin_checks import eventually
from .records import COUNT, PARTITIONS, check_read_back, records

__all__ = [
    "SESSION_TIMEOUT_MS",
    "Client",
    "Consumer",
    "Producer",
    "Read",
    "group_carries_on_after_coordinator_kill",
    "group_shares_commits_resumes_and_rebalances",
    "idempotent_producer_survives_leader_kill",
]

# (partition, offset, key, value), as check_read_back takes them
Read = tuple[int, int, bytes | None, bytes | None]

# Consumers' session timeout and heartbeat: short (the test profile's group minimum is 1 s)
# so that a rebalance or a coordinator's failover takes seconds, not Kafka's 45.
SESSION_TIMEOUT_MS: Final = 6000
HEARTBEAT_INTERVAL_MS: Final = 500

_GROUP_S: Final = 60.0  # a group forms / reads what it should within this
_RECOVERY_S: Final = 60.0  # a killed broker is replaced, or comes back whole, within this
_POLL_S: Final = 0.2
_REQUEST_S: Final = 10.0
OFFSETS_TOPIC: Final = "__consumer_offsets"


class Producer(Protocol):
    """An idempotent producer at acks=all."""

    def send(self, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        """Hand every (key, value) to the client, in order, without waiting for answers."""

    def flush(self, timeout_s: float) -> None:
        """Until every record sent has its answer."""

    def acknowledged(self) -> dict[bytes, tuple[int, int]]:
        """value -> (partition, offset) of every record acknowledged so far."""

    def failures(self) -> list[str]:
        """The errors of the records refused so far."""

    def close(self) -> None: ...


class Consumer(Protocol):
    """A group member subscribed to one topic: auto commit off, ``earliest`` reset,
    ``SESSION_TIMEOUT_MS`` / ``HEARTBEAT_INTERVAL_MS``."""

    def poll(self, timeout_s: float) -> list[Read]: ...

    def assignment(self) -> frozenset[int]:
        """The partitions the group gave this member (empty between generations)."""

    def positions(self) -> dict[int, int]:
        """The next offset to read of each assigned partition whose position is known."""

    def commit(self) -> None:
        """Commit the consumed positions synchronously; raise if the coordinator refuses."""

    def committed(self) -> dict[int, int]:
        """The group's committed offsets of the topic, asked of the coordinator
        (a partition without one is left out)."""

    def close(self) -> None:
        """Leave the group (without committing)."""


class Client(Protocol):
    name: str

    def producer(self) -> Producer: ...

    def consumer(self, group: str, topic: str) -> Consumer: ...


# -- the cluster, seen through pykraft's own wire client ------------------------------------


def _ask(cluster: LocalCluster, message: object, version: int) -> object:
    """``message`` answered by the first running broker that answers."""
    for broker in cluster.broker_ids:
        if not cluster.is_running(broker):
            continue
        host, port = cluster.address(broker)
        try:
            with BlockingKafkaConnection.connect(host, port, timeout=_REQUEST_S) as conn:
                return conn.request(message, version=version, timeout=_REQUEST_S)
        except OSError:
            continue
    raise AssertionError("no broker answered")


def _partitions(cluster: LocalCluster, topic: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, ISR) of ``topic`` in a broker's metadata image."""
    answer: object = _ask(
        cluster, MetadataRequest(topics=(MetadataRequestTopic(name=topic),),
                                 allow_auto_topic_creation=False), 9,
    )
    (found,) = answer.topics  # type: ignore[attr-defined]
    return {p.partition_index: (p.leader_id, tuple(sorted(p.isr_nodes))) for p in found.partitions}


def _leader(cluster: LocalCluster, topic: str, partition: int) -> int:
    return _partitions(cluster, topic)[partition][0]


def coordinator_of(cluster: LocalCluster, group: str) -> int:
    """The group's coordinator as the brokers name it (FindCoordinator v4)."""
    found: list[int] = []

    def answered() -> bool:
        answer: object = _ask(cluster, FindCoordinatorRequest(coordinator_keys=(group,)), 4)
        (coordinator,) = answer.coordinators  # type: ignore[attr-defined]
        if coordinator.error_code == 0:
            found.append(coordinator.node_id)
        return bool(found)

    eventually(answered, f"a coordinator for group {group}", _RECOVERY_S)
    return found[0]


def create_topic(cluster: LocalCluster, bootstrap: str, topic: str, partitions: int) -> None:
    """``topic`` (replication factor 3), once every partition has a leader and a full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (created,) = admin.create_topics([NewTopic(topic, partitions, 3)]).values()
    assert created.result(_REQUEST_S) is None
    _wait_whole(cluster, topic, partitions)


def _wait_whole(cluster: LocalCluster, topic: str, partitions: int | None = None) -> None:
    """Until every partition of ``topic`` (``partitions`` of them; None: as many as the
    metadata lists, none if it does not exist) has a leader and a full ISR."""
    def whole() -> bool:
        found = _partitions(cluster, topic)
        return (partitions is None or len(found) == partitions) and all(
            leader >= 0 and len(isr) == 3 for leader, isr in found.values()
        )

    eventually(whole, f"every partition of {topic} led, with a full ISR", _RECOVERY_S)


@contextmanager
def _killed(cluster: LocalCluster, broker: int, topics: Sequence[str]) -> Iterator[None]:
    """kill -9 of ``broker`` on entry; on exit it is started again and ``topics`` and
    ``__consumer_offsets`` wait for a full ISR, so that the module's next test finds the
    cluster whole (a commit needs min.insync.replicas of its offsets partition)."""
    cluster.kill(broker)
    try:
        yield
    finally:
        if not cluster.is_running(broker):
            cluster.start_node(broker)
        for topic in [*topics, OFFSETS_TOPIC]:
            _wait_whole(cluster, topic)


# -- what the scenarios check -----------------------------------------------------------------


class Reads:
    """Records read, by (partition, offset); reading one twice must give the same record."""

    def __init__(self) -> None:
        self.found: dict[tuple[int, int], tuple[bytes | None, bytes | None]] = {}

    def add(self, reads: Sequence[Read], *, at_least: dict[int, int] | None = None) -> None:
        for partition, offset, key, value in reads:
            if at_least is not None:
                assert offset >= at_least.get(partition, 0), (
                    f"partition {partition} read at {offset}, below its committed offset "
                    f"{at_least.get(partition, 0)}"
                )
            earlier = self.found.setdefault((partition, offset), (key, value))
            assert earlier == (key, value), (partition, offset, earlier, (key, value))

    def listed(self) -> list[Read]:
        return [(p, o, k, v) for (p, o), (k, v) in sorted(self.found.items())]


def _ends(acknowledged: dict[bytes, tuple[int, int]], values: Sequence[bytes]) -> dict[int, int]:
    """partition -> the offset after the last of ``values`` written there."""
    ends: dict[int, int] = {}
    for value in values:
        partition, offset = acknowledged[value]
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    return ends


def _shared(consumers: Sequence[Consumer], partitions: int) -> bool:
    """Each member owns a non-empty part; the parts are disjoint and own every partition."""
    parts = [c.assignment() for c in consumers]
    owned = [p for part in parts for p in part]
    return all(parts) and len(owned) == len(set(owned)) and set(owned) == set(range(partitions))


def _caught_up(consumers: Sequence[Consumer], ends: dict[int, int]) -> bool:
    """Every member's position of each of its partitions is at ``ends``."""
    for consumer in consumers:
        positions = consumer.positions()
        if any(positions.get(p) != ends.get(p, 0) for p in consumer.assignment()):
            return False
    return True


def _poll_until(
    consumers: Sequence[Consumer], reads: Reads, done: Callable[[], bool], what: str,
    *, at_least: dict[int, int] | None = None, timeout_s: float = _GROUP_S,
) -> None:
    def polled() -> bool:
        for consumer in consumers:
            reads.add(consumer.poll(_POLL_S), at_least=at_least)
        if not done():
            return False
        # what a client read before it answered ``done`` (a consumer that reads on a thread
        # of its own) is checked too
        for consumer in consumers:
            reads.add(consumer.poll(0), at_least=at_least)
        return True

    try:
        eventually(polled, what, timeout_s)
    except AssertionError as error:
        raise AssertionError(f"{error}; members now: {_describe(consumers)}") from None


def _describe(consumers: Sequence[Consumer]) -> str:
    return "; ".join(
        f"assigned {sorted(c.assignment())} at {c.positions()}" for c in consumers
    )


def _produce(producer: Producer, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> None:
    producer.send(topic, pairs)
    producer.flush(_GROUP_S)
    assert producer.failures() == [], producer.failures()[:5]
    acknowledged = producer.acknowledged()
    assert all(value in acknowledged for _, value in pairs), "a record without its answer"


def _settle_and_commit(
    consumers: Sequence[Consumer], reads: Reads, ends: dict[int, int], what: str,
    *, at_least: dict[int, int] | None = None, retry: bool = False,
    timeout_s: float = _GROUP_S,
) -> None:
    """Poll until the members share the partitions and each reached ``ends`` on its own,
    then commit on each. ``retry``: a refused commit (the group moving to a new coordinator
    or generation) polls on and commits again; otherwise it fails the test."""
    errors: list[str] = []

    def committed() -> bool:
        for consumer in consumers:
            reads.add(consumer.poll(_POLL_S), at_least=at_least)
        if not (_shared(consumers, PARTITIONS) and _caught_up(consumers, ends)):
            return False
        try:
            for consumer in consumers:
                consumer.commit()
        except Exception as error:  # each client has exception types of its own
            if not retry:
                raise
            errors.append(repr(error))
            return False
        for consumer in consumers:
            reads.add(consumer.poll(0), at_least=at_least)
        return True

    try:
        eventually(committed, what, timeout_s)
    except AssertionError as error:
        raise AssertionError(
            f"{error}; members now: {_describe(consumers)}; refused commits: {errors[-3:]}"
        ) from None


# -- the scenarios ----------------------------------------------------------------------------


def group_shares_commits_resumes_and_rebalances(
    client: Client, cluster: LocalCluster, bootstrap: str
) -> None:
    topic = group = f"{client.name}-group"
    create_topic(cluster, bootstrap, topic, PARTITIONS)
    sent = records(topic, COUNT)
    first, second = sent[: COUNT // 2], sent[COUNT // 2 :]
    producer = client.producer()
    try:
        _produce(producer, topic, first)
        ends1 = _ends(producer.acknowledged(), [v for _, v in first])
        # two members share the partitions, read the first half and commit it
        with ExitStack() as stack:
            pair = _members(stack, client, group, topic, 2)
            before = Reads()
            _settle_and_commit(pair, before, ends1,
                               "two members share the partitions, read the first half, commit")
            assert pair[0].committed() == ends1
            check_read_back(first, before.listed(), producer.acknowledged())
            # the second half arrives; what they read of it now is never committed
            _produce(producer, topic, second)
            _poll_until(pair, before, lambda: len(before.found) > len(first),
                        "the members read past their commit")
        # both stopped; two new members resume from the committed offsets
        ends2 = _ends(producer.acknowledged(), [v for _, v in sent])
        with ExitStack() as stack:
            pair = _members(stack, client, group, topic, 2)
            after = Reads()
            _settle_and_commit(pair, after, ends2,
                               "two new members share the partitions, read the rest, commit",
                               at_least=ends1)
            assert pair[0].committed() == ends2
            check_read_back(second, after.listed(), producer.acknowledged())
            # a third member joins: the parts change, every partition is still owned, and
            # each member goes on from the committed offsets (nothing is read again)
            parts_of_two = {consumer.assignment() for consumer in pair}
            trio = [*pair, *_members(stack, client, group, topic, 1)]
            again = Reads()
            _poll_until(trio, again, lambda: _shared(trio, PARTITIONS),
                        "three members share the partitions", at_least=ends2)
            assert {c.assignment() for c in trio} != parts_of_two
            more = records(f"{topic}-more", 300)
            _produce(producer, topic, more)
            ends3 = _ends(producer.acknowledged(), [v for _, v in [*sent, *more]])
            _poll_until(trio, again, lambda: _shared(trio, PARTITIONS) and _caught_up(trio, ends3),
                        "the three members read what came after the rebalance", at_least=ends2)
            check_read_back(more, again.listed(), producer.acknowledged())
    finally:
        producer.close()


def group_carries_on_after_coordinator_kill(
    client: Client, cluster: LocalCluster, bootstrap: str
) -> None:
    topic = group = f"{client.name}-coordinator-kill"
    create_topic(cluster, bootstrap, topic, PARTITIONS)
    sent = records(topic, 3000)
    batches = [sent[:1000], sent[1000:2000], sent[2000:]]
    producer = client.producer()
    try:
        _produce(producer, topic, batches[0])
        ends1 = _ends(producer.acknowledged(), [v for _, v in batches[0]])
        with ExitStack() as stack:
            pair = _members(stack, client, group, topic, 2)
            _settle_and_commit(pair, Reads(), ends1,
                               "two members share the partitions, read the first batch, commit")
            assert pair[0].committed() == ends1
            coordinator = coordinator_of(cluster, group)
            with _killed(cluster, coordinator, [topic]):
                started = time.monotonic()
                _produce(producer, topic, batches[1])
                ends2 = _ends(producer.acknowledged(), [v for _, v in sent[:2000]])
                # the members carry on (nobody goes back below the committed offsets) and
                # commit to the new coordinator
                after = Reads()
                _settle_and_commit(pair, after, ends2,
                                   "the members read the second batch and commit it after "
                                   "their coordinator's kill",
                                   at_least=ends1, retry=True, timeout_s=_RECOVERY_S)
                carried_on_s = time.monotonic() - started
                assert coordinator_of(cluster, group) != coordinator
                assert pair[0].committed() == ends2
                check_read_back(batches[1], after.listed(), producer.acknowledged())
                print(f"{client.name}: the group committed {carried_on_s:.1f}s after broker "
                      f"{coordinator} (its coordinator) was killed")
        # a new member starts where they committed
        _produce(producer, topic, batches[2])
        ends3 = _ends(producer.acknowledged(), [v for _, v in sent])
        with ExitStack() as stack:
            newcomer = _members(stack, client, group, topic, 1)
            last = Reads()
            _poll_until(newcomer, last,
                        lambda: _shared(newcomer, PARTITIONS) and _caught_up(newcomer, ends3),
                        "a new member reads the third batch", at_least=ends2)
            check_read_back(batches[2], last.listed(), producer.acknowledged())
    finally:
        producer.close()


def idempotent_producer_survives_leader_kill(
    client: Client, cluster: LocalCluster, bootstrap: str
) -> None:
    topic = f"{client.name}-idempotent"
    create_topic(cluster, bootstrap, topic, PARTITIONS)
    sent = records(topic, 6000)
    leader = _leader(cluster, topic, 0)
    producer = client.producer()
    try:
        # the kill comes once the first answers are in, while the rest of the first half is
        # in flight (if the client is not done already); the second half goes to a dead
        # leader, then to its successor
        producer.send(topic, sent[:3000])
        eventually(lambda: len(producer.acknowledged()) >= 500, "the first answers", _GROUP_S)
        with _killed(cluster, leader, [topic]):
            unanswered = 3000 - len(producer.acknowledged())
            producer.send(topic, sent[3000:])
            producer.flush(_RECOVERY_S)
            assert producer.failures() == [], producer.failures()[:5]
            eventually(lambda: _leader(cluster, topic, 0) not in (leader, -1),
                       f"partition 0 led by another broker than {leader}", _RECOVERY_S)
        acknowledged = producer.acknowledged()
        assert len(acknowledged) == len(sent)
        print(f"{client.name}: {unanswered} records were unanswered when broker {leader} "
              "(a partition leader) was killed")
    finally:
        producer.close()
    # read back through a group of the same client: each record once, in send order, at the
    # offset its answer gave
    ends = _ends(acknowledged, [v for _, v in sent])
    with ExitStack() as stack:
        reader = _members(stack, client, f"{topic}-reader", topic, 1)
        read = Reads()
        _poll_until(reader, read, lambda: _shared(reader, PARTITIONS) and _caught_up(reader, ends),
                    f"{len(sent)} records read back")
        check_read_back(sent, read.listed(), acknowledged)


def _members(stack: ExitStack, client: Client, group: str, topic: str, count: int) -> list[Consumer]:
    """``count`` new members of ``group``, each closed when ``stack`` closes."""
    members = []
    for _ in range(count):
        member = client.consumer(group, topic)
        stack.callback(member.close)
        members.append(member)
    return members
