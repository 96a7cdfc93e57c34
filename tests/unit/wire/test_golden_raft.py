"""Golden bytes for the KRaft RPCs at the versions KRaft sends, written by hand.

kafka-python has no classes for these APIs, so these vectors are the check
that our declarations follow Kafka's JSON schemas (and, for Vote v2, KIP-996).
Each vector is checked both ways: encode == bytes and decode == message.
Every version here is flexible: compact lengths (n + 1 as an unsigned varint)
and a tag block at the end of every struct; a tagged field is written only
when it differs from its default, in increasing tag order, as
``tag, size, value``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from quorum.wire.codec import decode, encode
from quorum.wire.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestLeaderEndpoint,
    BeginQuorumEpochRequestPartition,
    BeginQuorumEpochRequestTopic,
    BeginQuorumEpochResponse,
    BeginQuorumEpochResponsePartition,
    BeginQuorumEpochResponseTopic,
    EndQuorumEpochRequest,
    EndQuorumEpochRequestLeaderEndpoint,
    EndQuorumEpochRequestPartition,
    EndQuorumEpochRequestReplicaInfo,
    EndQuorumEpochRequestTopic,
    EndQuorumEpochResponse,
    EndQuorumEpochResponseNodeEndpoint,
    EndQuorumEpochResponsePartition,
    EndQuorumEpochResponseTopic,
    VoteRequest,
    VoteRequestPartition,
    VoteRequestTopic,
    VoteResponse,
    VoteResponseNodeEndpoint,
    VoteResponsePartition,
    VoteResponseTopic,
)

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
DIR_1 = uuid.UUID(hex="d1" * 16)
DIR_2 = uuid.UUID(hex="d2" * 16)
DIR_3 = uuid.UUID(hex="d3" * 16)

# Byte strings used in several vectors.
# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
CLUSTER_ID_HEX = "17" "4d6b55334f4556424e5463774e544a454e444d32516b"  # compact, 22 + 1
METADATA_TOPIC_HEX = "13" "5f5f636c75737465725f6d65746164617461"  # "__cluster_metadata"
LOCALHOST_HEX = "0a" "6c6f63616c686f7374"  # "localhost"
CONTROLLER_HEX = "0b" "434f4e54524f4c4c4552"  # "CONTROLLER"

CASES: list[Any] = [
    pytest.param(
        VoteRequest,
        2,
        VoteRequest(
            cluster_id=CLUSTER_ID,
            voter_id=2,
            topics=(
                VoteRequestTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        VoteRequestPartition(
                            partition_index=0,
                            replica_epoch=5,
                            replica_id=1,
                            replica_directory_id=DIR_1,
                            voter_directory_id=DIR_2,
                            last_offset_epoch=4,
                            last_offset=100,
                            pre_vote=True,
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            CLUSTER_ID_HEX  # cluster_id
            + "00000002"  # voter_id 2 (the receiver)
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "00000005"  # replica_epoch 5 (the current epoch for a pre-vote)
            "00000001"  # replica_id 1 (the sender)
            + "d1" * 16  # replica_directory_id
            + "d2" * 16  # voter_directory_id
            + "00000004"  # last_offset_epoch 4
            "0000000000000064"  # last_offset 100
            "01"  # pre_vote true (v2+)
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="VoteRequest-v2-prevote",
    ),
    pytest.param(
        VoteResponse,
        2,
        VoteResponse(
            error_code=0,
            topics=(
                VoteResponseTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        VoteResponsePartition(
                            partition_index=0,
                            error_code=0,
                            leader_id=-1,
                            leader_epoch=5,
                            vote_granted=True,
                        ),
                    ),
                ),
            ),
            node_endpoints=(VoteResponseNodeEndpoint(node_id=2, host="localhost", port=9093),),
        ),
        bytes.fromhex(
            "0000"  # error_code 0
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "0000"  # error_code 0
            "ffffffff"  # leader_id -1 (unknown)
            "00000005"  # leader_epoch 5
            "01"  # vote_granted true
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "01"  # tag block: 1 tagged field
            "00" "12"  # tag 0 NodeEndpoints, 18 bytes
            "02"  # compact count 1 + 1
            "00000002"  # node_id 2
            + LOCALHOST_HEX  # host
            + "2385"  # port 9093 (uint16)
            "00"  # tag block of the endpoint
        ),
        id="VoteResponse-v2",
    ),
    pytest.param(
        BeginQuorumEpochRequest,
        1,
        BeginQuorumEpochRequest(
            cluster_id=CLUSTER_ID,
            voter_id=2,
            topics=(
                BeginQuorumEpochRequestTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        BeginQuorumEpochRequestPartition(
                            partition_index=0,
                            voter_directory_id=DIR_2,
                            leader_id=1,
                            leader_epoch=5,
                        ),
                    ),
                ),
            ),
            leader_endpoints=(
                BeginQuorumEpochRequestLeaderEndpoint(
                    name="CONTROLLER", host="localhost", port=9093
                ),
            ),
        ),
        bytes.fromhex(
            CLUSTER_ID_HEX  # cluster_id
            + "00000002"  # voter_id 2
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            + "d2" * 16  # voter_directory_id
            + "00000001"  # leader_id 1
            "00000005"  # leader_epoch 5
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "02"  # leader_endpoints: compact count 1 + 1
            + CONTROLLER_HEX  # name
            + LOCALHOST_HEX  # host
            + "2385"  # port 9093
            "00"  # tag block of the endpoint
            "00"  # tag block
        ),
        id="BeginQuorumEpochRequest-v1",
    ),
    pytest.param(
        BeginQuorumEpochResponse,
        1,
        BeginQuorumEpochResponse(
            error_code=0,
            topics=(
                BeginQuorumEpochResponseTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        BeginQuorumEpochResponsePartition(
                            partition_index=0, error_code=74, leader_id=3, leader_epoch=6
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "0000"  # error_code 0
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "004a"  # error_code 74 FENCED_LEADER_EPOCH
            "00000003"  # leader_id 3
            "00000006"  # leader_epoch 6
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block: NodeEndpoints empty, so left out
        ),
        id="BeginQuorumEpochResponse-v1",
    ),
    pytest.param(
        EndQuorumEpochRequest,
        1,
        EndQuorumEpochRequest(
            cluster_id=None,
            topics=(
                EndQuorumEpochRequestTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        EndQuorumEpochRequestPartition(
                            partition_index=0,
                            leader_id=1,
                            leader_epoch=5,
                            preferred_candidates=(
                                EndQuorumEpochRequestReplicaInfo(
                                    candidate_id=3, candidate_directory_id=DIR_3
                                ),
                                EndQuorumEpochRequestReplicaInfo(
                                    candidate_id=2, candidate_directory_id=DIR_2
                                ),
                            ),
                        ),
                    ),
                ),
            ),
            leader_endpoints=(
                EndQuorumEpochRequestLeaderEndpoint(
                    name="CONTROLLER", host="localhost", port=9093
                ),
            ),
        ),
        bytes.fromhex(
            "00"  # cluster_id: null
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "00000001"  # leader_id 1
            "00000005"  # leader_epoch 5
            "03"  # preferred_candidates: compact count 2 + 1 (v1+)
            "00000003"  # candidate_id 3
            + "d3" * 16  # candidate_directory_id
            + "00"  # tag block of the candidate
            "00000002"  # candidate_id 2
            + "d2" * 16  # candidate_directory_id
            + "00"  # tag block of the candidate
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "02"  # leader_endpoints: compact count 1 + 1
            + CONTROLLER_HEX  # name
            + LOCALHOST_HEX  # host
            + "2385"  # port 9093
            "00"  # tag block of the endpoint
            "00"  # tag block
        ),
        id="EndQuorumEpochRequest-v1",
    ),
    pytest.param(
        EndQuorumEpochResponse,
        1,
        EndQuorumEpochResponse(
            error_code=0,
            topics=(
                EndQuorumEpochResponseTopic(
                    topic_name="__cluster_metadata",
                    partitions=(
                        EndQuorumEpochResponsePartition(
                            partition_index=0, error_code=0, leader_id=1, leader_epoch=5
                        ),
                    ),
                ),
            ),
            node_endpoints=(
                EndQuorumEpochResponseNodeEndpoint(node_id=1, host="localhost", port=9093),
            ),
        ),
        bytes.fromhex(
            "0000"  # error_code 0
            "02"  # topics: compact count 1 + 1
            + METADATA_TOPIC_HEX  # topic_name
            + "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "0000"  # error_code 0
            "00000001"  # leader_id 1
            "00000005"  # leader_epoch 5
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "01"  # tag block: 1 tagged field
            "00" "12"  # tag 0 NodeEndpoints, 18 bytes
            "02"  # compact count 1 + 1
            "00000001"  # node_id 1
            + LOCALHOST_HEX  # host
            + "2385"  # port 9093
            "00"  # tag block of the endpoint
        ),
        id="EndQuorumEpochResponse-v1",
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


def test_vote_v1_cannot_carry_a_pre_vote() -> None:
    """PreVote exists from v2 on and is not ignorable: v1 must refuse it, not drop it."""
    from quorum.wire.errors import WireEncodeError

    request = VoteRequest(
        topics=(VoteRequestTopic(partitions=(VoteRequestPartition(pre_vote=True),)),)
    )
    with pytest.raises(WireEncodeError):
        encode(request, 1)
