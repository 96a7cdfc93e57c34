"""Snapshot files: names, atomic writes, read-back, leftovers and deletion."""

from __future__ import annotations

from pathlib import Path

import pytest

from quorum.log import FileLog, OffsetAndEpoch, OffsetOutOfRangeError
from quorum.log.snapshots import SnapshotStore, snapshot_file_name

from .batches import make_batch


def test_snapshot_files_are_named_by_end_offset_and_epoch() -> None:
    name = snapshot_file_name(OffsetAndEpoch(100, 1))
    assert name == "00000000000000000100-0000000001.checkpoint"


def test_a_snapshot_is_read_back_whole_and_in_chunks(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    data = bytes(range(256)) * 40
    assert store.create(OffsetAndEpoch(7, 2), data)
    assert (tmp_path / "00000000000000000007-0000000002.checkpoint").read_bytes() == data
    assert store.read(OffsetAndEpoch(7, 2)) == data
    chunks = [store.read(OffsetAndEpoch(7, 2), pos, 1000) for pos in range(0, len(data), 1000)]
    assert b"".join(chunks) == data
    assert store.read(OffsetAndEpoch(7, 2), len(data)) == b""
    with pytest.raises(OffsetOutOfRangeError, match="outside it"):
        store.read(OffsetAndEpoch(7, 2), len(data) + 1)


def test_no_partial_file_remains_after_a_write(tmp_path: Path) -> None:
    SnapshotStore(tmp_path).create(OffsetAndEpoch(3, 1), b"abc")
    assert [p.name for p in tmp_path.iterdir()] == ["00000000000000000003-0000000001.checkpoint"]


def test_a_leftover_partial_snapshot_is_ignored_and_removed(tmp_path: Path) -> None:
    partial = tmp_path / "00000000000000000050-0000000003.checkpoint.part"
    partial.write_bytes(b"half a snapsh")
    deleted = tmp_path / "00000000000000000010-0000000001.checkpoint.deleted"
    deleted.write_bytes(b"old")
    store = SnapshotStore(tmp_path)
    assert store.ids() == []
    assert not partial.exists() and not deleted.exists()


def test_snapshots_survive_reopening_the_log(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "__cluster_metadata-0")
    log.append(make_batch(5), epoch=1)
    log.create_snapshot(OffsetAndEpoch(5, 1), b"image")
    log.close()
    reopened = FileLog(tmp_path / "__cluster_metadata-0")
    assert reopened.latest_snapshot_id == OffsetAndEpoch(5, 1)
    assert reopened.read_snapshot(OffsetAndEpoch(5, 1)) == b"image"
    reopened.close()


def test_delete_before_removes_older_snapshot_files(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "__cluster_metadata-0")
    for _ in range(4):
        log.append(make_batch(5), epoch=1)
    for end in (5, 10, 15):
        log.create_snapshot(OffsetAndEpoch(end, 1), b"s%d" % end)
    assert log.delete_before(OffsetAndEpoch(10, 1))
    files = sorted(p.name for p in log.directory.glob("*.checkpoint"))
    assert files == [snapshot_file_name(OffsetAndEpoch(e, 1)) for e in (10, 15)]
    assert log.log_start_offset == 10
    log.close()


def test_a_snapshot_id_must_not_be_negative(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="negative"):
        SnapshotStore(tmp_path).create(OffsetAndEpoch(-1, 0), b"")
