"""Golden bytes for KRaft replication: Fetch v17, FetchSnapshot v1, DescribeQuorum v2.

Written by hand from Kafka's JSON message schemas and checked both ways
(encode == bytes, decode == message).  These exercise the tagged fields KRaft
depends on: Fetch's ClusterId and ReplicaState (request), ReplicaDirectoryId
(partition), DivergingEpoch, CurrentLeader and SnapshotId (response partition)
and NodeEndpoints; tagged structs are written only when not at their defaults.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from quorum.wire.codec import decode, encode
from quorum.wire.messages import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopic,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseEpochEndOffset,
    FetchResponseLeaderIdAndEpoch,
    FetchResponseNodeEndpoint,
    FetchResponsePartition,
    FetchResponseSnapshotId,
    FetchResponseTopic,
    FetchSnapshotRequest,
    FetchSnapshotRequestPartition,
    FetchSnapshotRequestSnapshotId,
    FetchSnapshotRequestTopic,
    FetchSnapshotResponse,
    FetchSnapshotResponseLeaderIdAndEpoch,
    FetchSnapshotResponsePartition,
    FetchSnapshotResponseSnapshotId,
    FetchSnapshotResponseTopic,
)
from quorum.wire.uuids import METADATA_TOPIC_ID

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
DIR_1 = uuid.UUID(hex="d1" * 16)
DIR_2 = uuid.UUID(hex="d2" * 16)

# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
CLUSTER_ID_HEX = "17" "4d6b55334f4556424e5463774e544a454e444d32516b"  # compact, 22 + 1
METADATA_TOPIC_HEX = "13" "5f5f636c75737465725f6d65746164617461"  # "__cluster_metadata"
METADATA_TOPIC_ID_HEX = "00000000000000000000000000000001"  # topic id AAAAAAAAAAAAAAAAAAAAAQ
LOCALHOST_HEX = "0a" "6c6f63616c686f7374"  # "localhost"


def _fetch_response(partition: FetchResponsePartition) -> FetchResponse:
    return FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=(FetchResponseTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
        node_endpoints=(
            FetchResponseNodeEndpoint(node_id=1, host="localhost", port=9093, rack=None),
        ),
    )


FETCH_RESPONSE_HEAD = (
    "00000000"  # throttle_time_ms 0
    "0000"  # error_code 0
    "00000000"  # session_id 0
    "02"  # responses: compact count 1 + 1
    + METADATA_TOPIC_ID_HEX  # topic_id (v13+)
    + "02"  # partitions: compact count 1 + 1
    "00000000"  # partition_index 0
    "0000"  # error_code 0
    "0000000000000050"  # high_watermark 80
    "ffffffffffffffff"  # last_stable_offset -1
    "0000000000000000"  # log_start_offset 0
    "00"  # aborted_transactions: null
    "ffffffff"  # preferred_read_replica -1
    "01"  # records: empty (compact length 0 + 1)
)
FETCH_RESPONSE_TAIL = (
    "00"  # tag block of the topic
    "01"  # tag block: 1 tagged field
    "00" "15"  # tag 0 NodeEndpoints (v16+), 21 bytes
    "02"  # compact count 1 + 1
    "00000001"  # node_id 1
    + LOCALHOST_HEX  # host
    + "00002385"  # port 9093 (int32 here)
    "00"  # rack: null
    "00"  # tag block of the endpoint
)

CASES: list[Any] = [
    pytest.param(
        FetchRequest,
        17,
        FetchRequest(
            cluster_id=CLUSTER_ID,
            replica_state=FetchRequestReplicaState(replica_id=2, replica_epoch=-1),
            max_wait_ms=500,
            min_bytes=0,
            max_bytes=8388608,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=(
                FetchRequestTopic(
                    topic_id=METADATA_TOPIC_ID,
                    partitions=(
                        FetchRequestPartition(
                            partition=0,
                            current_leader_epoch=5,
                            fetch_offset=100,
                            last_fetched_epoch=4,
                            log_start_offset=0,
                            partition_max_bytes=1048576,
                            replica_directory_id=DIR_2,
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        ),
        bytes.fromhex(
            "000001f4"  # max_wait_ms 500
            "00000000"  # min_bytes 0
            "00800000"  # max_bytes 8 MiB
            "00"  # isolation_level 0
            "00000000"  # session_id 0
            "ffffffff"  # session_epoch -1
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_ID_HEX  # topic_id (v13+; no topic name)
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition 0
            "00000005"  # current_leader_epoch 5
            "0000000000000064"  # fetch_offset 100
            "00000004"  # last_fetched_epoch 4
            "0000000000000000"  # log_start_offset 0
            "00100000"  # partition_max_bytes 1 MiB
            "01"  # tag block of the partition: 1 tagged field
            "00" "10"  # tag 0 ReplicaDirectoryId (v17+), 16 bytes
            + "d2" * 16
            + "00"  # tag block of the topic
            "01"  # forgotten_topics_data: empty
            "01"  # rack_id ""
            "02"  # tag block: 2 tagged fields (no top-level ReplicaId from v15)
            "00" "17"  # tag 0 ClusterId, 23 bytes
            + CLUSTER_ID_HEX
            + "01" "0d"  # tag 1 ReplicaState (v15+), 13 bytes
            "00000002"  # replica_id 2
            "ffffffffffffffff"  # replica_epoch -1
            "00"  # tag block of ReplicaState
        ),
        id="FetchRequest-v17",
    ),
    pytest.param(
        FetchResponse,
        17,
        _fetch_response(
            FetchResponsePartition(
                partition_index=0,
                error_code=0,
                high_watermark=80,
                last_stable_offset=-1,
                log_start_offset=0,
                diverging_epoch=FetchResponseEpochEndOffset(epoch=3, end_offset=90),
                current_leader=FetchResponseLeaderIdAndEpoch(leader_id=1, leader_epoch=5),
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=b"",
            )
        ),
        bytes.fromhex(
            FETCH_RESPONSE_HEAD
            + "02"  # tag block of the partition: 2 tagged fields
            "00" "0d"  # tag 0 DivergingEpoch, 13 bytes
            "00000003"  # epoch 3
            "000000000000005a"  # end_offset 90
            "00"  # tag block of DivergingEpoch
            "01" "09"  # tag 1 CurrentLeader, 9 bytes
            "00000001"  # leader_id 1
            "00000005"  # leader_epoch 5
            "00"  # tag block of CurrentLeader
            + FETCH_RESPONSE_TAIL
        ),
        id="FetchResponse-v17-diverging",
    ),
    pytest.param(
        FetchResponse,
        17,
        _fetch_response(
            FetchResponsePartition(
                partition_index=0,
                error_code=0,
                high_watermark=80,
                last_stable_offset=-1,
                log_start_offset=0,
                snapshot_id=FetchResponseSnapshotId(end_offset=60, epoch=2),
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=b"",
            )
        ),
        bytes.fromhex(
            FETCH_RESPONSE_HEAD
            + "01"  # tag block of the partition: 1 tagged field
            "02" "0d"  # tag 2 SnapshotId, 13 bytes
            "000000000000003c"  # end_offset 60
            "00000002"  # epoch 2
            "00"  # tag block of SnapshotId
            + FETCH_RESPONSE_TAIL
        ),
        id="FetchResponse-v17-snapshot",
    ),
    pytest.param(
        FetchSnapshotRequest,
        1,
        FetchSnapshotRequest(
            cluster_id=None,
            replica_id=2,
            max_bytes=0x7FFFFFFF,
            topics=(
                FetchSnapshotRequestTopic(
                    name="__cluster_metadata",
                    partitions=(
                        FetchSnapshotRequestPartition(
                            partition=0,
                            current_leader_epoch=5,
                            snapshot_id=FetchSnapshotRequestSnapshotId(end_offset=60, epoch=2),
                            position=4096,
                            replica_directory_id=DIR_2,
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000002"  # replica_id 2
            "7fffffff"  # max_bytes
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition 0
            "00000005"  # current_leader_epoch 5
            "000000000000003c"  # snapshot_id.end_offset 60
            "00000002"  # snapshot_id.epoch 2
            "00"  # tag block of SnapshotId
            "0000000000001000"  # position 4096
            "01"  # tag block of the partition: 1 tagged field
            "00" "10"  # tag 0 ReplicaDirectoryId (v1+), 16 bytes
            + "d2" * 16
            + "00"  # tag block of the topic
            "00"  # tag block (ClusterId null: left out)
        ),
        id="FetchSnapshotRequest-v1",
    ),
    pytest.param(
        FetchSnapshotResponse,
        1,
        FetchSnapshotResponse(
            throttle_time_ms=0,
            error_code=0,
            topics=(
                FetchSnapshotResponseTopic(
                    name="__cluster_metadata",
                    partitions=(
                        FetchSnapshotResponsePartition(
                            index=0,
                            error_code=0,
                            snapshot_id=FetchSnapshotResponseSnapshotId(end_offset=60, epoch=2),
                            current_leader=FetchSnapshotResponseLeaderIdAndEpoch(
                                leader_id=1, leader_epoch=5
                            ),
                            size=4099,
                            position=4096,
                            unaligned_records=b"\x01\x02\x03",
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # index 0
            "0000"  # error_code 0
            "000000000000003c"  # snapshot_id.end_offset 60
            "00000002"  # snapshot_id.epoch 2
            "00"  # tag block of SnapshotId
            "0000000000001003"  # size 4099
            "0000000000001000"  # position 4096
            "04" "010203"  # unaligned_records: compact length 3 + 1
            "01"  # tag block of the partition: 1 tagged field
            "00" "09"  # tag 0 CurrentLeader, 9 bytes
            "00000001"  # leader_id 1
            "00000005"  # leader_epoch 5
            "00"  # tag block of CurrentLeader
            "00"  # tag block of the topic
            "00"  # tag block (NodeEndpoints empty: left out)
        ),
        id="FetchSnapshotResponse-v1",
    ),
    pytest.param(
        DescribeQuorumRequest,
        2,
        DescribeQuorumRequest(
            topics=(
                DescribeQuorumRequestTopic(
                    topic_name="__cluster_metadata",
                    partitions=(DescribeQuorumRequestPartition(partition_index=0),),
                ),
            )
        ),
        bytes.fromhex(
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="DescribeQuorumRequest-v2",
    ),
    pytest.param(
        DescribeQuorumResponse,
        2,
        DescribeQuorumResponse(
            error_code=0,
            error_message=None,
            topics=(
                DescribeQuorumResponseTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        DescribeQuorumResponsePartition(
                            partition_index=0,
                            error_code=0,
                            error_message=None,
                            leader_id=1,
                            leader_epoch=5,
                            high_watermark=100,
                            current_voters=(
                                DescribeQuorumResponseReplicaState(
                                    replica_id=1,
                                    replica_directory_id=DIR_1,
                                    log_end_offset=100,
                                    last_fetch_timestamp=1700000000000,
                                    last_caught_up_timestamp=1700000000000,
                                ),
                            ),
                            observers=(),
                        ),
                    ),
                ),
            ),
            nodes=(
                DescribeQuorumResponseNode(
                    node_id=1,
                    listeners=(
                        DescribeQuorumResponseListener(
                            name="CONTROLLER", host="localhost", port=9093
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "0000"  # error_code 0
            "00"  # error_message: null (v2+)
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "0000"  # error_code 0
            "00"  # error_message: null
            "00000001"  # leader_id 1
            "00000005"  # leader_epoch 5
            "0000000000000064"  # high_watermark 100
            "02"  # current_voters: compact count 1 + 1
            "00000001"  # replica_id 1
            + "d1" * 16  # replica_directory_id (v2+)
            + "0000000000000064"  # log_end_offset 100
            "0000018bcfe56800"  # last_fetch_timestamp 1700000000000 (v1+)
            "0000018bcfe56800"  # last_caught_up_timestamp (v1+)
            "00"  # tag block of the voter
            "01"  # observers: empty
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "02"  # nodes: compact count 1 + 1 (v2+)
            "00000001"  # node_id 1
            "02"  # listeners: compact count 1 + 1
            "0b" "434f4e54524f4c4c4552"  # name "CONTROLLER"
            + LOCALHOST_HEX  # host
            + "2385"  # port 9093 (uint16)
            "00"  # tag block of the listener
            "00"  # tag block of the node
            "00"  # tag block
        ),
        id="DescribeQuorumResponse-v2",
    ),
]

# fmt: on


@pytest.mark.parametrize(("cls", "version", "message", "golden"), CASES)
def test_encoding_gives_the_hand_written_bytes(
    cls: type, version: int, message: Any, golden: bytes
) -> None:
    assert encode(message, version).hex() == golden.hex()


@pytest.mark.parametrize(("cls", "version", "message", "golden"), CASES)
def test_decoding_the_hand_written_bytes_gives_the_message(
    cls: type, version: int, message: Any, golden: bytes
) -> None:
    assert decode(cls, version, golden) == message
