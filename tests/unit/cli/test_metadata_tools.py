"""``kraft dump-log`` and ``kraft metadata-shell`` on metadata logs written by FileLog."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import kraft
from cli.metadata_tools import batch_line, render_dump
from quorum.controller.delta import fold_records
from quorum.controller.digest import image_digest
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.image_json import image_to_json
from quorum.controller.metadata_dir import BatchFileReader, RawBatch, load_metadata_image
from quorum.controller.snapshot import write_snapshot
from quorum.log import FileLog, LogConfig, OffsetAndEpoch
from quorum.wire.batch import BatchHeader
from quorum.wire.control import build_leader_change_batch
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord, encode_metadata_record
from quorum.wire.records import Record, TimestampType, build_batch, build_batch_from_values

TOPIC_ID = uuid.UUID(int=0xABCDEF)
CREATE_TIME = 1_700_000_000_000
SEGMENT = "00000000000000000000.log"

BEFORE_SNAPSHOT: list[MetadataRecord] = [
    FeatureLevelRecord(name="metadata.version", feature_level=21),
    RegisterBrokerRecord(
        broker_id=1, incarnation_id=uuid.UUID(int=5), broker_epoch=2, fenced=False,
        end_points=(RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="localhost",
                                                       port=9092),),
    ),
    TopicRecord(name="orders", topic_id=TOPIC_ID),
    PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,), isr=(1,), leader=1,
                    leader_epoch=0, partition_epoch=0),
]
AFTER_SNAPSHOT: list[MetadataRecord] = [
    PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=-1),
    ConfigRecord(resource_type=2, resource_name="orders", name="cleanup.policy", value="compact"),
]


def data_batch(records: list[MetadataRecord]) -> bytes:
    return build_batch_from_values([encode_metadata_record(r) for r in records],
                                   timestamp=CREATE_TIME)


@pytest.fixture
def metadata_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A metadata.log.dir: leader change (offset 0), 4 records (1-4), snapshot 5-1, leader
    change (5), 2 records (6-7)."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    root = tmp_path / "metadata"
    log = FileLog(root / "__cluster_metadata-0", LogConfig())
    log.append(build_leader_change_batch(1, [1], [1], 1, 0, timestamp=CREATE_TIME), epoch=1)
    log.append(data_batch(BEFORE_SNAPSHOT[:2]), epoch=1)
    log.append(data_batch(BEFORE_SNAPSHOT[2:]), epoch=1)
    snapshot_image = fold_records(EMPTY_IMAGE, BEFORE_SNAPSHOT, Provenance(5, 1))
    log.create_snapshot(OffsetAndEpoch(5, 1),
                        write_snapshot(snapshot_image, last_contained_timestamp_ms=CREATE_TIME))
    log.append(build_leader_change_batch(1, [1], [1], 2, 0, timestamp=CREATE_TIME), epoch=2)
    log.append(data_batch(AFTER_SNAPSHOT), epoch=2)
    log.flush()
    log.close()
    return root


def expected_image() -> MetadataImage:
    return fold_records(EMPTY_IMAGE, BEFORE_SNAPSHOT + AFTER_SNAPSHOT, Provenance(8, 2))


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(kraft, [str(a) for a in args], catch_exceptions=False)


def partition_dir(metadata_dir: Path) -> Path:
    return metadata_dir / "__cluster_metadata-0"


# -- dump-log -----------------------------------------------------------------------------


def test_dump_log_prints_batch_lines_and_decoded_records(metadata_dir: Path) -> None:
    segment = partition_dir(metadata_dir) / SEGMENT
    result = run("dump-log", segment)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: "
    )
    assert lines[2].endswith("magic: 2 compresscodec: none crc: " + lines[2].split("crc: ")[1])
    assert "isvalid: true" in lines[2]
    assert lines[3].startswith(
        "| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: "
    )
    assert lines[3].endswith(
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
        '"grantingVoters":[{"voterId":1}]}'
    )
    assert lines[5].endswith(
        'sequence: -1 headerKeys: [] payload: {"type":"FEATURE_LEVEL_RECORD","version":0,'
        '"data":{"name":"metadata.version","featureLevel":21}}'
    )
    payloads = [line for line in lines if "payload:" in line]
    assert len(payloads) == len(BEFORE_SNAPSHOT) + len(AFTER_SNAPSHOT)
    assert '"type":"PARTITION_CHANGE_RECORD"' in payloads[4]
    assert '"topicId":"AAAAAAAAAAAAAAAAAKvN7w"' in payloads[4]


def test_dump_log_can_print_only_offsets_and_payloads(metadata_dir: Path) -> None:
    segment = partition_dir(metadata_dir) / SEGMENT
    lines = run("dump-log", "--skip-record-metadata", segment).output.splitlines()
    assert lines[5] == (
        '| offset: 1 payload: {"type":"FEATURE_LEVEL_RECORD","version":0,'
        '"data":{"name":"metadata.version","featureLevel":21}}'
    )


def test_dump_log_without_records_prints_batch_lines_only(metadata_dir: Path) -> None:
    segment = partition_dir(metadata_dir) / SEGMENT
    lines = run("dump-log", "--no-print-records", segment).output.splitlines()
    assert len(lines) == 2 + 5
    assert [line.split()[1] for line in lines[2:]] == ["0", "1", "3", "5", "6"]


def test_dump_log_reads_a_snapshot_file(metadata_dir: Path) -> None:
    snapshot = partition_dir(metadata_dir) / "00000000000000000005-0000000001.checkpoint"
    lines = run("dump-log", "--cluster-metadata-decoder", "--files", str(snapshot)).output
    out = lines.splitlines()
    assert out[1] == "Snapshot end offset: 5, epoch: 1"
    assert out[3].endswith(
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1700000000000}'
    )
    assert out[-1].endswith('SnapshotFooter {"version":0}')
    assert sum('"type":"REGISTER_BROKER_RECORD","version":3' in line for line in out) == 1


def test_dump_log_marks_a_corrupt_batch_and_counts_trailing_bytes(metadata_dir: Path) -> None:
    segment = partition_dir(metadata_dir) / SEGMENT
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF  # inside the last batch's records: its CRC no longer holds
    segment.write_bytes(bytes(data) + b"\x00\x01\x02")
    lines = render_dump(segment).plain.splitlines()
    batch_lines = [line for line in lines if line.startswith("baseOffset")]
    assert batch_lines[-1].endswith("isvalid: false")
    assert all(line.endswith("isvalid: true") for line in batch_lines[:-1])
    assert lines[-1] == f"Found 3 invalid bytes at the end of {SEGMENT}"


def test_dump_log_ignores_an_unknown_file(tmp_path: Path) -> None:
    other = tmp_path / "quorum-state"
    other.write_text("{}")
    result = CliRunner().invoke(kraft, ["dump-log", str(other)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert f"Ignoring unknown file {other}" in result.stderr


def test_dump_log_needs_a_file() -> None:
    result = CliRunner().invoke(kraft, ["dump-log"])
    assert result.exit_code == 1
    assert "Missing required argument" in result.stderr


def test_a_batch_line_names_log_append_time() -> None:
    data = build_batch([Record(offset_delta=0, value=b"x")], base_offset=3,
                       timestamp_type=TimestampType.LOG_APPEND_TIME, base_timestamp=7,
                       max_timestamp=9, producer_id=4, base_sequence=10)
    line = batch_line(RawBatch(0, data, BatchHeader.parse(data), True))
    assert "producerId: 4" in line and "baseSequence: 10 lastSequence: 10" in line
    assert "LogAppendTime: 9" in line


# -- metadata-shell -----------------------------------------------------------------------


def test_metadata_shell_digest_is_that_of_the_replayed_image(metadata_dir: Path) -> None:
    result = run("metadata-shell", "--directory", metadata_dir, "--digest")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"8 2 {image_digest(expected_image())}"


def test_metadata_shell_builds_from_the_latest_snapshot_and_the_log_after_it(
    metadata_dir: Path,
) -> None:
    offline = load_metadata_image(metadata_dir)
    assert offline.snapshot_id == OffsetAndEpoch(5, 1)
    assert offline.log_record_count == len(AFTER_SNAPSHOT)
    assert offline.image == expected_image()


def test_metadata_shell_prints_the_image_as_json(metadata_dir: Path) -> None:
    result = run("metadata-shell", "-d", partition_dir(metadata_dir), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == image_to_json(expected_image())


def test_metadata_shell_prints_the_image_as_a_tree(metadata_dir: Path) -> None:
    output = run("metadata-shell", "--directory", metadata_dir).output
    assert output.splitlines()[0].startswith("metadata image at offset 8, epoch 2 (digest ")
    assert "snapshot 5-1 + 2 log records" in output
    assert "metadata.version = 21" in output
    assert "1: epoch 2, active, listeners PLAINTEXT://localhost:9092" in output
    assert "orders (id AAAAAAAAAAAAAAAAAKvN7w)" in output
    partition = "partition 0: leader -1, leader epoch 1, partition epoch 1, replicas [1], isr [1]"
    assert partition in output
    assert "cleanup.policy = compact" in output


def snapshot_of_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_metadata_shell_changes_no_file_even_with_a_torn_tail(metadata_dir: Path) -> None:
    partition = partition_dir(metadata_dir)
    with open(partition / SEGMENT, "ab") as segment:
        segment.write(b"\x00" * 20)  # a torn write: not a whole batch
    (partition / "00000000000000000008-0000000002.checkpoint.part").write_bytes(b"partial")
    before = snapshot_of_files(partition)
    result = CliRunner().invoke(kraft, ["metadata-shell", "-d", str(metadata_dir), "--digest"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"8 2 {image_digest(expected_image())}"
    assert "Ignored 20 bytes at the end of the log" in result.stderr
    assert snapshot_of_files(partition) == before


def test_metadata_shell_refuses_a_broken_snapshot(metadata_dir: Path) -> None:
    snapshot = partition_dir(metadata_dir) / "00000000000000000005-0000000001.checkpoint"
    snapshot.write_bytes(snapshot.read_bytes()[:-4])
    result = CliRunner().invoke(kraft, ["metadata-shell", "-d", str(metadata_dir)])
    assert result.exit_code == 1
    assert "Cannot build the metadata image" in result.stderr
    assert "snapshot 5-1" in result.stderr


def test_metadata_shell_refuses_a_gap_in_the_log(metadata_dir: Path) -> None:
    partition = partition_dir(metadata_dir)
    for snapshot in partition.glob("*.checkpoint"):
        snapshot.unlink()
    reader = BatchFileReader(partition / SEGMENT)
    batches = [raw.data for raw in reader]
    (partition / SEGMENT).write_bytes(batches[0] + b"".join(batches[2:]))
    result = CliRunner().invoke(kraft, ["metadata-shell", "-d", str(metadata_dir)])
    assert result.exit_code == 1
    assert "jumps from offset 1 to 3" in result.stderr
