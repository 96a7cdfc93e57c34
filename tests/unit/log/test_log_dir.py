"""A broker log directory: the replica core's calls, Kafka's checkpoint files, the marker."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from quorum.log import (
    CheckpointFileError,
    LogConfig,
    LogDirectory,
    OpenFiles,
    PartitionKey,
    PartitionMetadataError,
)
from quorum.log.dir_checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    format_offsets,
    parse_offsets,
    read_clean_shutdown_marker,
    read_offsets,
    write_offsets,
)
from quorum.log.partition_metadata import (
    PARTITION_METADATA_FILE,
    format_partition_metadata,
    parse_partition_metadata,
    read_partition_metadata,
)
from quorum.wire.uuids import uuid_to_str

from .batches import make_batch

CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=90, verify_closed_segments_on_open=False)
TOPIC_ID = uuid.UUID("8c3a0f4e-51d2-4d7e-9a55-2e1b6c0d9f01")
OTHER_ID = uuid.UUID("1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed")
KEY = PartitionKey(TOPIC_ID, 0)


def open_dir(path: Path, files: OpenFiles | None = None) -> LogDirectory:
    return LogDirectory(path, CONFIG, files=files or OpenFiles(max_open=8))


def fill(directory: LogDirectory, key: PartitionKey, topic: str, batches: int) -> None:
    log = directory.create_log(key, (topic, key.partition))
    for i in range(batches):
        log.append(make_batch(2, tag=i), epoch=1)


def test_a_new_log_makes_its_directory_with_its_topic_id_at_its_first_write(
    tmp_path: Path,
) -> None:
    directory = open_dir(tmp_path)
    assert directory.open_log(KEY, ("orders", 0)) is None, "a new partition has no log yet"
    assert not (tmp_path / "orders-0").exists(), "an unwritten partition has no directory"
    assert directory.close() and not (tmp_path / "orders-0").exists()
    directory = open_dir(tmp_path)
    log = directory.create_log(KEY, ("orders", 0))
    assert directory.create_log(KEY, ("orders", 0)) is log
    log.append(make_batch(3), epoch=1)
    assert log.log_end_offset == 3
    assert read_partition_metadata(tmp_path / "orders-0") == TOPIC_ID
    text = (tmp_path / "orders-0" / PARTITION_METADATA_FILE).read_text()
    assert text == f"version: 0\ntopic_id: {uuid_to_str(TOPIC_ID)}"
    assert directory.open_log(KEY, ("orders", 0)) is log


def test_a_log_and_its_high_watermark_survive_a_clean_restart(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 5)
    directory.write_high_watermarks({KEY: 6})
    assert directory.close(broker_epoch=7)
    assert read_clean_shutdown_marker(tmp_path) == 7

    again = open_dir(tmp_path)
    assert again.had_clean_shutdown and again.previous_broker_epoch == 7
    assert not (tmp_path / CLEAN_SHUTDOWN_MARKER).exists(), "removed at open"
    log = again.open_log(KEY, ("orders", 0))
    assert again.checkpointed_high_watermark(KEY) == 6
    assert log.log_end_offset == 10
    assert read_offsets(tmp_path / REPLICATION_OFFSET_CHECKPOINT) == {("orders", 0): 6}


def test_a_high_watermark_is_zero_before_any_checkpoint(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    directory.open_log(KEY, ("orders", 0))
    assert directory.checkpointed_high_watermark(KEY) == 0
    assert directory.checkpointed_high_watermark(PartitionKey(OTHER_ID, 3)) == 0


def test_high_watermarks_of_partitions_not_opened_yet_are_kept(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    other = PartitionKey(OTHER_ID, 1)
    fill(directory, KEY, "orders", 1)
    fill(directory, other, "users", 1)
    directory.write_high_watermarks({KEY: 2, other: 1})
    directory.close()

    again = open_dir(tmp_path)
    again.open_log(KEY, ("orders", 0))
    again.write_high_watermarks({KEY: 1})
    assert read_offsets(tmp_path / REPLICATION_OFFSET_CHECKPOINT) == {
        ("orders", 0): 1,
        ("users", 1): 1,
    }


def test_a_directory_of_a_deleted_topic_with_the_same_name_is_never_served(
    tmp_path: Path,
) -> None:
    directory = open_dir(tmp_path)
    fill(directory, PartitionKey(OTHER_ID, 0), "orders", 3)
    directory.write_high_watermarks({PartitionKey(OTHER_ID, 0): 6})
    directory.close()

    again = open_dir(tmp_path)
    # the old directory is moved aside: the new topic's partition has no log yet
    assert again.open_log(KEY, ("orders", 0)) is None
    assert again.checkpointed_high_watermark(KEY) == 0
    [aside] = again.pending_deletions
    log = again.create_log(KEY, ("orders", 0))
    assert log.log_end_offset == 0
    log.append(make_batch(1), epoch=1)
    assert read_partition_metadata(tmp_path / "orders-0") == TOPIC_ID
    assert aside.name.startswith("orders-0.") and aside.name.endswith("-delete")
    assert again.remove_deleted_logs() == 1
    assert not aside.exists()


def test_delete_log_moves_the_directory_aside_then_removes_it(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 3)
    directory.delete_log(KEY)
    assert not (tmp_path / "orders-0").exists()
    [aside] = directory.pending_deletions
    assert aside.exists() and (aside / "00000000000000000000.log").exists()
    assert directory.remove_deleted_logs() == 1
    assert list(tmp_path.glob("*-delete")) == []
    # hosted again later: no log until it is written, then a fresh, empty one
    assert directory.open_log(KEY, ("orders", 0)) is None
    assert directory.create_log(KEY, ("orders", 0)).log_end_offset == 0


def test_deletions_interrupted_by_a_crash_are_resumed_at_the_next_open(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 1)
    aside = directory.delete("orders", 0)
    assert aside is not None
    again = open_dir(tmp_path)
    assert again.pending_deletions == [aside]
    assert list(again) == []
    again.remove_deleted_logs()
    assert not aside.exists()


def test_a_log_without_partition_metadata_is_adopted(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    directory.log("orders", 0).append(make_batch(2), epoch=1)
    directory.close()
    again = open_dir(tmp_path)
    assert again.open_log(KEY, ("orders", 0)).log_end_offset == 2
    assert read_partition_metadata(tmp_path / "orders-0") == TOPIC_ID


def test_an_unreadable_partition_metadata_file_is_an_error_naming_it(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 1)
    directory.close()
    (tmp_path / "orders-0" / PARTITION_METADATA_FILE).write_text("version: 0\ntopic: x\n")
    with pytest.raises(PartitionMetadataError, match=r"partition\.metadata line 2"):
        open_dir(tmp_path).open_log(KEY, ("orders", 0))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1"),
        ("version 0\n", "line 1"),
        ("version: x\n", "line 1: version 'x'"),
        ("version: 0\n", "line 2"),
        ("version: 0\ntopic_id: short\n", "line 2"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "zero topic id"),
    ],
)
def test_partition_metadata_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(PartitionMetadataError, match=message):
        parse_partition_metadata(text, path=Path("t-0/partition.metadata"))


def test_partition_metadata_round_trips_and_accepts_later_versions() -> None:
    path = Path("p")
    assert parse_partition_metadata(format_partition_metadata(TOPIC_ID), path=path) == TOPIC_ID
    later = f"version: 3\ntopic_id:   {uuid_to_str(TOPIC_ID)}\n"
    assert parse_partition_metadata(later, path=path) == TOPIC_ID


# -- offset checkpoint files ------------------------------------------------------


def test_offset_checkpoints_use_kafkas_text_format(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    write_offsets(path, {("b.c", 2): 40, ("a", 0): 7})
    assert path.read_text() == "0\n2\na 0 7\nb.c 2 40\n"
    assert read_offsets(path) == {("a", 0): 7, ("b.c", 2): 40}
    assert not list(tmp_path.glob("*.tmp"))


def test_offset_checkpoints_read_empty_and_missing_files_as_no_entries(tmp_path: Path) -> None:
    assert read_offsets(tmp_path / "absent") == {}
    (tmp_path / "empty").write_text("")
    assert read_offsets(tmp_path / "empty") == {}
    assert parse_offsets(format_offsets({}), path=tmp_path) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\n0\n", "line 1: version 1"),
        ("0\nx\n", "line 2: entry count 'x'"),
        ("0\n1\na 0\n", "line 3: 'a 0' is not 'topic partition offset'"),
        ("0\n1\na zero 5\n", "line 3: partition 'zero'"),
        ("0\n1\na 0 -5\n", "line 3: .* negative"),
        ("0\n2\na 0 5\n", "line 2: it says 2 entries but 1 follow"),
        ("0\n2\na 0 5\na 0 6\n", "line 4: a-0 is listed twice"),
    ],
)
def test_offset_checkpoint_errors_name_the_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_text(text)
    with pytest.raises(CheckpointFileError, match=f"replication-offset-checkpoint {message}"):
        read_offsets(path)


def test_a_corrupt_checkpoint_is_read_as_empty_by_the_log_directory(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 2)
    directory.write_high_watermarks({KEY: 4})
    directory.close()
    (tmp_path / REPLICATION_OFFSET_CHECKPOINT).write_text("0\n1\norders 0\n")
    again = open_dir(tmp_path)
    again.open_log(KEY, ("orders", 0))
    assert again.checkpointed_high_watermark(KEY) == 0


# -- the clean-shutdown marker and recovery ---------------------------------------


def test_after_a_crash_there_is_no_marker_and_logs_are_recovered(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 4)
    directory.open_log(KEY, ("orders", 0)).flush()
    directory.checkpoint_recovery_points()
    # a kill: nothing closed, no marker; a torn write at the tail
    with open(tmp_path / "orders-0" / "00000000000000000000.log", "ab") as file:
        file.write(b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00")
    again = open_dir(tmp_path)
    assert not again.had_clean_shutdown
    assert again.needing_recovery() == [("orders", 0)]
    log = again.open_log(KEY, ("orders", 0))
    assert log.log_end_offset == 8
    assert again.needing_recovery() == []
    assert again.close()


def test_no_marker_is_written_while_a_log_still_needs_recovery(tmp_path: Path) -> None:
    directory = open_dir(tmp_path)
    fill(directory, KEY, "orders", 1)
    directory.checkpoint_recovery_points()
    again = open_dir(tmp_path)
    assert not again.close()
    assert not (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()


def test_opening_many_partitions_opens_no_segment_file(tmp_path: Path) -> None:
    files = OpenFiles(max_open=4)
    directory = open_dir(tmp_path, files)
    keys = [PartitionKey(TOPIC_ID, i) for i in range(20)]
    for key in keys:
        fill(directory, key, "orders", 2)
    assert files.open_count <= 4
    directory.close()

    files = OpenFiles(max_open=4)
    again = open_dir(tmp_path, files)
    assert len(list(again)) == 20
    assert files.open_count == 0
    for key in keys:
        assert again.open_log(key, ("orders", key.partition)).read(0, 1000).next_offset == 4
        assert files.open_count <= 4
