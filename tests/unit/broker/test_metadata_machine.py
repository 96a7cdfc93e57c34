"""The broker's metadata machine: committed ranges folded into the image, snapshots
loaded and written, assignments handed to the replica manager, nothing proposed."""

from __future__ import annotations

import random
from typing import cast

import pytest
import trio

from broker.metadata_machine import BrokerMetadataMachine
from broker.replica.manager import PartitionRole, RecordingReplicaManager
from quorum.controller.digest import image_digest
from quorum.controller.image import MetadataImage
from quorum.controller.log_records import read_committed_range
from quorum.controller.snapshot import read_snapshot, write_snapshot
from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.node.inputs import ControllerCall
from quorum.raft import LeaderAndEpoch, OffsetRange, RaftCore, Ready
from quorum.raft.snapshots import snapshot_timestamp_ms
from quorum.wire.messages import CreateTopicsRequest
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.node.machines import observe_and_work as observe

from .records import append_records, change, fold, metadata_version, partition, register, topic

BROKER = 4
FIRST: list[MetadataRecord] = [metadata_version(), register(BROKER, 1), register(5, 2), topic("orders")]
SECOND: list[MetadataRecord] = [partition("orders", 0, [4, 5]), partition("orders", 1, [5, 4])]
THIRD: list[MetadataRecord] = [change("orders", 1, leader=4)]


def observer_core(log: MemoryLog) -> RaftCore:
    """A broker's core: node 4 observes a quorum of voters 1-3."""
    return RaftCore(
        node_id=BROKER, voters=[1, 2, 3], log=log, cluster_id="cluster",
        rng=random.Random(0), now_ms=0,
    )


def snapshot_of(records: list[MetadataRecord]) -> bytes:
    return write_snapshot(fold(records), last_contained_timestamp_ms=0)


def ready(committed: OffsetRange | None = None, **more: object) -> Ready:
    return Ready(
        leader=LeaderAndEpoch(1, 3), role="Follower", committed=committed, **more  # type: ignore[arg-type]
    )


def a_log(*batches: list[MetadataRecord], epoch: int = 3) -> MemoryLog:
    log = MemoryLog()
    for records in batches:
        append_records(log, records, epoch=epoch)
    return log


def test_committed_ranges_fold_into_the_image_the_controllers_build() -> None:
    log = a_log(FIRST, SECOND, THIRD)
    core = observer_core(log)
    manager = RecordingReplicaManager()
    machine = BrokerMetadataMachine(broker_id=BROKER, replica_manager=manager)
    seen: list[tuple[int, int]] = []
    machine.subscribe(lambda old, new: seen.append((old.provenance.offset, new.provenance.offset)))
    changed = machine.changed
    observe(machine, ready(OffsetRange(0, 4)), core, 0)
    assert changed.is_set() and machine.changed is not changed
    observe(machine, ready(OffsetRange(4, 7)), core, 0)
    assert seen == [(0, 4), (4, 7)]
    assert (machine.image_offset, machine.image.provenance.epoch) == (7, 3)
    assert image_digest(machine.image) == image_digest(fold([*FIRST, *SECOND, *THIRD]))
    roles = {(a.partition, a.role, a.leader_epoch) for a in manager.table.values()}
    assert roles == {(0, PartitionRole.LEADER, 0), (1, PartitionRole.LEADER, 1)}
    assert dict(machine.assignments) == dict(manager.table)


def test_records_the_image_already_holds_are_not_replayed_again() -> None:
    log = a_log(FIRST, SECOND)
    core = observer_core(log)
    machine = BrokerMetadataMachine(broker_id=BROKER)
    observe(machine, ready(OffsetRange(0, 6)), core, 0)
    image = machine.image
    observe(machine, ready(OffsetRange(2, 6)), core, 0)
    assert machine.image is image


def test_a_loaded_snapshot_replaces_the_image_and_later_ranges_continue_from_it() -> None:
    log = a_log(FIRST, SECOND, THIRD)
    snapshot_id = OffsetAndEpoch(6, 3)
    log.create_snapshot(snapshot_id, snapshot_of([*FIRST, *SECOND]))
    core = observer_core(log)
    machine = BrokerMetadataMachine(broker_id=BROKER)
    observe(machine, ready(loaded_snapshot=snapshot_id), core, 0)
    assert machine.image_offset == 6
    assert len(machine.assignments) == 2
    observe(machine, ready(OffsetRange(0, 7)), core, 0)
    assert machine.image_offset == 7
    assert image_digest(machine.image) == image_digest(fold([*FIRST, *SECOND, *THIRD]))


def test_a_snapshot_the_core_names_is_loaded_before_the_committed_range() -> None:
    log = a_log(FIRST, SECOND, THIRD)
    snapshot_id = OffsetAndEpoch(6, 3)
    log.create_snapshot(snapshot_id, snapshot_of([*FIRST, *SECOND]))
    machine = BrokerMetadataMachine(broker_id=BROKER)
    observe(machine, ready(OffsetRange(6, 7), loaded_snapshot=snapshot_id), observer_core(log), 0)
    assert machine.image_offset == 7
    assert image_digest(machine.image) == image_digest(fold([*FIRST, *SECOND, *THIRD]))


def test_a_restarted_broker_starts_from_the_snapshot_its_log_begins_with() -> None:
    log = a_log(FIRST, SECOND)
    snapshot_id = OffsetAndEpoch(6, 3)
    log.create_snapshot(snapshot_id, snapshot_of([*FIRST, *SECOND]))
    append_records(log, THIRD, epoch=3)
    assert log.delete_before(snapshot_id) and log.log_start_offset == 6
    core = observer_core(log)
    machine = BrokerMetadataMachine(broker_id=BROKER)
    # the core's first Ready names the snapshot, as the driver hands it over
    observe(machine, core.poll(0), core, 0)
    assert (machine.image_offset, len(machine.assignments)) == (6, 2)
    assert image_digest(machine.image) == image_digest(fold([*FIRST, *SECOND]))


class CommittedCore:
    """What the machine uses of a core whose high watermark passed every record: the log
    and ``create_snapshot`` (the real core refuses ids above what it committed)."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> bool:
        return self.log.create_snapshot(snapshot_id, data)


def test_the_broker_writes_its_own_snapshot_after_n_bytes_of_replayed_log() -> None:
    log = a_log(FIRST, SECOND, THIRD)
    core = cast(RaftCore, CommittedCore(log))
    first_batch = read_committed_range(log, 0, 4).size_bytes
    machine = BrokerMetadataMachine(broker_id=BROKER, snapshot_max_bytes=first_batch + 1)
    observe(machine, ready(OffsetRange(0, 4)), core, 0)
    assert log.latest_snapshot_id is None
    observe(machine, ready(OffsetRange(4, 6)), core, 0)
    assert log.latest_snapshot_id == OffsetAndEpoch(6, 3)
    stored = read_snapshot(log.read_snapshot(OffsetAndEpoch(6, 3)), OffsetAndEpoch(6, 3))
    assert image_digest(stored) == image_digest(machine.image)
    observe(machine, ready(OffsetRange(6, 7)), core, 0)
    assert log.snapshot_ids() == [OffsetAndEpoch(6, 3)]


def test_the_broker_snapshots_when_records_arrive_after_the_interval() -> None:
    log = a_log(FIRST, SECOND, THIRD)
    core = cast(RaftCore, CommittedCore(log))
    machine = BrokerMetadataMachine(
        broker_id=BROKER, snapshot_max_bytes=10**9, snapshot_max_interval_ms=1_000
    )
    observe(machine, ready(OffsetRange(0, 4)), core, 10_000)
    observe(machine, ready(OffsetRange(4, 6)), core, 10_999)
    assert log.latest_snapshot_id is None
    observe(machine, ready(OffsetRange(6, 7)), core, 11_000)
    assert log.snapshot_ids() == [OffsetAndEpoch(7, 3)]
    assert image_digest(
        read_snapshot(log.read_snapshot(OffsetAndEpoch(7, 3)), OffsetAndEpoch(7, 3))
    ) == image_digest(machine.image)


def test_a_snapshot_carries_the_time_of_its_last_record() -> None:
    log = MemoryLog()
    for records, timestamp in ((FIRST, 1_000), (SECOND, 2_000), (THIRD, 3_000)):
        append_records(log, records, epoch=3, timestamp=timestamp)
    core = cast(RaftCore, CommittedCore(log))
    machine = BrokerMetadataMachine(broker_id=BROKER, snapshot_max_bytes=1)
    observe(machine, ready(OffsetRange(0, 6)), core, 0)
    assert snapshot_timestamp_ms(log, OffsetAndEpoch(6, 3)) == 2_000
    # a broker that starts from that snapshot stamps its next one with the next batch's time
    again = BrokerMetadataMachine(broker_id=BROKER, snapshot_max_bytes=1)
    observe(again, ready(loaded_snapshot=OffsetAndEpoch(6, 3)), core, 0)
    observe(again, ready(OffsetRange(6, 7)), core, 0)
    assert snapshot_timestamp_ms(log, OffsetAndEpoch(7, 3)) == 3_000


def test_a_broker_machine_never_proposes() -> None:
    machine = BrokerMetadataMachine(broker_id=BROKER)
    core = observer_core(MemoryLog())
    assert not machine.has_work(0) and machine.deadline_ms() is None
    call = ControllerCall(CreateTopicsRequest(), 5, lambda _answer: None)
    with pytest.raises(AssertionError, match="has no controller"):
        machine.call(call, core, 0)
    with pytest.raises(AssertionError, match="never proposes"):
        machine.proposed(OffsetRange(0, 1))


async def test_a_waiter_wakes_when_the_image_satisfies_its_condition() -> None:
    log = a_log(FIRST, SECOND)
    core = observer_core(log)
    machine = BrokerMetadataMachine(broker_id=BROKER)
    found: list[MetadataImage] = []

    async def wait() -> None:
        found.append(await machine.wait_for(lambda image: image.topic("orders") is not None
                                            and bool(image.topic("orders").partitions)))  # type: ignore[union-attr]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        observe(machine, ready(OffsetRange(0, 4)), core, 0)
        await trio.testing.wait_all_tasks_blocked()
        assert found == []
        observe(machine, ready(OffsetRange(4, 6)), core, 0)
    assert [image.provenance.offset for image in found] == [6]


async def test_a_waiter_is_told_when_the_node_stops_first() -> None:
    machine = BrokerMetadataMachine(broker_id=BROKER)
    with pytest.RaisesGroup(
        pytest.RaisesExc(trio.ClosedResourceError, match="broker 4 stopped"),
        flatten_subgroups=True,
    ):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(machine.wait_for, lambda image: False)
            await trio.testing.wait_all_tasks_blocked()
            machine.close()
