"""Golden bytes for client APIs, written by hand from Kafka's JSON message schemas.

Every vector is checked both ways: our encoder must produce exactly these
bytes, and our decoder must turn them back into exactly the message.  The
bytes are hex literals with one comment per field; none were produced by our
own encoder.  Flexible versions use compact lengths (length + 1 as an
unsigned varint) and end every struct with a tag block (``00`` when empty).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from quorum.wire.codec import decode, encode
from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ApiVersionsResponseSupportedFeatureKey,
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
)
from quorum.wire.uuids import ZERO_UUID

TOPIC_ID = uuid.UUID("000102030405060708090a0b0c0d0e0f")

# One record batch v2 (magic 2) holding one record: key null, value "hi".
# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
BATCH = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "0000003a"  # batchLength 58 (bytes after this field)
    "ffffffff"  # partitionLeaderEpoch -1
    "02"  # magic 2
    "bbcc4115"  # CRC-32C of attributes..end
    "0000"  # attributes: no compression, CreateTime
    "00000000"  # lastOffsetDelta 0
    "0000018bcfe56800"  # baseTimestamp 1700000000000
    "0000018bcfe56800"  # maxTimestamp
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # recordCount 1
    "10"  # record length 8 (zigzag varint)
    "00"  # record attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "01"  # keyLength -1 (null key)
    "04"  # valueLength 2
    "6869"  # value "hi"
    "00"  # headers count 0
)
assert len(BATCH) == 70

CASES: list[Any] = [
    pytest.param(
        ApiVersionsRequest,
        0,
        ApiVersionsRequest(),
        b"",  # v0 has no fields
        id="ApiVersionsRequest-v0",
    ),
    pytest.param(
        ApiVersionsRequest,
        3,
        ApiVersionsRequest(client_software_name="pykraft", client_software_version="0.1.0"),
        bytes.fromhex(
            "08" "70796b72616674"  # client_software_name "pykraft" (compact, 7 + 1)
            "06" "302e312e30"  # client_software_version "0.1.0"
            "00"  # tag block: empty
        ),
        id="ApiVersionsRequest-v3",
    ),
    pytest.param(
        ApiVersionsResponse,
        0,
        ApiVersionsResponse(
            error_code=0,
            api_keys=(
                ApiVersionsResponseApiVersion(api_key=0, min_version=0, max_version=9),
                ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),
            ),
        ),
        bytes.fromhex(
            "0000"  # error_code 0
            "00000002"  # api_keys: int32 count 2
            "0000" "0000" "0009"  # Produce 0..9
            "0012" "0000" "0004"  # ApiVersions 0..4
        ),
        id="ApiVersionsResponse-v0",
    ),
    pytest.param(
        ApiVersionsResponse,
        0,
        ApiVersionsResponse(
            error_code=35,
            api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),),
        ),
        bytes.fromhex(
            "0023"  # error_code 35 UNSUPPORTED_VERSION
            "00000001"  # api_keys: int32 count 1
            "0012" "0000" "0004"  # only the ApiVersions row (KIP-511)
        ),
        id="ApiVersionsResponse-v0-unsupported-version",
    ),
    pytest.param(
        ApiVersionsResponse,
        3,
        ApiVersionsResponse(
            error_code=0,
            api_keys=(
                ApiVersionsResponseApiVersion(api_key=0, min_version=0, max_version=9),
                ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),
            ),
            throttle_time_ms=0,
            supported_features=(
                ApiVersionsResponseSupportedFeatureKey(
                    name="kraft.version", min_version=0, max_version=1
                ),
            ),
            finalized_features_epoch=5,
        ),
        bytes.fromhex(
            "0000"  # error_code 0
            "03"  # api_keys: compact count 2 + 1
            "0000" "0000" "0009" "00"  # Produce 0..9, tag block
            "0012" "0000" "0004" "00"  # ApiVersions 0..4, tag block
            "00000000"  # throttle_time_ms 0
            "02"  # tag block: 2 tagged fields
            "00" "14"  # tag 0 SupportedFeatures, 20 bytes
            "02"  # compact count 1 + 1
            "0e" "6b726166742e76657273696f6e"  # name "kraft.version"
            "0000" "0001"  # min_version 0, max_version 1
            "00"  # tag block of the feature
            "01" "08"  # tag 1 FinalizedFeaturesEpoch, 8 bytes
            "0000000000000005"  # 5
        ),
        id="ApiVersionsResponse-v3",
    ),
    pytest.param(
        MetadataRequest,
        12,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=ZERO_UUID, name="events"),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
        bytes.fromhex(
            "02"  # topics: compact count 1 + 1
            "00000000000000000000000000000000"  # topic_id: zero uuid (look up by name)
            "07" "6576656e7473"  # name "events" (compact nullable)
            "00"  # tag block of the topic
            "00"  # allow_auto_topic_creation false
            "00"  # include_topic_authorized_operations false
            "00"  # tag block
        ),
        id="MetadataRequest-v12",
    ),
    pytest.param(
        MetadataRequest,
        12,
        MetadataRequest(topics=None, allow_auto_topic_creation=True),
        bytes.fromhex(
            "00"  # topics: null (every topic)
            "01"  # allow_auto_topic_creation true
            "00"  # include_topic_authorized_operations false
            "00"  # tag block
        ),
        id="MetadataRequest-v12-all-topics",
    ),
    pytest.param(
        MetadataResponse,
        12,
        MetadataResponse(
            throttle_time_ms=0,
            brokers=(MetadataResponseBroker(node_id=1, host="localhost", port=9092, rack=None),),
            cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
            controller_id=1,
            topics=(
                MetadataResponseTopic(
                    error_code=0,
                    name="events",
                    topic_id=TOPIC_ID,
                    is_internal=False,
                    partitions=(
                        MetadataResponsePartition(
                            error_code=0,
                            partition_index=0,
                            leader_id=1,
                            leader_epoch=3,
                            replica_nodes=(1,),
                            isr_nodes=(1,),
                            offline_replicas=(),
                        ),
                    ),
                    topic_authorized_operations=-2147483648,
                ),
            ),
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "02"  # brokers: compact count 1 + 1
            "00000001"  # node_id 1
            "0a" "6c6f63616c686f7374"  # host "localhost"
            "00002384"  # port 9092
            "00"  # rack: null
            "00"  # tag block of the broker
            "17" "4d6b55334f4556424e5463774e544a454e444d32516b"  # cluster_id (22 chars)
            "00000001"  # controller_id 1
            "02"  # topics: compact count 1 + 1
            "0000"  # error_code 0
            "07" "6576656e7473"  # name "events"
            "000102030405060708090a0b0c0d0e0f"  # topic_id
            "00"  # is_internal false
            "02"  # partitions: compact count 1 + 1
            "0000"  # error_code 0
            "00000000"  # partition_index 0
            "00000001"  # leader_id 1
            "00000003"  # leader_epoch 3
            "02" "00000001"  # replica_nodes [1]
            "02" "00000001"  # isr_nodes [1]
            "01"  # offline_replicas []
            "00"  # tag block of the partition
            "80000000"  # topic_authorized_operations INT32_MIN (not requested)
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="MetadataResponse-v12",
    ),
    pytest.param(
        ProduceRequest,
        9,
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=30000,
            topic_data=(
                ProduceRequestTopic(
                    name="events",
                    partition_data=(ProduceRequestPartition(index=0, records=BATCH),),
                ),
            ),
        ),
        bytes.fromhex(
            "00"  # transactional_id: null
            "ffff"  # acks -1 (all)
            "00007530"  # timeout_ms 30000
            "02"  # topic_data: compact count 1 + 1
            "07" "6576656e7473"  # name "events"
            "02"  # partition_data: compact count 1 + 1
            "00000000"  # index 0
            "47"  # records: compact length 70 + 1
        )
        + BATCH
        + bytes.fromhex(
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="ProduceRequest-v9",
    ),
    pytest.param(
        FetchResponse,
        12,
        FetchResponse(
            throttle_time_ms=0,
            error_code=0,
            session_id=0,
            responses=(
                FetchResponseTopic(
                    topic="events",
                    partitions=(
                        FetchResponsePartition(
                            partition_index=0,
                            error_code=0,
                            high_watermark=1,
                            last_stable_offset=1,
                            log_start_offset=0,
                            aborted_transactions=None,
                            preferred_read_replica=-1,
                            records=BATCH,
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0
            "00000000"  # session_id 0 (no fetch session)
            "02"  # responses: compact count 1 + 1
            "07" "6576656e7473"  # topic "events"
            "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "0000"  # error_code 0
            "0000000000000001"  # high_watermark 1
            "0000000000000001"  # last_stable_offset 1
            "0000000000000000"  # log_start_offset 0
            "00"  # aborted_transactions: null
            "ffffffff"  # preferred_read_replica -1
            "47"  # records: compact length 70 + 1
        )
        + BATCH
        + bytes.fromhex(
            "00"  # tag block of the partition (DivergingEpoch etc. at defaults)
            "00"  # tag block of the topic
            "00"  # tag block (no NodeEndpoints below v16)
        ),
        id="FetchResponse-v12",
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
