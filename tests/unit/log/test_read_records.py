"""``read_records``: a read's batches as a region of the segment file, found without
reading them, byte for byte what ``read`` returns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quorum.log import FileLog, LogConfig, file_log
from quorum.log.segment import Segment
from quorum.wire.file_region import FileRegion

from .batches import make_batch


def _bytes_of(records: object) -> bytes:
    if isinstance(records, FileRegion):
        try:
            return records.read()
        finally:
            records.close()
    assert isinstance(records, bytes)
    return records


def _assert_every_read_agrees(log: FileLog) -> None:
    end = log.log_end_offset
    limits = [None, *range(log.log_start_offset, end + 1, 3), end]
    for offset in range(log.log_start_offset, end + 1):
        for max_bytes in (0, 1, 50, 90, 130, 200, 333, 700, 5_000):
            for max_offset in limits:
                expected = bytes(log.read(offset, max_bytes, max_offset=max_offset).records)
                got = _bytes_of(log.read_records(offset, max_bytes, max_offset=max_offset))
                assert got == expected, (offset, max_bytes, max_offset)


def _fill(log: FileLog, count: int) -> None:
    for i in range(count):
        # uneven sizes, some far over the index interval
        log.append(make_batch(1 + i % 5, value_size=8 + (i * 37) % 300, tag=i), epoch=1)


@pytest.mark.parametrize("index_interval_bytes", [64, 256, 100_000])
def test_regions_are_the_bytes_a_read_returns_before_and_after_a_reopen(
    tmp_path: Path, index_interval_bytes: int
) -> None:
    config = LogConfig(segment_bytes=3_000, index_interval_bytes=index_interval_bytes)
    log = FileLog(tmp_path / "t-0", config)
    _fill(log, 40)
    assert len(log.segments) > 2
    _assert_every_read_agrees(log)  # batch boundaries from the tails in memory
    log.close()
    # reopened: closed segments have no tail, so the index and header walk find the ends
    reopened = FileLog(tmp_path / "t-0", config)
    _assert_every_read_agrees(reopened)
    reopened.truncate_to(reopened.log_end_offset - 7)
    _fill(reopened, 5)
    _assert_every_read_agrees(reopened)
    reopened.close()


def test_a_region_reads_no_batch_bytes_near_the_end_and_few_headers_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=4096)
    log = FileLog(tmp_path / "t-0", config)
    for i in range(400):
        log.append(make_batch(2, value_size=200, tag=i), epoch=1)
    log.close()
    reopened = FileLog(tmp_path / "t-0", config)
    read_bytes: list[int] = []
    real = Segment.pread

    def counting(segment: Segment, length: int, position: int) -> bytes:
        read_bytes.append(length)
        return real(segment, length, position)

    monkeypatch.setattr(Segment, "pread", counting)
    region = reopened.read_records(0, 100_000)
    assert isinstance(region, FileRegion) and 95_000 < len(region) <= 100_000
    # one walk of at most an index interval (plus a batch) past the index entry: a few
    # KiB read to find the end, not the 100 KB sent
    assert sum(read_bytes) < 4096 + 1024, read_bytes
    region.close()
    read_bytes.clear()
    whole = reopened.read_records(0, 10_000_000)
    assert isinstance(whole, FileRegion) and len(whole) == reopened.segments[0].size
    # to the end of the segment: nothing to walk, only the first batch's header found
    assert all(length < 64 for length in read_bytes), read_bytes
    whole.close()
    reopened.close()


def test_a_region_outlives_the_log_closing_its_file_and_deleting_the_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_log, "_SEND_FROM_FILE_BYTES", 1)  # a region however small
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=500, index_interval_bytes=64))
    _fill(log, 12)
    expected = bytes(log.read(0, 1 << 20).records)
    region = log.read_records(0, 1 << 20)
    assert isinstance(region, FileRegion)
    first_file = log.segments[0].log_path
    log.close()
    first_file.unlink()
    assert region.read() == expected  # its own descriptor: the bytes it promised
    fd = region.fileno()
    region.close()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed once, and only its own descriptor
    with pytest.raises(ValueError, match="closed"):
        region.read()


def test_a_region_of_a_file_cut_under_it_says_so(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"x" * 100)
    with open(path, "rb") as file:
        region = FileRegion(file.fileno(), 10, 80)
    os.truncate(path, 50)
    with pytest.raises(OSError, match="ends 40 bytes before"):
        region.read()
    region.close()
    with pytest.raises(ValueError):
        FileRegion(0, 0, 0)


def test_a_short_read_comes_back_as_bytes_and_holds_no_descriptor(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=1 << 20))
    _fill(log, 40)
    assert log.segments[0].size < 65_536
    short = log.read_records(0, 1 << 20)
    assert isinstance(short, bytes) and short == bytes(log.read(0, 1 << 20).records)
    while log.segments[0].size < 70_000:
        _fill(log, 40)
    assert isinstance(log.read_records(0, 1 << 20), FileRegion)
    assert isinstance(log.read_records(0, 1_000), bytes)
    log.close()
