"""What a worker thread does to a log while its owner goes on must not trip over the owner.

A metadata leader flushes its log in a worker thread while it appends (the flush
persists the active segment's indexes), and writes its snapshots in another while
it reads the snapshot ids. Each test makes thread switches as frequent as
CPython allows, so that a switch falls between any two steps of the owner's
change, and runs both sides a bounded number of times.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from quorum.log.offset_index import ENTRY_SIZE, OffsetIndex
from quorum.log.protocol import OffsetAndEpoch
from quorum.log.snapshots import SnapshotStore
from quorum.log.time_index import TIME_ENTRY_SIZE, TimeIndex


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
