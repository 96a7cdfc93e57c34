"""Golden bytes for the classic group APIs, written by hand from Kafka's JSON schemas.

Every vector is checked both ways: our encoder must produce exactly these
bytes, and our decoder must turn them back into exactly the message.  One
comment per field; flexible versions use compact lengths (length + 1 as an
unsigned varint) and end every struct with a tag block (``00`` when empty).
"""

from __future__ import annotations

from typing import Any

import pytest

from quorum.wire.codec import decode, encode
from quorum.wire.messages import (
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
    FindCoordinatorResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    SyncGroupResponse,
)

# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
CASES: list[Any] = [
    pytest.param(
        JoinGroupRequest, 5,
        JoinGroupRequest(
            group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=30_000, member_id="",
            group_instance_id=None, protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01"),),
        ),
        bytes.fromhex(
            "0001" "67"  # group_id "g"
            "00002710"  # session_timeout_ms 10000
            "00007530"  # rebalance_timeout_ms 30000 (v1+)
            "0000"  # member_id ""
            "ffff"  # group_instance_id null (v5+)
            "0008" "636f6e73756d6572"  # protocol_type "consumer"
            "00000001"  # protocols: 1
            "0005" "72616e6765"  # name "range"
            "00000002" "0001"  # metadata, int32 length 2
        ),
        id="JoinGroupRequest-v5",
    ),
    pytest.param(
        JoinGroupResponse, 7,
        JoinGroupResponse(
            generation_id=1, protocol_type="consumer", protocol_name="range", leader="m",
            member_id="m",
            members=(JoinGroupResponseMember(member_id="m", metadata=b"\x00\x01"),),
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "00000001"  # generation_id 1
            "09" "636f6e73756d6572"  # protocol_type "consumer" (v7+, compact)
            "06" "72616e6765"  # protocol_name "range"
            "02" "6d"  # leader "m"
            "02" "6d"  # member_id "m"
            "02"  # members: 1 (compact)
            "02" "6d"  # member_id "m"
            "00"  # group_instance_id null
            "03" "0001"  # metadata, compact length 2
            "00"  # member tag block
            "00"  # top-level tag block
        ),
        id="JoinGroupResponse-v7",
    ),
    pytest.param(
        SyncGroupResponse, 3,
        SyncGroupResponse(assignment=b"AB"),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "00000002" "4142"  # assignment b"AB"
        ),
        id="SyncGroupResponse-v3",
    ),
    pytest.param(
        HeartbeatRequest, 0,
        HeartbeatRequest(group_id="g", generation_id=1, member_id="m"),
        bytes.fromhex(
            "0001" "67"  # group_id "g"
            "00000001"  # generation_id 1
            "0001" "6d"  # member_id "m" (no group_instance_id before v3)
        ),
        id="HeartbeatRequest-v0",
    ),
    pytest.param(
        OffsetCommitRequest, 8,
        OffsetCommitRequest(
            group_id="g", generation_id_or_member_epoch=3, member_id="m",
            topics=(OffsetCommitRequestTopic(name="t", partitions=(
                OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=42, committed_leader_epoch=-1,
                    committed_metadata="",
                ),
            )),),
        ),
        bytes.fromhex(
            "02" "67"  # group_id "g" (compact)
            "00000003"  # generation_id_or_member_epoch 3
            "02" "6d"  # member_id "m"
            "00"  # group_instance_id null
            "02"  # topics: 1
            "02" "74"  # name "t"
            "02"  # partitions: 1
            "00000000"  # partition_index 0
            "000000000000002a"  # committed_offset 42
            "ffffffff"  # committed_leader_epoch -1
            "01"  # committed_metadata ""
            "00"  # partition tag block
            "00"  # topic tag block
            "00"  # top-level tag block
        ),
        id="OffsetCommitRequest-v8",
    ),
    pytest.param(
        OffsetFetchResponse, 1,
        OffsetFetchResponse(topics=(OffsetFetchResponseTopic(name="t", partitions=(
            OffsetFetchResponsePartition(partition_index=0, committed_offset=42, metadata=""),
        )),)),
        bytes.fromhex(
            "00000001"  # topics: 1 (no throttle before v3, no top-level error before v2)
            "0001" "74"  # name "t"
            "00000001"  # partitions: 1
            "00000000"  # partition_index 0
            "000000000000002a"  # committed_offset 42
            "0000"  # metadata ""
            "0000"  # error_code 0
        ),
        id="OffsetFetchResponse-v1",
    ),
    pytest.param(
        FindCoordinatorResponse, 0,
        FindCoordinatorResponse(node_id=1, host="h", port=9092),
        bytes.fromhex(
            "0000"  # error_code 0
            "00000001"  # node_id 1
            "0001" "68"  # host "h"
            "00002384"  # port 9092
        ),
        id="FindCoordinatorResponse-v0",
    ),
    pytest.param(
        DescribeGroupsResponse, 6,
        DescribeGroupsResponse(groups=(DescribeGroupsResponseDescribedGroup(
            error_code=69, error_message="x", group_id="g", group_state="Dead",
            authorized_operations=-(2**31),
        ),)),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "02"  # groups: 1
            "0045"  # error_code 69 GROUP_ID_NOT_FOUND
            "02" "78"  # error_message "x" (v6+, KIP-1043)
            "02" "67"  # group_id "g"
            "05" "44656164"  # group_state "Dead"
            "01"  # protocol_type ""
            "01"  # protocol_data ""
            "01"  # members: 0
            "80000000"  # authorized_operations INT32_MIN
            "00"  # group tag block
            "00"  # top-level tag block
        ),
        id="DescribeGroupsResponse-v6",
    ),
]
# fmt: on


@pytest.mark.parametrize(("cls", "version", "message", "golden"), CASES)
def test_golden_bytes_both_ways(cls: type, version: int, message: Any, golden: bytes) -> None:
    assert encode(message, version).hex() == golden.hex()
    assert decode(cls, version, golden) == message
