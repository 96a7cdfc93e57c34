"""The group driver loads an offsets partition as soon as the replica driver says it applied
the assignment that made this broker its leader, not at its next backstop poll, and unloads
it as soon as the leadership goes. The replica side is a stand-in: the driver's own loop,
clock and coordinator are real."""

from __future__ import annotations

import time
from typing import Any

import attrs
import trio

from broker.group.coordinator import GroupCoordinator
from broker.group.driver import GroupDriver
from broker.group.output import CoordinatorOutput
from tests.unit.broker.group.harness import TEST_CONFIG

TOPIC = "__consumer_offsets"
# far beyond the test's deadline: only the notification can explain a prompt load
BACKSTOP_MS = 600_000
DEADLINE_S = 5.0


@attrs.define
class _Partition:
    index: int
    is_leader: bool = False
    leader_epoch: int = 0
    has_log: bool = False  # a new leader with nothing written yet: nothing to replay


@attrs.define
class _Hosted:
    by_index: dict[int, _Partition]

    def by_name(self, topic: str, index: int) -> _Partition | None:
        return self.by_index.get(index) if topic == TOPIC else None


class _Replicas:
    """What the group driver asks of the replica driver: the hosted partitions and the
    applied-changes notification."""

    def __init__(self, partitions: int) -> None:
        self.core = attrs.make_class("Core", ["partitions"])(
            _Hosted({i: _Partition(i) for i in range(partitions)}))
        self.listeners: list[Any] = []

    def on_applied(self, listener: Any) -> None:
        self.listeners.append(listener)

    def applied(self) -> None:
        for listener in self.listeners:
            listener()


@attrs.frozen
class _Topic:
    partitions: tuple[int, ...]


@attrs.frozen
class _Image:
    offsets: _Topic

    def topic(self, name: str) -> _Topic | None:
        return self.offsets if name == TOPIC else None


class _Recording(GroupCoordinator):
    def __init__(self) -> None:
        super().__init__(TEST_CONFIG)
        self.events: list[tuple[str, int]] = []

    def finish_load(self, partition: int, *, now_ms: int) -> CoordinatorOutput:
        self.events.append(("loaded", partition))
        return super().finish_load(partition, now_ms=now_ms)

    def unload(self, partition: int, *, now_ms: int) -> CoordinatorOutput:
        self.events.append(("unloaded", partition))
        return super().unload(partition, now_ms=now_ms)


async def _settled() -> None:
    """Until the driver waits again (for its backstop, far off): whatever the notification
    set off is done."""
    with trio.fail_after(DEADLINE_S):
        await trio.testing.wait_all_tasks_blocked()


async def test_a_leadership_applied_is_loaded_at_once_and_a_lost_one_unloaded() -> None:
    replicas = _Replicas(partitions=3)
    coordinator = _Recording()
    driver = GroupDriver(
        coordinator, replicas=replicas,  # type: ignore[arg-type]
        image=lambda: _Image(_Topic((0, 1, 2))),  # type: ignore[arg-type,return-value]
        clock_ms=lambda: int(time.time() * 1000), commit_timeout_ms=5_000,
        watch_interval_ms=BACKSTOP_MS,
    )
    assert replicas.listeners == [driver.notify]
    async with trio.open_nursery() as nursery:
        await nursery.start(driver.run)
        await trio.testing.wait_all_tasks_blocked()
        assert coordinator.events == []  # leads nothing yet

        partition = replicas.core.partitions.by_index[1]
        partition.is_leader, partition.leader_epoch = True, 4
        replicas.applied()
        await _settled()
        assert coordinator.events == [("loaded", 1)]

        # led again in a new epoch: unloaded, then loaded again
        partition.leader_epoch = 5
        replicas.applied()
        await _settled()
        assert coordinator.events == [("loaded", 1), ("unloaded", 1), ("loaded", 1)]

        partition.is_leader = False
        replicas.applied()
        await _settled()
        assert coordinator.events[-1] == ("unloaded", 1)
        nursery.cancel_scope.cancel()
