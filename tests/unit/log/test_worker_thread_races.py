"""What a worker thread does to a log while its owner goes on must not trip over the owner.

A metadata leader flushes its log in a worker thread while it appends (the flush
persists the active segment's indexes), and writes its snapshots in another while
it reads the snapshot ids and cleans; a broker checkpoints its high watermarks in
one while it deletes partitions. Most tests make thread switches as frequent as
CPython allows, so that a switch falls between any two steps of the owner's
change, and run both sides a bounded number of times; a switch right after a
system call never comes that way (the call hands the lock over and restarts the
waiting thread's clock), so the flush beside an append is run at each line of the
append in turn, and a snapshot write is held half-way by its data.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from quorum.log.config import LogConfig
from quorum.log.file_log import FileLog
from quorum.log.log_dir import LogDirectory, PartitionId, PartitionKey
from quorum.log.offset_index import ENTRY_SIZE, OffsetIndex
from quorum.log.protocol import OffsetAndEpoch
from quorum.log.segment import Segment
from quorum.log.snapshots import SnapshotStore, snapshot_file_name
from quorum.log.time_index import TIME_ENTRY_SIZE, TimeIndex
from quorum.raft.snapshots import maybe_clean

from .batches import make_batch


@pytest.fixture
def frequent_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run_beside(worker: Callable[[], None], owner: Callable[[], None]) -> list[BaseException]:
    """``worker`` in a loop in a thread while ``owner`` runs once; what the worker raised."""
    failures: list[BaseException] = []
    done = threading.Event()

    def loop() -> None:
        while not done.is_set():
            try:
                worker()
            except Exception as exc:  # the failure under test, reported to the test thread
                failures.append(exc)
                return

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        owner()
    finally:
        done.set()
        thread.join()
    return failures


@pytest.mark.usefixtures("frequent_switches")
def test_an_offset_index_persists_beside_appends(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.touch()
    index = OffsetIndex(path, base_offset=0)

    def owner() -> None:
        for n in range(1, 60_001):
            index.append(n, n * 10)

    assert run_beside(index.persist, owner) == []
    index.persist()
    assert path.read_bytes() == index.to_bytes()
    assert path.stat().st_size == 60_000 * ENTRY_SIZE


@pytest.mark.usefixtures("frequent_switches")
def test_a_time_index_persists_beside_appends(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    path.touch()
    index = TimeIndex(path, base_offset=0)

    def owner() -> None:
        for n in range(1, 60_001):
            assert index.maybe_append(1_000 + n, n)

    assert run_beside(index.persist, owner) == []
    index.persist()
    assert path.read_bytes() == index.to_bytes()
    assert path.stat().st_size == 60_000 * TIME_ENTRY_SIZE


@pytest.mark.usefixtures("frequent_switches")
def test_snapshot_ids_are_read_while_a_worker_thread_stores_snapshots(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    # a large set: reading its latest and earliest walks it for a while
    for offset in range(1, 301):
        store.create(OffsetAndEpoch(offset, 1), b"x")
    created = [OffsetAndEpoch(offset, 1) for offset in range(301, 901)]

    def worker() -> None:  # the snapshot task: a new snapshot at a time
        if created:
            store.create(created.pop(0), b"x")

    seen: list[OffsetAndEpoch] = []

    def owner() -> None:  # the node: the latest id on every fetch, cleaning now and then
        for n in range(20_000):
            latest, earliest = store.latest, store.earliest
            assert latest is not None and earliest is not None and earliest <= latest
            seen.append(latest)
            if n % 1_000 == 999:
                store.delete_before(OffsetAndEpoch(latest.offset - 100, 1))
            if not created:
                break

    assert run_beside(worker, owner) == []
    assert seen == sorted(seen)  # ids only ever join at the top
    assert store.latest == OffsetAndEpoch(900, 1) or created
    assert all(store.path_of(i).exists() for i in store.ids())


@pytest.mark.usefixtures("frequent_switches")
def test_high_watermarks_are_checkpointed_while_partitions_are_deleted(tmp_path: Path) -> None:
    # the replica driver's checkpoint thread beside the owner's topic deletion
    directory = LogDirectory(tmp_path, LogConfig())
    topic_id = uuid.uuid4()
    keys = [PartitionKey(topic_id, i) for i in range(2_000)]
    for key in keys:
        directory.create_log(key, ("orders", key.partition))
    marks: dict[PartitionId, int] = {key: 100 + key.partition for key in keys}
    directory.write_high_watermarks(marks)

    def owner() -> None:
        for key in keys[:300]:
            directory.delete_log(key)

    assert run_beside(lambda: directory.write_high_watermarks(marks), owner) == []
    directory.write_high_watermarks(marks)
    assert set(directory.high_watermarks) == {("orders", k.partition) for k in keys[300:]}
    directory.close()


def _filled(path: Path, end: int) -> FileLog:
    log = FileLog(path)
    for offset in range(0, end, 10):
        log.append(make_batch(10, base_offset=offset, epoch=1), epoch=1)
    return log


class _HeldWrite:
    """A snapshot written in a thread, held half-way (a large one takes a second)."""

    def __init__(self, log: FileLog, snapshot_id: OffsetAndEpoch) -> None:
        self._started, self._release = threading.Event(), threading.Event()
        self.stored: list[bool] = []
        self._thread = threading.Thread(
            # an iterator of parts (written in order: the second waits for ``finish``)
            target=lambda: self.stored.append(
                log.create_snapshot(snapshot_id, self._parts())  # type: ignore[arg-type]
            )
        )
        self._thread.start()
        assert self._started.wait(10)

    def _parts(self) -> Iterator[bytes]:
        yield b"the first half of a large snapshot"
        self._started.set()
        self._release.wait(10)
        yield b"the second half"

    def finish(self) -> bool:
        self._release.set()
        self._thread.join()
        return self.stored[0]


def _cleans_again(log: FileLog) -> None:
    """A later snapshot and a retention that lets nothing stay: the start must move."""
    end = log.log_end_offset
    for offset in range(end, end + 200, 10):
        log.append(make_batch(10, base_offset=offset, epoch=1), epoch=1)
    latest = OffsetAndEpoch(log.log_end_offset, 1)
    assert log.create_snapshot(latest, b"later")
    assert maybe_clean(log, retention_bytes=0)
    assert log.log_start_offset == latest.offset
    assert log.snapshot_ids() == [latest]


def test_a_snapshot_a_thread_finishes_below_an_installed_one_is_dropped(tmp_path: Path) -> None:
    log = _filled(tmp_path / "__cluster_metadata-0", 300)
    own = _HeldWrite(log, OffsetAndEpoch(150, 1))  # this follower's own, of what it replayed
    leader = OffsetAndEpoch(400, 1)  # meanwhile the leader's snapshot arrives and is installed
    log.write_partial_snapshot(leader, 0, b"the leader's image")
    assert log.store_partial_snapshot(leader)
    assert log.truncate_to_latest_snapshot()
    assert not own.finish()
    assert log.snapshot_ids() == [leader]
    assert not (log.directory / snapshot_file_name(OffsetAndEpoch(150, 1))).exists()
    _cleans_again(log)
    log.close()


def test_a_snapshot_a_thread_finishes_after_a_later_one_became_the_start_is_dropped(
    tmp_path: Path,
) -> None:
    log = _filled(tmp_path / "__cluster_metadata-0", 300)
    assert log.create_snapshot(OffsetAndEpoch(100, 1), b"old")
    slow = _HeldWrite(log, OffsetAndEpoch(150, 1))
    assert log.create_snapshot(OffsetAndEpoch(200, 1), b"the next, finished first")
    assert maybe_clean(log, retention_bytes=0)  # the core's timer: the start moves to 200
    assert not slow.finish()
    assert log.snapshot_ids() == [OffsetAndEpoch(200, 1)]
    _cleans_again(log)
    log.close()


def test_a_cleaning_walks_past_a_snapshot_left_below_the_log_start(tmp_path: Path) -> None:
    # a node that kept one from before the fix: its cleaning must not stop at it for good
    log = _filled(tmp_path / "__cluster_metadata-0", 300)
    assert log.create_snapshot(OffsetAndEpoch(200, 1), b"start")
    assert log.delete_before(OffsetAndEpoch(200, 1))
    stray = OffsetAndEpoch(150, 1)
    (log.directory / snapshot_file_name(stray)).write_bytes(b"left behind")
    log.close()
    log = FileLog(tmp_path / "__cluster_metadata-0")
    assert log.snapshot_ids() == [stray, OffsetAndEpoch(200, 1)]
    _cleans_again(log)
    log.close()


def test_a_flush_beside_an_append_claims_only_what_it_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flush thread run at every line of ``Segment.append`` in turn (the owner stopped
    there, where a thread switch may fall): what it reports durable was fsynced."""
    synced: dict[str, int] = {}
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        size = os.fstat(fd).st_size
        real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced[path] = max(synced.get(path, 0), size)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    code = Segment.append.__code__
    stops = 0
    for stop_at in range(1, 100):
        synced.clear()
        log = FileLog(tmp_path / f"trial-{stop_at}" / "__cluster_metadata-0")
        log.append(make_batch(5, base_offset=0, epoch=1), epoch=1)
        assert log.flush() == 5
        claimed: list[int] = []
        seen = 0

        def line(frame: FrameType, event: str, arg: object) -> Any:
            nonlocal seen
            if event == "line":
                seen += 1
                if seen == stop_at:  # noqa: B023 (each trial's own count)
                    flush = threading.Thread(target=lambda: claimed.append(log.flush()))  # noqa: B023
                    flush.start()
                    flush.join()
            return line

        def tracer(frame: FrameType, event: str, arg: object) -> Any:
            return line if frame.f_code is code else None

        sys.settrace(tracer)
        try:
            log.append(make_batch(3, base_offset=5, epoch=1), epoch=1)
        finally:
            sys.settrace(None)
        if not claimed:
            log.close()
            break  # past the append's last line
        stops += 1
        segment = log.segments[-1]
        batch_end = {last: position + size for position, _, size, last in segment.iter_headers()}
        durable = synced.get(os.path.realpath(segment.log_path), 0)
        if claimed[0] > 5:
            assert durable >= batch_end[claimed[0] - 1], (stop_at, claimed, durable)
        log.close()
    assert stops >= 5  # the append's lines were all visited
