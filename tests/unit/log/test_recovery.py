"""Crash recovery: torn and corrupt tails are cut, corruption before the tail stops the open."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quorum.log import FileLog, LogConfig, LogCorruptionError, OffsetAndEpoch
from quorum.log.segment import Segment

from .batches import batch_offsets, make_batch

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200)


@attrs.frozen
class Written:
    """What a test log holds: its directory and each segment's batches."""

    directory: Path
    # per segment: (path, [(position, base offset, size, last offset)])
    segments: list[tuple[Path, list[tuple[int, int, int, int]]]]
    data: bytes  # every batch, in order

    @property
    def tail(self) -> tuple[Path, list[tuple[int, int, int, int]]]:
        return self.segments[-1]


def write_log(directory: Path, batches: int, *, epochs: int = 3) -> Written:
    log = FileLog(directory, CONFIG)
    for i in range(batches):
        log.append(
            make_batch(1 + i % 3, value_size=20 + i % 7, tag=i), epoch=1 + i * epochs // batches
        )
    log.close()
    reopened = FileLog(directory, CONFIG)
    segments = [(s.log_path, s.iter_headers()) for s in reopened.segments]
    data = b"".join(bytes(reopened.read(o, 1 << 30).records) for o in _starts(reopened.segments))
    reopened.close()
    return Written(directory=directory, segments=segments, data=data)


def _starts(segments: list[Segment]) -> list[int]:
    return [s.base_offset for s in segments if s.size]


def contents(log: FileLog) -> bytes:
    chunks = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 30)
        chunks.append(bytes(result.records))
        offset = result.next_offset
    return b"".join(chunks)


def expected_after_cut(written: Written, valid_batches: int) -> tuple[int, bytes]:
    """(log end offset, data) when only the first ``valid_batches`` of the tail survive."""
    earlier = sum(sum(size for _, _, size, _ in batches) for _, batches in written.segments[:-1])
    _, tail = written.tail
    kept = tail[:valid_batches]
    end_offset = kept[-1][3] + 1 if kept else tail[0][1]
    size = sum(batch[2] for batch in kept)
    return end_offset, written.data[: earlier + size]


def assert_recovered(written: Written, valid_batches: int) -> None:
    end_offset, data = expected_after_cut(written, valid_batches)
    log = FileLog(written.directory, CONFIG)
    assert log.log_end_offset == end_offset
    assert contents(log) == data
    assert log.read(end_offset, 1 << 20).is_empty
    # nothing after the first bad batch is left on disk either
    assert written.tail[0].stat().st_size == sum(b[2] for b in written.tail[1][:valid_batches])
    # the log goes on: an append lands right after the surviving prefix
    info = log.append(make_batch(2, tag=999), epoch=10)
    assert info.first_offset == end_offset
    log.close()
    again = FileLog(written.directory, CONFIG)
    assert again.log_end_offset == end_offset + 2
    assert again.end_offset_for_epoch(10) == OffsetAndEpoch(end_offset + 2, 10)
    again.close()


def cut(path: Path, size: int) -> None:
    with open(path, "r+b") as file:
        file.truncate(size)


def flip(path: Path, position: int, mask: int) -> None:
    with open(path, "r+b") as file:
        file.seek(position)
        byte = file.read(1)[0]
        file.seek(position)
        file.write(bytes([byte ^ mask]))


def batch_containing(batches: list[tuple[int, int, int, int]], position: int) -> int:
    return next(i for i, (pos, _, size, _) in enumerate(batches) if pos <= position < pos + size)


def test_a_torn_tail_is_cut_on_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(7)
    for trial in range(12):
        written = write_log(tmp_path / f"t-{trial}", 40)
        path, batches = written.tail
        size = path.stat().st_size
        cut_at = rng.randrange(1, size)
        cut(path, cut_at)
        whole = sum(1 for pos, _, length, _ in batches if pos + length <= cut_at)
        dropped = cut_at - sum(length for _, _, length, _ in batches[:whole])
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="quorum.log"):
            assert_recovered(written, whole)
        if dropped:
            assert f"dropping {dropped} bytes" in caplog.text
            assert path.name in caplog.text


def test_a_flipped_byte_in_the_tail_cuts_the_log_before_that_batch(tmp_path: Path) -> None:
    rng = random.Random(11)
    for trial in range(12):
        written = write_log(tmp_path / f"t-{trial}", 40)
        path, batches = written.tail
        position = rng.randrange(path.stat().st_size)
        flip(path, position, rng.randrange(1, 256))
        assert_recovered(written, batch_containing(batches, position))


def test_flipping_the_epoch_field_is_caught_by_the_epoch_checkpoint(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 40)
    path, batches = written.tail
    victim = len(batches) // 2
    flip(path, batches[victim][0] + 15, 0x01)  # low byte of partitionLeaderEpoch
    assert_recovered(written, victim)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.integers(min_value=1, max_value=30),
    where=st.floats(min_value=0, max_value=1, exclude_max=True),
    mask=st.integers(min_value=0, max_value=255),
)
def test_any_cut_or_flip_of_the_tail_keeps_exactly_the_valid_prefix(
    tmp_path_factory: pytest.TempPathFactory, batches: int, where: float, mask: int
) -> None:
    written = write_log(tmp_path_factory.mktemp("log") / "t-0", batches)
    path, tail = written.tail
    position = int(where * path.stat().st_size)
    if mask == 0:
        cut(path, position)
        valid = sum(1 for pos, _, length, _ in tail if pos + length <= position)
    else:
        flip(path, position, mask)
        valid = batch_containing(tail, position)
    assert_recovered(written, valid)


def test_corruption_in_an_earlier_segment_stops_the_open(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 40)
    assert len(written.segments) >= 3
    path, batches = written.segments[1]
    position, _, _, _ = batches[2]
    flip(path, position + 40, 0x10)
    with pytest.raises(LogCorruptionError) as failure:
        FileLog(written.directory, CONFIG)
    message = str(failure.value)
    assert str(path) in message
    assert f"at byte {position}" in message
    assert "CRC-32C" in message


def test_a_torn_earlier_segment_stops_the_open(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 40)
    path, batches = written.segments[0]
    last_position = batches[-1][0]
    cut(path, last_position + 30)
    with pytest.raises(
        LogCorruptionError, match=rf"{path.name} is corrupt at byte {last_position}"
    ):
        FileLog(written.directory, CONFIG)


def test_a_missing_segment_in_the_middle_stops_the_open(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 40)
    written.segments[1][0].unlink()
    following = written.segments[2][0]
    with pytest.raises(
        LogCorruptionError, match=rf"{following.name} is corrupt at byte 0.*ends at"
    ):
        FileLog(written.directory, CONFIG)


def test_a_garbage_epoch_checkpoint_is_rebuilt_from_the_batches(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    written = write_log(tmp_path / "t-0", 30)
    checkpoint = written.directory / "leader-epoch-checkpoint"
    good = checkpoint.read_text()
    checkpoint.write_text("0\n1\n1 zero\n")
    with caplog.at_level(logging.WARNING, logger="quorum.log"):
        log = FileLog(written.directory, CONFIG)
    assert "leader-epoch-checkpoint is malformed" in caplog.text
    assert "line 3" in caplog.text
    assert checkpoint.read_text() == good
    assert contents(log) == written.data
    log.close()


def test_a_missing_epoch_checkpoint_is_rebuilt(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 30)
    checkpoint = written.directory / "leader-epoch-checkpoint"
    good = checkpoint.read_text()
    checkpoint.unlink()
    FileLog(written.directory, CONFIG).close()
    assert checkpoint.read_text() == good


def test_epoch_entries_beyond_the_recovered_end_are_dropped(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 30)
    checkpoint = written.directory / "leader-epoch-checkpoint"
    good = checkpoint.read_text()
    lines = good.splitlines()
    lines[1] = str(int(lines[1]) + 1)
    checkpoint.write_text("\n".join([*lines, "9 100000"]) + "\n")
    log = FileLog(written.directory, CONFIG)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(-1, -1)
    assert log.last_fetched_epoch == 3
    log.close()
    assert checkpoint.read_text() == good


def test_a_crash_keeps_what_was_flushed(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", CONFIG)
    for i in range(5):
        log.append(make_batch(2, tag=i), epoch=1)
    flushed = log.flush()
    tail = log.segments[-1]
    flushed_size = tail.size
    for i in range(3):
        log.append(make_batch(2, tag=10 + i), epoch=2)
    log.abandon()
    cut(tail.log_path, flushed_size)  # the page cache never reached the disk
    reopened = FileLog(tmp_path / "t-0", CONFIG)
    assert reopened.log_end_offset == flushed
    assert reopened.last_fetched_epoch == 1
    assert reopened.end_offset_for_epoch(2) == OffsetAndEpoch(-1, -1)
    reopened.close()


def test_leftover_temporary_files_are_removed_on_open(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 3)
    leftover = written.directory / "leader-epoch-checkpoint.tmp"
    leftover.write_text("half")
    FileLog(written.directory, CONFIG).close()
    assert not leftover.exists()


def test_an_index_file_that_disagrees_is_rewritten(tmp_path: Path) -> None:
    written = write_log(tmp_path / "t-0", 40)
    index = written.segments[0][0].with_suffix(".index")
    good = index.read_bytes()
    assert good
    index.write_bytes(b"\x00" * 5)
    log = FileLog(written.directory, CONFIG)
    assert index.read_bytes() == good
    assert batch_offsets(log.read(5, 1).records)[0][0] <= 5
    log.close()
