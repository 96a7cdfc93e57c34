"""Metadata records out of log bytes, and committed ranges read through the log protocol."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from quorum.controller.log_records import (
    MetadataLogError,
    iter_log_batches,
    iter_log_records,
    read_committed_range,
    read_committed_records,
)
from quorum.log import FileLog, LogConfig, MemoryLog, ReplicatedLog
from quorum.wire.control import build_leader_change_batch
from quorum.wire.messages.metadata_records import FeatureLevelRecord, NoOpRecord, TopicRecord
from quorum.wire.metadata_serde import MetadataRecord, encode_metadata_record
from quorum.wire.records import build_batch_from_values


def feature(level: int) -> FeatureLevelRecord:
    return FeatureLevelRecord(name="metadata.version", feature_level=level)


def data_batch(
    records: Sequence[MetadataRecord], base_offset: int = 0, epoch: int = 1, timestamp: int = 0
) -> bytes:
    return build_batch_from_values(
        [encode_metadata_record(r) for r in records],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        timestamp=timestamp,
    )


def leader_change(base_offset: int, epoch: int, timestamp: int = 5) -> bytes:
    return build_leader_change_batch(1, [1, 2, 3], [1, 2], epoch, base_offset, timestamp=timestamp)


# -- bytes --------------------------------------------------------------------------------

LOG_BYTES = (
    leader_change(0, 1)
    + data_batch([feature(1), feature(2)], base_offset=1, epoch=1)
    + leader_change(3, 2)
    + data_batch([NoOpRecord()], base_offset=4, epoch=2)
)


def test_batches_report_control_batches_and_decode_data_batches() -> None:
    batches = list(iter_log_batches(LOG_BYTES))
    assert [(b.base_offset, b.last_offset, b.epoch, b.is_control) for b in batches] == [
        (0, 0, 1, True), (1, 2, 1, False), (3, 3, 2, True), (4, 4, 2, False),
    ]
    assert batches[0].records == ()
    assert batches[1].records == ((1, feature(1)), (2, feature(2)))
    assert batches[-1].next_offset == 5


def test_records_skip_control_batches_and_carry_offset_and_epoch() -> None:
    assert list(iter_log_records(LOG_BYTES)) == [
        (1, 1, feature(1)), (2, 1, feature(2)), (4, 2, NoOpRecord()),
    ]


def test_a_trailing_partial_batch_is_ignored_as_in_fetch_data() -> None:
    assert [b.base_offset for b in iter_log_batches(LOG_BYTES[:-3])] == [0, 1, 3]


def test_a_record_that_does_not_decode_names_its_offset() -> None:
    data = build_batch_from_values([encode_metadata_record(feature(1)), b"\x01\x63\x00"],
                                   base_offset=40)
    with pytest.raises(MetadataLogError, match=r"offset 41.*unknown metadata record type 99"):
        list(iter_log_records(data))


def test_a_record_without_a_value_names_its_offset() -> None:
    with pytest.raises(MetadataLogError, match="offset 7 has no value"):
        list(iter_log_records(build_batch_from_values([None], base_offset=7)))


def test_a_batch_with_a_bad_crc_names_its_offset() -> None:
    data = bytearray(data_batch([feature(1)], base_offset=12))
    data[-1] ^= 0x01
    with pytest.raises(MetadataLogError, match=r"batch at offset 12.*CRC"):
        list(iter_log_batches(bytes(data)))


def test_batches_from_the_end_offset_on_are_not_decoded() -> None:
    # a replay to the high watermark stops before the uncommitted tail; a record there
    # that would not even decode is left alone
    tail = build_batch_from_values([b"\x01\x63\x00"], base_offset=5)
    assert [b.base_offset for b in iter_log_batches(LOG_BYTES + tail, end_offset=4)] == [0, 1, 3]
    assert [b.base_offset for b in iter_log_batches(LOG_BYTES + tail, end_offset=5)] == [0, 1, 3, 4]
    with pytest.raises(MetadataLogError, match="offset 5"):
        list(iter_log_batches(LOG_BYTES + tail))


# -- through the log protocol -------------------------------------------------------------


@pytest.fixture(params=["memory", "file"])
def log(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ReplicatedLog]:
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # no crash is simulated here
    # tiny segments: a committed range spans several, and one read never crosses one
    config = LogConfig(segment_bytes=300, index_interval_bytes=64)
    opened: ReplicatedLog = MemoryLog(config) if request.param == "memory" else FileLog(
        tmp_path / "__cluster_metadata-0", config
    )
    yield opened
    opened.close()


def topic(i: int) -> TopicRecord:
    return TopicRecord(name=f"topic-{i}", topic_id=uuid.UUID(int=i + 1))


def fill(log: ReplicatedLog) -> list[MetadataRecord]:
    """Offsets: leader change 0 and 3 x 3 topics 1-9 (epoch 1), leader change 10 and
    2 x 2 topics 11-14 (epoch 2)."""
    written: list[MetadataRecord] = []
    log.append(leader_change(0, 1), epoch=1)
    for _ in range(3):
        batch = [topic(len(written) + i) for i in range(3)]
        log.append(data_batch(batch), epoch=1)
        written += batch
    log.append(leader_change(0, 2), epoch=2)
    for _ in range(2):
        batch = [topic(len(written) + i) for i in range(2)]
        log.append(data_batch(batch), epoch=2)
        written += batch
    return written


def test_a_whole_committed_range_reads_every_record_with_its_offset(log: ReplicatedLog) -> None:
    written = fill(log)
    assert log.log_end_offset == 15
    if isinstance(log, FileLog):
        assert len(log.segments) > 2
    records, epoch = read_committed_records(log, 0, 15, max_bytes=64)
    assert [r for _, r in records] == written
    assert [o for o, _ in records] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
    assert epoch == 2


def test_a_range_that_starts_and_ends_inside_batches_keeps_only_its_records(
    log: ReplicatedLog,
) -> None:
    written = fill(log)
    records, epoch = read_committed_records(log, 5, 12)
    assert records == [(5, written[4]), (6, written[5]), (7, written[6]), (8, written[7]),
                       (9, written[8]), (11, written[9])]
    assert epoch == 2


def test_a_range_ending_after_a_control_batch_reports_its_epoch(log: ReplicatedLog) -> None:
    fill(log)
    records, epoch = read_committed_records(log, 7, 11)
    assert [o for o, _ in records] == [7, 8, 9]
    assert epoch == 2  # the leader change at offset 10 is of epoch 2


def test_a_committed_range_never_decodes_the_uncommitted_tail(log: ReplicatedLog) -> None:
    written = fill(log)
    log.append(build_batch_from_values([b"\x01\x63\x00"]), epoch=2)  # offset 15: undecodable
    records, _ = read_committed_records(log, 11, 15)
    assert [r for _, r in records] == written[-4:]


def test_an_empty_range_reads_nothing(log: ReplicatedLog) -> None:
    fill(log)
    assert read_committed_records(log, 6, 6) == ([], None)


def test_a_range_past_the_log_end_is_an_error(log: ReplicatedLog) -> None:
    fill(log)
    with pytest.raises(MetadataLogError, match="no batch at offset 15"):
        read_committed_records(log, 10, 20)


def test_a_committed_range_reports_the_max_timestamp_of_its_last_batch(
    log: ReplicatedLog,
) -> None:
    log.append(leader_change(0, 1, timestamp=500), epoch=1)
    log.append(data_batch([topic(0), topic(1)], timestamp=1_000), epoch=1)  # offsets 1-2
    log.append(data_batch([topic(2)], timestamp=2_000), epoch=1)  # offset 3
    log.append(leader_change(0, 2, timestamp=3_000), epoch=2)  # offset 4
    assert read_committed_range(log, 0, 3).last_timestamp_ms == 1_000
    assert read_committed_range(log, 0, 2).last_timestamp_ms == 1_000  # ends inside that batch
    assert read_committed_range(log, 1, 4).last_timestamp_ms == 2_000
    assert read_committed_range(log, 3, 5).last_timestamp_ms == 3_000  # control batches count
    assert read_committed_range(log, 2, 2).last_timestamp_ms is None
