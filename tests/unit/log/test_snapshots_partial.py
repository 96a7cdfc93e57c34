"""Partial snapshot copies (a download in progress) in the file log and the memory log."""

from __future__ import annotations

from pathlib import Path

import pytest

from quorum.log import FileLog, MemoryLog, OffsetAndEpoch, ReplicatedLog

SNAPSHOT = OffsetAndEpoch(50, 2)
DATA = bytes(range(200)) * 5


@pytest.fixture(params=["file", "memory"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> ReplicatedLog:
    if request.param == "memory":
        return MemoryLog()
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    return FileLog(directory)


def test_a_partial_copy_is_no_snapshot_until_stored(log: ReplicatedLog) -> None:
    log.write_partial_snapshot(SNAPSHOT, 0, DATA[:400])
    log.write_partial_snapshot(SNAPSHOT, 400, DATA[400:])
    assert log.snapshot_ids() == []
    assert log.store_partial_snapshot(SNAPSHOT)
    assert log.snapshot_ids() == [SNAPSHOT]
    assert log.read_snapshot(SNAPSHOT) == DATA


def test_position_0_starts_a_new_copy(log: ReplicatedLog) -> None:
    log.write_partial_snapshot(SNAPSHOT, 0, b"x" * 900)
    log.write_partial_snapshot(SNAPSHOT, 0, DATA[:10])
    assert log.store_partial_snapshot(SNAPSHOT)
    assert log.read_snapshot(SNAPSHOT) == DATA[:10]


def test_storing_an_id_already_held_keeps_the_held_snapshot(log: ReplicatedLog) -> None:
    assert log.create_snapshot(SNAPSHOT, DATA)
    log.write_partial_snapshot(SNAPSHOT, 0, b"other")
    assert not log.store_partial_snapshot(SNAPSHOT)
    assert log.read_snapshot(SNAPSHOT) == DATA


def test_a_crash_forgets_a_memory_logs_partial_copy() -> None:
    log = MemoryLog()
    log.write_partial_snapshot(SNAPSHOT, 0, DATA)
    log.crash()
    with pytest.raises(KeyError):
        log.store_partial_snapshot(SNAPSHOT)
    assert log.snapshot_ids() == []


def test_a_file_logs_partial_copy_is_removed_when_the_log_opens(tmp_path: Path) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    FileLog(directory).write_partial_snapshot(SNAPSHOT, 0, DATA)
    assert [p.name for p in directory.glob("*.part")] == [
        "00000000000000000050-0000000002.checkpoint.part"
    ]
    reopened = FileLog(directory)
    assert list(directory.glob("*.part")) == [] and reopened.snapshot_ids() == []
