"""``kraft consumer-groups`` against a real cluster (1 controller, 2 brokers).

A member of group ``billing`` reads a two-partition topic and commits part
of it; the tool lists the group and describes its lag, members and state,
refuses to reset its offsets or delete the offsets of its subscribed topic
while it has a member; after the member leaves it resets the offsets to the
earliest (a dry run first), deletes one partition's offset, then the group.
"""

from __future__ import annotations

import time

import trio
from click.testing import CliRunner, Result

from broker.client import (
    Admin,
    BlockingAdmin,
    BlockingConsumer,
    NewTopic,
    Producer,
    TopicPartition,
)
from cli.consumer_groups import consumer_groups
from deploy import LocalCluster
from tests.integration.checks import StartCluster

TOPIC = "orders"
GROUP = "billing"
_LIMIT_S = 15.0


def _bootstrap(cluster: LocalCluster) -> str:
    return ",".join("{}:{}".format(*cluster.address(n)) for n in cluster.broker_ids)


async def _prepare(bootstrap: str) -> None:
    async with Admin({"bootstrap.servers": bootstrap}) as admin:
        await admin.create_topics([NewTopic(name=TOPIC, num_partitions=2, replication_factor=2)])
    async with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(10):
            await producer.send(TOPIC, f"v{i}".encode(), partition=i % 2)
        await producer.flush()


def _member(bootstrap: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "biller",
        "auto.offset.reset": "earliest", "enable.auto.commit": "false",
        "session.timeout.ms": "6000", "heartbeat.interval.ms": "300",
    }


def _rows(result: Result) -> list[list[str]]:
    """The table's rows (header first), split on whitespace."""
    return [line.split() for line in result.stdout.splitlines() if line.strip()]


def test_the_tool_lists_describes_resets_and_deletes_a_group(start_cluster: StartCluster) -> None:
    cluster = start_cluster(controllers=1, brokers=2)
    bootstrap = _bootstrap(cluster)
    trio.run(_prepare, bootstrap)
    p0, p1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)

    def tool(*args: str) -> Result:
        return CliRunner().invoke(consumer_groups, ["--bootstrap-server", bootstrap, *args])

    with BlockingConsumer(_member(bootstrap)) as consumer:
        consumer.subscribe([TOPIC])
        deadline, read = time.monotonic() + _LIMIT_S, 0
        while read < 10 and time.monotonic() < deadline:
            read += len(consumer.poll(timeout_ms=200))
        assert read == 10 and consumer.assignment() == {p0, p1}
        consumer.commit({p0: 2, p1: 3})

        listed = tool("--list")
        assert (listed.exit_code, listed.stdout) == (0, f"{GROUP}\n"), listed.output
        assert _rows(tool("--list", "--state", "stable", "--type")) == [
            ["GROUP", "TYPE", "STATE"], [GROUP, "Classic", "Stable"]]
        assert _rows(tool("--list", "--state", "empty")) == [["GROUP", "STATE"]]
        described = tool("--describe", "--group", GROUP)
        assert described.exit_code == 0, described.output
        header, *rows = _rows(described)
        assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                          "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        assert [r[:6] for r in rows] == [[GROUP, TOPIC, "0", "2", "5", "3"],
                                         [GROUP, TOPIC, "1", "3", "5", "2"]]
        assert all(r[6].startswith("biller-") and r[8] == "biller" for r in rows)

        members = tool("--describe", "--group", GROUP, "--members", "--verbose")
        assert _rows(members)[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                     "ASSIGNMENT"]
        [member] = _rows(members)[1:]
        assert (member[0], member[3:]) == (GROUP, ["biller", "2", "orders(0,1)"])
        state = tool("--describe", "--group", GROUP, "--state")
        assert _rows(state)[1][-3:] == ["range", "Stable", "1"], state.output

        refused = tool("--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
                       "--execute")
        assert refused.exit_code == 1
        assert (f"Error: Assignments can only be reset if the group '{GROUP}' is inactive, but "
                "the current state is Stable.") in refused.stdout
        subscribed = tool("--delete-offsets", "--group", GROUP, "--topic", TOPIC)
        assert subscribed.exit_code == 1
        assert "Encounter some partition level error" in subscribed.stdout
        assert "GROUP_SUBSCRIBED_TO_TOPIC" in subscribed.stdout

    # the member left: its partitions are shown without a consumer
    empty = tool("--describe", "--group", GROUP)
    assert f"Consumer group '{GROUP}' has no active members." in empty.stderr
    assert [r[:7] for r in _rows(empty)[1:]] == [[GROUP, TOPIC, "0", "2", "5", "3", "-"],
                                                 [GROUP, TOPIC, "1", "3", "5", "2", "-"]]

    planned = tool("--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest")
    assert planned.exit_code == 0, planned.output
    assert "No action will be performed as the --execute option is missing" in planned.stderr
    assert _rows(planned) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                              [GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]
    shifted = tool("--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--shift-by", "3",
                   "--dry-run")
    assert _rows(shifted)[1:] == [[GROUP, TOPIC, "0", "5"], [GROUP, TOPIC, "1", "5"]]
    assert ("New offset (6) is higher than latest offset for topic partition orders-1. Value "
            "will be set to 5") in shifted.stderr
    future = tool("--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1", "--to-datetime",
                  "2999-01-01T00:00:00.000", "--dry-run")
    assert "Warn: Partition 1 from topic orders is empty. Falling back to latest known offset." \
        in future.stdout
    assert _rows(future)[-1] == [GROUP, TOPIC, "1", "5"]
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        assert {tp: o.offset for tp, o in admin.list_group_offsets(GROUP).items()} == {
            p0: 2, p1: 3}
        executed = tool("--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest",
                        "--execute")
        assert executed.exit_code == 0 and "WARN" not in executed.stderr, executed.output
        assert {tp: o.offset for tp, o in admin.list_group_offsets(GROUP).items()} == {
            p0: 0, p1: 0}

        deleted_offset = tool("--delete-offsets", "--group", GROUP, "--topic", f"{TOPIC}:0")
        assert deleted_offset.exit_code == 0, deleted_offset.output
        assert _rows(deleted_offset) == [
            ["Request", "succeed", "for", "deleting", "offsets", "with", "topic", "orders:0",
             "group", GROUP],
            ["TOPIC", "PARTITION", "STATUS"], [TOPIC, "0", "Successful"]]
        assert set(admin.list_group_offsets(GROUP)) == {p1}

    deleted = tool("--delete", "--group", GROUP)
    assert deleted.stdout == f"Deletion of requested consumer groups ('{GROUP}') was successful.\n"
    assert tool("--list").stdout == ""
    gone = tool("--describe", "--group", GROUP)
    assert gone.exit_code == 1 and f"Error: Consumer group '{GROUP}' does not exist." in gone.stdout
