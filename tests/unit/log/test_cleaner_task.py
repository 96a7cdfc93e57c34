"""The broker's cleaner task (``broker.replica.log_cleaning``) over hosted partitions."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
import trio

from broker.replica.log_cleaning import LogCleaning, clean_filthiest
from quorum.log import CLEANER_OFFSET_CHECKPOINT, FileLog, LogCleaner, ReplicatedLog, SyncFile
from quorum.log.log_dir import LogDirectory, PartitionKey

from .compaction import COMPACTED, T0, keyed_batch, open_log, read_entries


@attrs.define
class FakePartition:
    log: ReplicatedLog
    high_watermark: int
    has_log: bool = True


def _partition(
    directory: Path, *, compact: bool = True, rounds: int = 12
) -> tuple[FakePartition, FileLog]:
    log = open_log(directory, attrs.evolve(COMPACTED, compact=compact))
    for r in range(rounds):
        log.append(keyed_batch([(b"a", f"{r}".encode()), (b"b", b"x")]), epoch=1)
    return FakePartition(log=log, high_watermark=log.log_end_offset), log


async def test_the_task_cleans_a_due_compacted_log_between_other_tasks(tmp_path: Path) -> None:
    plain, plain_log = _partition(tmp_path / "plain-0", compact=False)
    compacted, compacted_log = _partition(tmp_path / "compacted-0")
    plain_before = read_entries(plain_log)
    cleaning = LogCleaning(cleaner=LogCleaner(slice_batches=2))
    ticks = 0
    done = False

    async def other_task() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        cleaned = await clean_filthiest(cleaning, [plain, compacted], lambda: T0 + 100)
        done = True

    assert cleaned
    closed_end = compacted_log.segments[-1].base_offset
    assert [e.key for e in read_entries(compacted_log) if e.offset < closed_end].count(b"a") == 1
    assert read_entries(plain_log) == plain_before
    assert ticks >= 5  # the other task ran between the slices
    text = (tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text()
    assert text.startswith("0\n1\ncompacted 0 ")
    # now clean: nothing is due
    assert not await clean_filthiest(cleaning, [plain, compacted], lambda: T0 + 100)
    plain_log.close()
    compacted_log.close()


async def test_a_log_below_the_minimum_dirty_ratio_is_left_alone(tmp_path: Path) -> None:
    partition, log = _partition(tmp_path / "compacted-0")
    log.update_config(attrs.evolve(COMPACTED, min_cleanable_dirty_ratio=1.0))
    before = read_entries(log)
    assert not await clean_filthiest(LogCleaning(), [partition], lambda: T0 + 100)
    assert read_entries(log) == before
    log.close()


async def test_a_partition_deleted_while_a_cleaned_file_syncs_leaves_its_name_cleanable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = LogDirectory(tmp_path, COMPACTED)
    key = PartitionKey(uuid.uuid4(), 0)
    log = directory.create_log(key, ("compacted", 0))
    for r in range(12):
        log.append(keyed_batch([(b"a", f"{r}".encode()), (b"b", b"x")]), epoch=1)
    partition = FakePartition(log=log, high_watermark=log.log_end_offset)
    cleaning = LogCleaning(cleaner=LogCleaner(slice_batches=2))
    run_sync = trio.to_thread.run_sync
    deleted: list[Path | None] = []

    async def deleting_first(fn: Callable[..., object], *args: object) -> object:
        # the owner's thread, between the job's SyncFile and the thread opening the file:
        # the topic is deleted (the log abandoned, its directory moved aside)
        if isinstance(getattr(fn, "__self__", None), SyncFile) and not deleted:
            deleted.append(directory.delete(*("compacted", 0)))
        return await run_sync(fn, *args)

    monkeypatch.setattr(trio.to_thread, "run_sync", deleting_first)
    assert not await clean_filthiest(cleaning, [partition], lambda: T0 + 100)
    assert deleted and deleted[0] is not None
    # the same name hosted again (the topic created again): a log like any other
    again = directory.create_log(PartitionKey(uuid.uuid4(), 0), ("compacted", 0))
    assert not cleaning.cleaner.is_uncleanable(again)
    directory.close()
