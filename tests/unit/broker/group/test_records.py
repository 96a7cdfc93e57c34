"""__consumer_offsets records: Kafka's byte layouts, written by hand from the schemas."""

from __future__ import annotations

import pytest

from broker.group import CommittedOffset, RecordDecodeError
from broker.group.records import (
    GroupMetadataReplay,
    OffsetCommitReplay,
    StoredMember,
    decode_offsets_record,
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)

# fmt: off
OFFSET_KEY = bytes.fromhex(
    "0001"  # key version 1: an offset commit
    "0001" "67"  # group "g"
    "0001" "74"  # topic "t"
    "00000003"  # partition 3
)
OFFSET_VALUE_V3 = bytes.fromhex(
    "0003"  # value version 3
    "000000000000002a"  # offset 42
    "00000005"  # leaderEpoch 5 (v3+)
    "0001" "6d"  # metadata "m"
    "00000000000003e8"  # commitTimestamp 1000
)
OFFSET_VALUE_V1 = bytes.fromhex(
    "0001"  # value version 1: carries an expire timestamp
    "000000000000002a"  # offset 42
    "0001" "6d"  # metadata "m"
    "00000000000003e8"  # commitTimestamp 1000
    "0000000000000bb8"  # expireTimestamp 3000
)
GROUP_KEY = bytes.fromhex("0002" "0001" "67")  # key version 2, group "g"
GROUP_VALUE_V3 = bytes.fromhex(
    "0003"  # value version 3
    "0008" "636f6e73756d6572"  # protocolType "consumer"
    "00000001"  # generation 1
    "0005" "72616e6765"  # protocol "range"
    "0002" "6d31"  # leader "m1"
    "0000000000000007"  # currentStateTimestamp 7
    "00000001"  # members: 1
    "0002" "6d31"  # memberId "m1"
    "ffff"  # groupInstanceId null
    "0001" "63"  # clientId "c"
    "0001" "68"  # clientHost "h"
    "0000012c"  # rebalanceTimeout 300
    "00000064"  # sessionTimeout 100
    "00000001" "53"  # subscription b"S"
    "00000001" "41"  # assignment b"A"
)
# fmt: on

MEMBER = StoredMember(
    member_id="m1", group_instance_id=None, client_id="c", client_host="h",
    rebalance_timeout_ms=300, session_timeout_ms=100, subscription=b"S", assignment=b"A",
)


def test_an_offset_commit_is_written_as_key_v1_and_value_v3() -> None:
    committed = CommittedOffset(offset=42, leader_epoch=5, metadata="m", commit_timestamp_ms=1000)
    record = offset_commit_record("g", "t", 3, committed)
    assert (record.key, record.value) == (OFFSET_KEY, OFFSET_VALUE_V3)
    assert decode_offsets_record(record.key, record.value) == OffsetCommitReplay(
        group_id="g", topic="t", partition=3, offset=committed
    )


def test_an_offset_with_an_expire_timestamp_is_written_as_value_v1() -> None:
    committed = CommittedOffset(
        offset=42, metadata="m", commit_timestamp_ms=1000, expire_timestamp_ms=3000
    )
    assert offset_commit_record("g", "t", 3, committed).value == OFFSET_VALUE_V1
    assert decode_offsets_record(OFFSET_KEY, OFFSET_VALUE_V1) == OffsetCommitReplay(
        group_id="g", topic="t", partition=3, offset=committed
    )


def test_group_metadata_is_written_as_key_v2_and_value_v3() -> None:
    record = group_metadata_record(
        group_id="g", protocol_type="consumer", generation_id=1, protocol_name="range",
        leader_id="m1", current_state_timestamp_ms=7, members=(MEMBER,),
    )
    assert (record.key, record.value) == (GROUP_KEY, GROUP_VALUE_V3)
    assert decode_offsets_record(record.key, record.value) == GroupMetadataReplay(
        group_id="g", deleted=False, protocol_type="consumer", generation_id=1,
        protocol_name="range", leader_id="m1", current_state_timestamp_ms=7, members=(MEMBER,),
    )


def test_tombstones_have_the_key_and_no_value() -> None:
    assert offset_tombstone("g", "t", 3).value is None
    assert decode_offsets_record(OFFSET_KEY, None) == OffsetCommitReplay(
        group_id="g", topic="t", partition=3, offset=None
    )
    assert group_tombstone("g").key == GROUP_KEY
    assert decode_offsets_record(GROUP_KEY, None) == GroupMetadataReplay(group_id="g", deleted=True)


def test_a_key_v0_offset_commit_reads_like_v1() -> None:
    v0_key = b"\x00\x00" + OFFSET_KEY[2:]
    replay = decode_offsets_record(v0_key, OFFSET_VALUE_V3)
    assert isinstance(replay, OffsetCommitReplay) and replay.offset is not None
    assert replay.offset.offset == 42


def test_a_flexible_v4_offset_value_is_read() -> None:
    v4 = bytes.fromhex(
        "0004" "000000000000002a" "00000005"
        "02" "6d"  # compact string "m"
        "00000000000003e8"
        "00"  # empty tag block
    )
    replay = decode_offsets_record(OFFSET_KEY, v4)
    assert isinstance(replay, OffsetCommitReplay)
    assert replay.offset == CommittedOffset(offset=42, leader_epoch=5, metadata="m",
                                            commit_timestamp_ms=1000)


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (b"\x00", None, "no version"),
        (b"\x00\x09" + OFFSET_KEY[2:], None, "key version 9"),
        (OFFSET_KEY, b"\x00\x05" + OFFSET_VALUE_V3[2:], "version 5"),
        (OFFSET_KEY[:-2], None, "OffsetCommitKey"),
    ],
)
def test_a_record_that_is_not_kafkas_is_refused_with_a_reason(
    key: bytes, value: bytes | None, reason: str
) -> None:
    with pytest.raises(RecordDecodeError, match=reason):
        decode_offsets_record(key, value)
