"""pykraft's client library in consumer groups against a real cluster (1 controller, 2 brokers).

Two consumers share a topic's partitions, commit and close; a third resumes
from the committed offsets; a static member restarts into its old
assignment without a rebalance; the admin client lists, describes and
deletes the group and alters and deletes its offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio
from click.testing import CliRunner

from broker.client import (
    Admin,
    BlockingAdmin,
    BlockingConsumer,
    Consumer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    NewTopic,
    OffsetAndMetadata,
    Producer,
    TopicPartition,
)
from cli.console_consumer import console_consumer
from deploy import LocalCluster
from tests.integration.checks import StartCluster

TOPIC = "orders"
PARTITIONS = 4
_LIMIT_S = 20.0


def _bootstrap(cluster: LocalCluster) -> str:
    return ",".join("{}:{}".format(*cluster.address(n)) for n in cluster.broker_ids)


def _member(bootstrap: str, group: str, **extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": "false", "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "300", "max.poll.interval.ms": "10000",
        "metadata.max.age.ms": "1000", **extra,
    }


async def _produce(bootstrap: str, count: int, start: int) -> None:
    async with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(start, start + count):
            await producer.send(TOPIC, f"v{i}".encode(), partition=i % PARTITIONS)
        await producer.flush()


async def _poll_until(consumers: Sequence[Consumer], done: Callable[[], bool],
                      sink: list[ConsumerRecord] | None = None) -> None:
    """Poll every consumer in turn until ``done()`` (bounded by ``_LIMIT_S``)."""
    with trio.fail_after(_LIMIT_S):
        while not done():
            for consumer in consumers:
                records = await consumer.poll(timeout_ms=100)
                if sink is not None:
                    sink.extend(records)


def _all_partitions() -> set[TopicPartition]:
    return {TopicPartition(TOPIC, p) for p in range(PARTITIONS)}


async def _create_topic(bootstrap: str) -> None:
    async with Admin({"bootstrap.servers": bootstrap}) as admin:
        await admin.create_topics([NewTopic(name=TOPIC, num_partitions=PARTITIONS,
                                             replication_factor=2)])


async def test_two_members_share_partitions_commit_and_a_new_member_resumes(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=1, brokers=2)
    bootstrap = _bootstrap(cluster)
    await _create_topic(bootstrap)
    await _produce(bootstrap, 40, 0)

    seen: list[ConsumerRecord] = []
    # whoever joins first may read everything before the second arrives: auto-commit before
    # the rebalance gives up the partitions, so the other resumes there (no record twice)
    auto = {"enable.auto.commit": "true"}
    async with Consumer(_member(bootstrap, "billing", **auto)) as one, \
            Consumer(_member(bootstrap, "billing", **auto)) as two:
        one.subscribe([TOPIC])
        two.subscribe([TOPIC])

        def shared() -> bool:
            a, b = one.assignment(), two.assignment()
            return bool(a) and bool(b) and not a & b and a | b == _all_partitions()

        await _poll_until([one, two], lambda: shared() and len(seen) >= 40, seen)
        await one.commit()
        await two.commit()
        committed = await one.committed(sorted(_all_partitions()))
    assert sorted(r.value or b"" for r in seen) == sorted(f"v{i}".encode() for i in range(40))
    assert committed == {tp: OffsetAndMetadata(10, "", committed[tp].leader_epoch)  # type: ignore[union-attr]
                         for tp in _all_partitions()}

    await _produce(bootstrap, 20, 40)
    resumed: list[ConsumerRecord] = []
    async with Consumer(_member(bootstrap, "billing")) as three:
        three.subscribe(pattern="ord.*")
        await _poll_until([three], lambda: len(resumed) >= 20, resumed)
        assert three.assignment() == _all_partitions()
        await three.commit()
    assert sorted(r.value or b"" for r in resumed) == sorted(f"v{i}".encode() for i in range(40, 60))

    # the admin's view of the (now empty) group, its offsets, then its deletion
    async with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert "billing" in [g.group_id for g in await admin.list_groups()]
        described = (await admin.describe_groups(["billing"]))["billing"]
        assert (described.state, described.members) == ("Empty", ())
        offsets = await admin.list_group_offsets("billing")
        assert {tp: o.offset for tp, o in offsets.items()} == dict.fromkeys(_all_partitions(), 15)
        first = TopicPartition(TOPIC, 0)
        await admin.alter_group_offsets("billing", {first: 3})
        assert (await admin.list_group_offsets("billing", [first]))[first].offset == 3
        await admin.delete_group_offsets("billing", [first])
        assert first not in await admin.list_group_offsets("billing")
        await admin.delete_groups(["billing"])
        assert "billing" not in [g.group_id for g in await admin.list_groups()]


async def test_a_static_member_restarts_into_its_assignment_without_a_rebalance(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=1, brokers=2)
    bootstrap = _bootstrap(cluster)
    await _create_topic(bootstrap)
    static = {"partition.assignment.strategy": "roundrobin"}

    async with Consumer(_member(bootstrap, "static", **{"group.instance.id": "b"}, **static)) as b:
        b.subscribe([TOPIC])
        async with Consumer(_member(bootstrap, "static", **{"group.instance.id": "a"},
                                    **static)) as a:
            a.subscribe([TOPIC])

            def shared() -> bool:
                return len(a.assignment()) == 2 and len(b.assignment()) == 2

            await _poll_until([a, b], shared)
            before = a.assignment()
        # closed: a static member sends no LeaveGroup; b's generation stays as it was
        generation = b._group.core.generation  # type: ignore[union-attr]
        async with Consumer(_member(bootstrap, "static", **{"group.instance.id": "a"},
                                    **static)) as again:
            again.subscribe([TOPIC])
            await _poll_until([again, b], lambda: again.assignment() == before)
            async with Admin({"bootstrap.servers": bootstrap}) as admin:
                described = (await admin.describe_groups(["static"]))["static"]
            assert described.state == "Stable"
            assert sorted(m.group_instance_id or "" for m in described.members) == ["a", "b"]
            assert {tp for m in described.members for tp in m.assignment} == _all_partitions()
        assert b._group.core.generation == generation  # type: ignore[union-attr]


class _Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []
        self.assigned: list[set[TopicPartition]] = []
        self.lost: list[set[TopicPartition]] = []

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.revoked.append(partitions)

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.assigned.append(partitions)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.lost.append(partitions)


async def test_cooperative_members_give_up_only_what_moves_auto_commit_and_time_out(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=1, brokers=2)
    bootstrap = _bootstrap(cluster)
    await _create_topic(bootstrap)
    await _produce(bootstrap, 8, 0)
    config = _member(bootstrap, "coop", **{
        "partition.assignment.strategy": "cooperative-sticky", "enable.auto.commit": "true",
        "auto.commit.interval.ms": "200"})
    first_seen = _Recorder()
    records: list[ConsumerRecord] = []
    async with Consumer(config | {"max.poll.interval.ms": "1000"}) as first:
        first.subscribe([TOPIC], listener=first_seen)
        await _poll_until([first], lambda: len(records) >= 8, records)
        assert first.assignment() == _all_partitions()
        # auto-commit sends the positions every 200 ms while poll runs (no commit() here)
        with trio.fail_after(_LIMIT_S):
            while any(o is None or o.offset != 2
                      for o in (await first.committed(sorted(_all_partitions()))).values()):
                await first.poll(timeout_ms=100)
        async with Consumer(config) as second:
            second.subscribe([TOPIC])
            await _poll_until([first, second], lambda: len(first.assignment()) == 2
                              and len(second.assignment()) == 2)
            # one rebalance in two rounds: first gave up exactly the two that moved
            moved = _all_partitions() - first.assignment()
            assert first_seen.revoked == [moved]
            assert moved == second.assignment()
            # first stops polling past its max.poll.interval.ms: it leaves the group, second
            # takes every partition, and first's next poll finds its own two lost
            kept = first.assignment()
            await _poll_until([second], lambda: second.assignment() == _all_partitions())
            await _poll_until([first], lambda: bool(first_seen.lost))
            assert first_seen.lost == [kept]
    assert first_seen.assigned[0] == _all_partitions()
    assert sorted(r.value or b"" for r in records) == sorted(f"v{i}".encode() for i in range(8))



def test_the_console_consumer_reads_as_a_group_member_and_resumes_where_it_stopped(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=1, brokers=2)
    bootstrap = _bootstrap(cluster)

    async def prepare() -> None:
        await _create_topic(bootstrap)
        await _produce(bootstrap, 8, 0)

    trio.run(prepare)
    args = ["--bootstrap-server", bootstrap, "--topic", TOPIC, "--group", "console",
            "--from-beginning", "--timeout-ms", "10000"]
    first = CliRunner().invoke(console_consumer, [*args, "--max-messages", "6"])
    assert first.exit_code == 0, first.output
    printed = first.stdout.split()
    assert len(printed) == 6
    # closing committed what it printed: the same group goes on with the other two only
    second = CliRunner().invoke(console_consumer, [*args, "--max-messages", "2"])
    assert second.exit_code == 0, second.output
    assert sorted(printed + second.stdout.split()) == sorted(f"v{i}" for i in range(8))
    # the blocking front-ends see the same group: 8 records committed over the partitions
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        offsets = admin.list_group_offsets("console")
        assert sum(o.offset for o in offsets.values()) == 8
        assert admin.describe_groups(["console"])["console"].state == "Empty"
    with BlockingConsumer(_member(bootstrap, "console")) as consumer:
        assert consumer.committed(sorted(offsets)) == offsets
