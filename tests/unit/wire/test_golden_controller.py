"""Golden bytes for broker-to-controller RPCs and the LeaderChange control record.

Written by hand from Kafka's JSON message schemas (BrokerRegistration v4,
BrokerHeartbeat v1, AlterPartition v3, LeaderChangeMessage v0 and v1) and
checked both ways: encode == bytes, decode == message.  All are flexible from
v0: compact lengths (n + 1) and a tag block at the end of every struct.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from quorum.wire.codec import decode, encode
from quorum.wire.messages import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartition,
    AlterPartitionRequestTopic,
    AlterPartitionResponse,
    AlterPartitionResponsePartition,
    AlterPartitionResponseTopic,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
    LeaderChangeMessage,
    LeaderChangeVoter,
)

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
INCARNATION_ID = uuid.UUID(hex="1c" * 16)
LOG_DIR = uuid.UUID(hex="ad" * 16)
TOPIC_ID = uuid.UUID("000102030405060708090a0b0c0d0e0f")
DIR_1 = uuid.UUID(hex="d1" * 16)
DIR_2 = uuid.UUID(hex="d2" * 16)

# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
CASES: list[Any] = [
    pytest.param(
        BrokerRegistrationRequest,
        4,
        BrokerRegistrationRequest(
            broker_id=4,
            cluster_id=CLUSTER_ID,
            incarnation_id=INCARNATION_ID,
            listeners=(
                BrokerRegistrationRequestListener(
                    name="PLAINTEXT", host="localhost", port=9092, security_protocol=0
                ),
            ),
            features=(
                BrokerRegistrationRequestFeature(
                    name="metadata.version", min_supported_version=1, max_supported_version=21
                ),
            ),
            rack="rack-a",
            is_migrating_zk_broker=False,
            log_dirs=(LOG_DIR,),
            previous_broker_epoch=-1,
        ),
        bytes.fromhex(
            "00000004"  # broker_id 4
            "17" "4d6b55334f4556424e5463774e544a454e444d32516b"  # cluster_id
            + "1c" * 16  # incarnation_id
            + "02"  # listeners: compact count 1 + 1
            "0a" "504c41494e54455854"  # name "PLAINTEXT"
            "0a" "6c6f63616c686f7374"  # host "localhost"
            "2384"  # port 9092 (uint16)
            "0000"  # security_protocol 0 (PLAINTEXT)
            "00"  # tag block of the listener
            "02"  # features: compact count 1 + 1
            "11" "6d657461646174612e76657273696f6e"  # name "metadata.version"
            "0001"  # min_supported_version 1
            "0015"  # max_supported_version 21
            "00"  # tag block of the feature
            "07" "7261636b2d61"  # rack "rack-a" (compact nullable)
            "00"  # is_migrating_zk_broker false (v1+)
            "02"  # log_dirs: compact count 1 + 1 (v2+)
            + "ad" * 16
            + "ffffffffffffffff"  # previous_broker_epoch -1 (v3+)
            "00"  # tag block
        ),
        id="BrokerRegistrationRequest-v4",
    ),
    pytest.param(
        BrokerRegistrationResponse,
        4,
        BrokerRegistrationResponse(throttle_time_ms=0, error_code=0, broker_epoch=42),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "000000000000002a"  # broker_epoch 42 (offset of its registration record)
            "00"  # tag block
        ),
        id="BrokerRegistrationResponse-v4",
    ),
    pytest.param(
        BrokerHeartbeatRequest,
        1,
        BrokerHeartbeatRequest(
            broker_id=4,
            broker_epoch=42,
            current_metadata_offset=57,
            want_fence=False,
            want_shut_down=True,
            offline_log_dirs=(LOG_DIR,),
        ),
        bytes.fromhex(
            "00000004"  # broker_id 4
            "000000000000002a"  # broker_epoch 42
            "0000000000000039"  # current_metadata_offset 57
            "00"  # want_fence false
            "01"  # want_shut_down true
            "01"  # tag block: 1 tagged field
            "00" "11"  # tag 0 OfflineLogDirs (v1+), 17 bytes
            "02"  # compact count 1 + 1
            + "ad" * 16
        ),
        id="BrokerHeartbeatRequest-v1",
    ),
    pytest.param(
        BrokerHeartbeatResponse,
        1,
        BrokerHeartbeatResponse(
            throttle_time_ms=0,
            error_code=0,
            is_caught_up=True,
            is_fenced=False,
            should_shut_down=False,
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "01"  # is_caught_up true
            "00"  # is_fenced false
            "00"  # should_shut_down false
            "00"  # tag block
        ),
        id="BrokerHeartbeatResponse-v1",
    ),
    pytest.param(
        AlterPartitionRequest,
        3,
        AlterPartitionRequest(
            broker_id=4,
            broker_epoch=42,
            topics=(
                AlterPartitionRequestTopic(
                    topic_id=TOPIC_ID,
                    partitions=(
                        AlterPartitionRequestPartition(
                            partition_index=2,
                            leader_epoch=7,
                            new_isr_with_epochs=(
                                AlterPartitionRequestBrokerState(broker_id=4, broker_epoch=42),
                                AlterPartitionRequestBrokerState(broker_id=5, broker_epoch=50),
                            ),
                            leader_recovery_state=0,
                            partition_epoch=11,
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000004"  # broker_id 4
            "000000000000002a"  # broker_epoch 42
            "02"  # topics: compact count 1 + 1
            "000102030405060708090a0b0c0d0e0f"  # topic_id (v2+; no topic name)
            "02"  # partitions: compact count 1 + 1
            "00000002"  # partition_index 2
            "00000007"  # leader_epoch 7
            "03"  # new_isr_with_epochs: compact count 2 + 1 (v3+; no NewIsr)
            "00000004" "000000000000002a" "00"  # broker 4 at epoch 42, tag block
            "00000005" "0000000000000032" "00"  # broker 5 at epoch 50, tag block
            "00"  # leader_recovery_state 0 (RECOVERED)
            "0000000b"  # partition_epoch 11
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="AlterPartitionRequest-v3",
    ),
    pytest.param(
        AlterPartitionResponse,
        3,
        AlterPartitionResponse(
            throttle_time_ms=0,
            error_code=0,
            topics=(
                AlterPartitionResponseTopic(
                    topic_id=TOPIC_ID,
                    partitions=(
                        AlterPartitionResponsePartition(
                            partition_index=2,
                            error_code=0,
                            leader_id=4,
                            leader_epoch=7,
                            isr=(4, 5),
                            leader_recovery_state=0,
                            partition_epoch=12,
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "02"  # topics: compact count 1 + 1
            "000102030405060708090a0b0c0d0e0f"  # topic_id
            "02"  # partitions: compact count 1 + 1
            "00000002"  # partition_index 2
            "0000"  # error_code 0
            "00000004"  # leader_id 4
            "00000007"  # leader_epoch 7
            "03" "00000004" "00000005"  # isr [4, 5]
            "00"  # leader_recovery_state 0
            "0000000c"  # partition_epoch 12
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="AlterPartitionResponse-v3",
    ),
    pytest.param(
        LeaderChangeMessage,
        1,
        LeaderChangeMessage(
            version=1,
            leader_id=1,
            voters=(
                LeaderChangeVoter(voter_id=1, voter_directory_id=DIR_1),
                LeaderChangeVoter(voter_id=2, voter_directory_id=DIR_2),
            ),
            granting_voters=(LeaderChangeVoter(voter_id=1, voter_directory_id=DIR_1),),
        ),
        bytes.fromhex(
            "0001"  # version 1
            "00000001"  # leader_id 1
            "03"  # voters: compact count 2 + 1
            "00000001" + "d1" * 16 + "00"  # voter 1, directory id (v1+), tag block
            "00000002" + "d2" * 16 + "00"  # voter 2
            "02"  # granting_voters: compact count 1 + 1
            "00000001" + "d1" * 16 + "00"  # voter 1
            "00"  # tag block
        ),
        id="LeaderChangeMessage-v1",
    ),
    pytest.param(
        LeaderChangeMessage,
        0,
        LeaderChangeMessage(
            version=0,
            leader_id=1,
            voters=(LeaderChangeVoter(voter_id=1), LeaderChangeVoter(voter_id=2)),
            granting_voters=(LeaderChangeVoter(voter_id=1),),
        ),
        bytes.fromhex(
            "0000"  # version 0
            "00000001"  # leader_id 1
            "03"  # voters: compact count 2 + 1
            "00000001" "00"  # voter 1 (no directory id before v1), tag block
            "00000002" "00"  # voter 2
            "02"  # granting_voters: compact count 1 + 1
            "00000001" "00"  # voter 1
            "00"  # tag block
        ),
        id="LeaderChangeMessage-v0",
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
