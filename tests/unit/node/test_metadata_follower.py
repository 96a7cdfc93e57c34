"""The metadata log follower: bounded slices, images published whole at batch and
transaction boundaries, aborted transactions dropped, snapshots read and written in slices."""

from __future__ import annotations

from typing import cast

import pytest

from quorum.controller.digest import image_digest
from quorum.controller.image import Provenance
from quorum.controller.log_records import MetadataLogError
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.controller.snapshot import write_snapshot
from quorum.log import MemoryLog, OffsetAndEpoch, SnapshotData
from quorum.node.metadata_follower import MetadataLogFollower, Publication
from quorum.raft import LeaderAndEpoch, OffsetRange, RaftCore, Ready
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
)
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.broker.records import (
    append_records,
    fold,
    metadata_version,
    partition,
    register,
    topic,
)

BASE: list[MetadataRecord] = [metadata_version(), register(1, 1), register(2, 2), topic("a")]


class LogCore:
    """What the follower uses of a core: the log and ``create_snapshot``."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        return self.log.create_snapshot(snapshot_id, data)


def committed(end: int, start: int = 0) -> Ready:
    return Ready(leader=LeaderAndEpoch(1, 3), role="Follower", committed=OffsetRange(start, end))


def partitions(name: str, first: int, count: int) -> list[MetadataRecord]:
    return [partition(name, i, [1, 2]) for i in range(first, first + count)]


class Run:
    """A follower over one log; ``settle`` steps it dry and keeps every publication."""

    def __init__(self, log: MemoryLog, **settings: int) -> None:
        self.core = cast(RaftCore, LogCore(log))
        self.published: list[Publication] = []
        self.units: list[int] = []
        self.follower = MetadataLogFollower(on_publish=self.published.append, **settings)

    def settle(self, ready: Ready | None = None, now_ms: int = 0) -> None:
        if ready is not None:
            self.follower.observe(ready)
        while self.follower.has_work():
            report = self.follower.step(self.core, now_ms)
            assert report is not None
            self.units.append(report.units)
            built = self.follower.take_built_snapshot()
            if built is not None:
                self.core.create_snapshot(built.snapshot_id, built.parts)

    @property
    def offsets(self) -> list[int]:
        return [p.new.provenance.offset for p in self.published]


def test_a_large_committed_range_is_replayed_in_slices_of_bounded_units() -> None:
    log = MemoryLog()
    append_records(log, BASE, epoch=3)
    for first in range(0, 5000, 500):
        append_records(log, partitions("a", first, 500), epoch=3)
    run = Run(log)
    run.settle(committed(log.log_end_offset))
    assert len(run.units) >= 5 and max(run.units) <= MAX_UNITS_PER_SLICE
    assert run.follower.image.provenance.offset == log.log_end_offset
    assert image_digest(run.follower.image) == image_digest(
        fold([*BASE, *partitions("a", 0, 5000)])
    )
    # one image per slice, each at a batch boundary
    assert run.offsets == sorted(set(run.offsets)) and run.offsets[-1] == log.log_end_offset


def test_a_transaction_is_published_only_once_it_ends() -> None:
    log = MemoryLog()
    append_records(log, BASE, epoch=3)
    begin = log.log_end_offset
    append_records(log, [BeginTransactionRecord(name="t"), *partitions("a", 0, 3)], epoch=3)
    middle = log.log_end_offset
    append_records(log, [*partitions("a", 3, 3), EndTransactionRecord()], epoch=3)
    run = Run(log)
    run.settle(committed(middle))
    assert run.follower.image.provenance.offset == begin  # the transaction is not visible
    assert run.follower.transaction_start == begin
    assert run.follower.replayed_offset == middle
    run.settle(committed(log.log_end_offset, middle))
    image = run.follower.image
    assert run.follower.transaction_start is None
    assert image.provenance.offset == log.log_end_offset
    assert sorted(image.topics_by_id[image.topic_ids_by_name["a"]].partitions) == list(range(6))


def test_an_aborted_transaction_leaves_nothing_but_keeps_what_came_before_it() -> None:
    log = MemoryLog()
    append_records(log, BASE, epoch=3)
    # one batch: a record of another command, then the transaction's begin and records
    append_records(log, [topic("b"), BeginTransactionRecord(), *partitions("a", 0, 4)], epoch=3)
    append_records(log, [AbortTransactionRecord(reason="leader moved"), partition("b", 0, [2])],
                   epoch=4)
    run = Run(log)
    run.settle(committed(len(BASE)))
    run.settle(committed(log.log_end_offset, len(BASE)))
    image = run.follower.image
    assert image.provenance.offset == log.log_end_offset
    assert image.provenance.epoch == 4
    assert image_digest(image) == image_digest(fold([*BASE, topic("b"), partition("b", 0, [2])]))
    # published only at batch ends outside the transaction: before it, and after the abort
    assert run.offsets == [len(BASE), log.log_end_offset]


@pytest.mark.parametrize(
    ("records", "complaint"),
    [
        ([BeginTransactionRecord(), BeginTransactionRecord()], "still open"),
        ([EndTransactionRecord()], "ends no transaction"),
        ([AbortTransactionRecord()], "aborts no transaction"),
    ],
)
def test_markers_out_of_order_are_refused_naming_the_offset(
    records: list[MetadataRecord], complaint: str
) -> None:
    log = MemoryLog()
    append_records(log, [*BASE, *records], epoch=3)
    run = Run(log)
    with pytest.raises(MetadataLogError, match=complaint):
        run.settle(committed(log.log_end_offset))


def test_a_snapshot_is_read_in_slices_and_replaces_the_image() -> None:
    records = [*BASE, *partitions("a", 0, 2500)]
    log = MemoryLog()
    append_records(log, records, epoch=3)
    snapshot_id = OffsetAndEpoch(log.log_end_offset, 3)
    log.create_snapshot(snapshot_id, write_snapshot(fold(records), last_contained_timestamp_ms=0))
    run = Run(log)
    run.settle(Ready(leader=LeaderAndEpoch(1, 3), role="Follower", loaded_snapshot=snapshot_id))
    assert len(run.units) >= 3 and max(run.units) <= MAX_UNITS_PER_SLICE
    assert run.published[-1].from_snapshot
    assert run.follower.image.provenance == Provenance(snapshot_id.offset, 3)
    assert image_digest(run.follower.image) == image_digest(fold(records))


def test_the_own_snapshot_is_built_in_slices_and_holds_the_published_image() -> None:
    log = MemoryLog()
    append_records(log, BASE, epoch=3)
    for first in range(0, 2500, 500):
        append_records(log, partitions("a", first, 500), epoch=3)
    run = Run(log, snapshot_max_bytes=1)
    run.settle(committed(log.log_end_offset))
    snapshot_id = OffsetAndEpoch(log.log_end_offset, 3)
    assert log.latest_snapshot_id == snapshot_id
    assert max(run.units) <= MAX_UNITS_PER_SLICE
    data = log.read_snapshot(snapshot_id)
    assert data == write_snapshot(run.follower.image, last_contained_timestamp_ms=0)


def test_a_snapshot_due_inside_a_transaction_waits_for_its_end_and_holds_it() -> None:
    log = MemoryLog()
    append_records(log, BASE, epoch=3)
    append_records(log, [BeginTransactionRecord(), *partitions("a", 0, 3)], epoch=3)
    run = Run(log, snapshot_max_bytes=1)
    run.settle(committed(len(BASE)))
    first = log.latest_snapshot_id
    assert first is not None and first.offset == len(BASE)
    run.settle(committed(log.log_end_offset, len(BASE)))
    assert log.latest_snapshot_id == first  # none of the image before the transaction again
    middle = log.log_end_offset
    append_records(log, [*partitions("a", 3, 2), EndTransactionRecord()], epoch=3)
    run.settle(committed(log.log_end_offset, middle))
    assert log.latest_snapshot_id == OffsetAndEpoch(log.log_end_offset, 3)
    data = log.read_snapshot(OffsetAndEpoch(log.log_end_offset, 3))
    assert data == write_snapshot(run.follower.image, last_contained_timestamp_ms=0)
