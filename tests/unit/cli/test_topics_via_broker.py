"""``kraft topics --bootstrap-server`` end to end against an in-process controller and broker:
every action works through the broker, and what it prints is what ``--bootstrap-controller``
prints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trio
from click.testing import CliRunner, Result

from broker import BrokerNode
from cli.topics import topics
from quorum.controller.image import MetadataImage
from quorum.node import ControllerNode
from tests.unit.broker.test_broker_node import running_controller_and_broker

DEADLINE_S = 20


async def kraft_topics(*args: str) -> Result:
    """The click command with its own trio.run, in a worker thread (one at a time)."""
    return await trio.to_thread.run_sync(CliRunner().invoke, topics, list(args))


async def broker_image_until(
    broker: BrokerNode, predicate: Callable[[MetadataImage], bool]
) -> None:
    """Until the broker's image (what ``--describe`` through it reads) satisfies ``predicate``."""
    while not predicate(broker.image):
        await broker.wait_changed()


def partition_count(name: str) -> Callable[[MetadataImage], int | None]:
    def count(image: MetadataImage) -> int | None:
        topic = image.topic(name)
        return None if topic is None else len(topic.partitions)

    return count


async def same_in_both_modes(
    server: list[str], controller: list[str], *args: str
) -> Result:
    """Run ``args`` through the broker and through the controllers; both print the same."""
    through_broker = await kraft_topics(*server, *args)
    through_controller = await kraft_topics(*controller, *args)
    assert (through_broker.exit_code, through_broker.stdout, through_broker.stderr) == (
        through_controller.exit_code, through_controller.stdout, through_controller.stderr
    ), args
    return through_broker


async def check_every_action(
    controller: ControllerNode, broker: BrokerNode
) -> None:
    assert controller.address is not None and broker.address is not None
    server = ["--bootstrap-server", f"{broker.address.host}:{broker.address.port}"]
    quorum = ["--bootstrap-controller", f"{controller.address.host}:{controller.address.port}"]
    created = await kraft_topics(*server, "--create", "--topic", "orders", "--partitions", "3",
                                 "--replication-factor", "1", "--config", "retention.ms=1000")
    assert (created.exit_code, created.stdout) == (0, "Created topic orders.\n"), created.output
    await broker_image_until(broker, lambda i: partition_count("orders")(i) == 3)
    described = await same_in_both_modes(server, quorum, "--describe", "--topic", "orders")
    lines = described.stdout.splitlines()
    assert len(lines) == 4 and "PartitionCount: 3" in lines[0] and "retention.ms=1000" in lines[0]
    assert all("Leader: none" not in line for line in lines[1:])

    twice = await same_in_both_modes(server, quorum, "--create", "--topic", "orders")
    assert twice.exit_code == 1 and "TOPIC_ALREADY_EXISTS" in twice.stdout
    quiet = await kraft_topics(*server, "--create", "--topic", "orders", "--if-not-exists")
    assert (quiet.exit_code, quiet.output) == (0, "")
    missing = await same_in_both_modes(server, quorum, "--describe", "--topic", "nothing")
    assert missing.exit_code == 1 and "does not exist" in missing.stdout

    altered = await kraft_topics(*server, "--alter", "--topic", "orders", "--partitions", "5")
    assert altered.exit_code == 0, altered.output
    await broker_image_until(broker, lambda i: partition_count("orders")(i) == 5)
    described = await same_in_both_modes(server, quorum, "--describe")
    assert len(described.stdout.splitlines()) == 6
    shrink = await same_in_both_modes(server, quorum, "--alter", "--topic", "orders",
                                      "--partitions", "2")
    assert shrink.exit_code == 1 and "INVALID_PARTITIONS" in shrink.stdout

    listed = await same_in_both_modes(server, quorum, "--list")
    assert listed.stdout == "orders\n"
    deleted = await kraft_topics(*server, "--delete", "--topic", "orders")
    assert deleted.exit_code == 0, deleted.output
    await broker_image_until(broker, lambda i: i.topic("orders") is None)
    listed = await same_in_both_modes(server, quorum, "--list")
    assert (listed.exit_code, listed.stdout) == (0, "")


async def test_every_action_through_a_broker_prints_what_it_prints_through_the_controllers(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_controller_and_broker(tmp_path) as (controller, broker):
            await check_every_action(controller, broker)
