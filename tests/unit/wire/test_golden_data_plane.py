"""Golden bytes for the data plane's APIs, written by hand from Kafka's JSON message schemas.

OffsetForLeaderEpoch (23), DeleteRecords (21) and DescribeLogDirs (35) at the
versions where their layouts change, plus the versions of Produce (0-2) and
DescribeConfigs (0) that kafka-python's classes do not cover (the
differential test checks the others against kafka-python).  As in
``test_golden_client``, every vector is checked both ways, none of the bytes
came from our encoder, and each line is one wire field.
"""

from __future__ import annotations

from typing import Any

import pytest

from quorum.wire.codec import decode, encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    DeleteRecordsResponsePartition,
    DeleteRecordsResponseTopic,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseResourceResult,
    DescribeConfigsResponseResult,
    DescribeLogDirsRequest,
    DescribeLogDirsRequestTopic,
    DescribeLogDirsResponse,
    DescribeLogDirsResponsePartition,
    DescribeLogDirsResponseResult,
    DescribeLogDirsResponseTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponsePartition,
    OffsetForLeaderEpochResponseTopic,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    ProduceResponse,
    ProduceResponsePartition,
    ProduceResponseTopic,
)


def epoch_request(**fields: Any) -> OffsetForLeaderEpochRequest:
    partition = OffsetForLeaderEpochRequestPartition(
        partition=0, current_leader_epoch=fields.pop("current_leader_epoch", -1), leader_epoch=3
    )
    topic = OffsetForLeaderEpochRequestTopic(topic="events", partitions=(partition,))
    return OffsetForLeaderEpochRequest(topics=(topic,), **fields)


def epoch_response(
    *, error: int = 0, leader_epoch: int = -1, end_offset: int = 42, throttle: int = 0
) -> OffsetForLeaderEpochResponse:
    partition = OffsetForLeaderEpochResponsePartition(
        error_code=error, partition=0, leader_epoch=leader_epoch, end_offset=end_offset
    )
    topic = OffsetForLeaderEpochResponseTopic(topic="events", partitions=(partition,))
    return OffsetForLeaderEpochResponse(throttle_time_ms=throttle, topics=(topic,))


DELETE_REQUEST = DeleteRecordsRequest(
    topics=(
        DeleteRecordsRequestTopic(
            name="events",
            partitions=(DeleteRecordsRequestPartition(partition_index=0, offset=100),),
        ),
    ),
    timeout_ms=30000,
)


def delete_response(*, low_watermark: int, error: int) -> DeleteRecordsResponse:
    partition = DeleteRecordsResponsePartition(
        partition_index=0, low_watermark=low_watermark, error_code=error
    )
    return DeleteRecordsResponse(
        topics=(DeleteRecordsResponseTopic(name="events", partitions=(partition,)),)
    )


def log_dirs_response(**fields: Any) -> DescribeLogDirsResponse:
    partition = DescribeLogDirsResponsePartition(
        partition_index=0, partition_size=70, offset_lag=0, is_future_key=False
    )
    result = DescribeLogDirsResponseResult(
        log_dir="/data",
        topics=(DescribeLogDirsResponseTopic(name="events", partitions=(partition,)),),
        total_bytes=fields.pop("total_bytes", -1),
        usable_bytes=fields.pop("usable_bytes", -1),
    )
    return DescribeLogDirsResponse(results=(result,), **fields)


# A message set of one message v0 (magic 0, key null, value "hi"): what
# Produce v0-2 carry.  The codec keeps it as opaque bytes.
# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
MESSAGE_SET_V0 = bytes.fromhex(
    "0000000000000000"  # offset 0
    "00000010"  # message size 16
    "fd6ebddb"  # CRC-32 of magic..value
    "00"  # magic 0
    "00"  # attributes
    "ffffffff"  # key: null
    "00000002" "6869"  # value "hi"
)

CASES: list[Any] = [
    # -- OffsetForLeaderEpoch (23) ------------------------------------------------
    pytest.param(
        OffsetForLeaderEpochRequest, 0, epoch_request(),
        bytes.fromhex(
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000001"  # partitions: 1
            "00000000"  # partition 0
            "00000003"  # leader_epoch 3 (no current_leader_epoch before v2)
        ),
        id="OffsetForLeaderEpochRequest-v0",
    ),
    pytest.param(
        OffsetForLeaderEpochRequest, 2, epoch_request(current_leader_epoch=5),
        bytes.fromhex(
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000001"  # partitions: 1
            "00000000"  # partition 0
            "00000005"  # current_leader_epoch 5 (v2+)
            "00000003"  # leader_epoch 3
        ),
        id="OffsetForLeaderEpochRequest-v2",
    ),
    pytest.param(
        OffsetForLeaderEpochRequest, 3, epoch_request(replica_id=-1, current_leader_epoch=5),
        bytes.fromhex(
            "ffffffff"  # replica_id -1: a consumer (v3+)
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000001"  # partitions: 1
            "00000000"  # partition 0
            "00000005"  # current_leader_epoch 5
            "00000003"  # leader_epoch 3
        ),
        id="OffsetForLeaderEpochRequest-v3",
    ),
    pytest.param(
        OffsetForLeaderEpochRequest, 4, epoch_request(replica_id=2, current_leader_epoch=5),
        bytes.fromhex(
            "00000002"  # replica_id 2: a follower
            "02"  # topics: compact count 1 + 1
            "07" "6576656e7473"  # topic "events"
            "02"  # partitions: compact count 1 + 1
            "00000000"  # partition 0
            "00000005"  # current_leader_epoch 5
            "00000003"  # leader_epoch 3
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="OffsetForLeaderEpochRequest-v4",
    ),
    pytest.param(
        OffsetForLeaderEpochResponse, 0, epoch_response(),
        bytes.fromhex(
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000001"  # partitions: 1
            "0000"  # error_code 0
            "00000000"  # partition 0
            "000000000000002a"  # end_offset 42 (no leader_epoch before v1)
        ),
        id="OffsetForLeaderEpochResponse-v0",
    ),
    pytest.param(
        OffsetForLeaderEpochResponse, 1, epoch_response(leader_epoch=3),
        bytes.fromhex(
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000001"  # partitions: 1
            "0000"  # error_code 0
            "00000000"  # partition 0
            "00000003"  # leader_epoch 3 (v1+)
            "000000000000002a"  # end_offset 42
        ),
        id="OffsetForLeaderEpochResponse-v1",
    ),
    pytest.param(
        OffsetForLeaderEpochResponse, 2, epoch_response(leader_epoch=3, throttle=7),
        bytes.fromhex(
            "00000007"  # throttle_time_ms 7 (v2+)
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000001"  # partitions: 1
            "0000"  # error_code 0
            "00000000"  # partition 0
            "00000003"  # leader_epoch 3
            "000000000000002a"  # end_offset 42
        ),
        id="OffsetForLeaderEpochResponse-v2",
    ),
    pytest.param(
        OffsetForLeaderEpochResponse, 4,
        epoch_response(error=Errors.UNKNOWN_LEADER_EPOCH, end_offset=-1),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "02"  # topics: compact count 1 + 1
            "07" "6576656e7473"  # topic "events"
            "02"  # partitions: compact count 1 + 1
            "004b"  # error_code 75 UNKNOWN_LEADER_EPOCH
            "00000000"  # partition 0
            "ffffffff"  # leader_epoch -1
            "ffffffffffffffff"  # end_offset -1
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="OffsetForLeaderEpochResponse-v4",
    ),
    # -- DeleteRecords (21) -------------------------------------------------------
    pytest.param(
        DeleteRecordsRequest, 0, DELETE_REQUEST,
        bytes.fromhex(
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # name "events"
            "00000001"  # partitions: 1
            "00000000"  # partition_index 0
            "0000000000000064"  # offset 100: delete every record before it
            "00007530"  # timeout_ms 30000
        ),
        id="DeleteRecordsRequest-v0",
    ),
    pytest.param(
        DeleteRecordsRequest, 2, DELETE_REQUEST,
        bytes.fromhex(
            "02"  # topics: compact count 1 + 1
            "07" "6576656e7473"  # name "events"
            "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "0000000000000064"  # offset 100
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00007530"  # timeout_ms 30000
            "00"  # tag block
        ),
        id="DeleteRecordsRequest-v2",
    ),
    pytest.param(
        DeleteRecordsResponse, 0, delete_response(low_watermark=100, error=0),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # name "events"
            "00000001"  # partitions: 1
            "00000000"  # partition_index 0
            "0000000000000064"  # low_watermark 100
            "0000"  # error_code 0
        ),
        id="DeleteRecordsResponse-v0",
    ),
    pytest.param(
        DeleteRecordsResponse, 2,
        delete_response(low_watermark=-1, error=Errors.OFFSET_OUT_OF_RANGE),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "02"  # topics: compact count 1 + 1
            "07" "6576656e7473"  # name "events"
            "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "ffffffffffffffff"  # low_watermark -1
            "0001"  # error_code 1 OFFSET_OUT_OF_RANGE
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="DeleteRecordsResponse-v2",
    ),
    # -- DescribeLogDirs (35) -----------------------------------------------------
    pytest.param(
        DescribeLogDirsRequest, 0, DescribeLogDirsRequest(topics=None),
        bytes.fromhex(
            "ffffffff"  # topics: null (every partition)
        ),
        id="DescribeLogDirsRequest-v0-all",
    ),
    pytest.param(
        DescribeLogDirsRequest, 1,
        DescribeLogDirsRequest(topics=(DescribeLogDirsRequestTopic(topic="events", partitions=(0, 1)),)),
        bytes.fromhex(
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # topic "events"
            "00000002" "00000000" "00000001"  # partitions [0, 1]
        ),
        id="DescribeLogDirsRequest-v1",
    ),
    pytest.param(
        DescribeLogDirsRequest, 2,
        DescribeLogDirsRequest(topics=(DescribeLogDirsRequestTopic(topic="events", partitions=(0, 1)),)),
        bytes.fromhex(
            "02"  # topics: compact count 1 + 1
            "07" "6576656e7473"  # topic "events"
            "03" "00000000" "00000001"  # partitions [0, 1]: compact count 2 + 1
            "00"  # tag block of the topic
            "00"  # tag block
        ),
        id="DescribeLogDirsRequest-v2",
    ),
    pytest.param(
        DescribeLogDirsRequest, 4, DescribeLogDirsRequest(topics=None),
        bytes.fromhex(
            "00"  # topics: null (every partition)
            "00"  # tag block
        ),
        id="DescribeLogDirsRequest-v4-all",
    ),
    pytest.param(
        DescribeLogDirsResponse, 0, log_dirs_response(),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "00000001"  # results: 1
            "0000"  # error_code 0
            "0005" "2f64617461"  # log_dir "/data"
            "00000001"  # topics: 1
            "0006" "6576656e7473"  # name "events"
            "00000001"  # partitions: 1
            "00000000"  # partition_index 0
            "0000000000000046"  # partition_size 70
            "0000000000000000"  # offset_lag 0
            "00"  # is_future_key false
        ),
        id="DescribeLogDirsResponse-v0",
    ),
    pytest.param(
        DescribeLogDirsResponse, 4,
        log_dirs_response(error_code=0, total_bytes=1 << 20, usable_bytes=1 << 19),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "0000"  # error_code 0 (v3+)
            "02"  # results: compact count 1 + 1
            "0000"  # error_code 0
            "06" "2f64617461"  # log_dir "/data"
            "02"  # topics: compact count 1 + 1
            "07" "6576656e7473"  # name "events"
            "02"  # partitions: compact count 1 + 1
            "00000000"  # partition_index 0
            "0000000000000046"  # partition_size 70
            "0000000000000000"  # offset_lag 0
            "00"  # is_future_key false
            "00"  # tag block of the partition
            "00"  # tag block of the topic
            "0000000000100000"  # total_bytes 1 MiB (v4+)
            "0000000000080000"  # usable_bytes 512 KiB (v4+)
            "00"  # tag block of the result
            "00"  # tag block
        ),
        id="DescribeLogDirsResponse-v4",
    ),
    # -- Produce (0) v0-2: decoded to be answered with UNSUPPORTED_FOR_MESSAGE_FORMAT --
    pytest.param(
        ProduceRequest, 0,
        ProduceRequest(
            acks=1, timeout_ms=1000,
            topic_data=(
                ProduceRequestTopic(
                    name="events",
                    partition_data=(ProduceRequestPartition(index=0, records=MESSAGE_SET_V0),),
                ),
            ),
        ),
        bytes.fromhex(
            "0001"  # acks 1 (no transactional_id before v3)
            "000003e8"  # timeout_ms 1000
            "00000001"  # topic_data: 1
            "0006" "6576656e7473"  # name "events"
            "00000001"  # partition_data: 1
            "00000000"  # index 0
            "0000001c"  # records: 28 bytes
        )
        + MESSAGE_SET_V0,
        id="ProduceRequest-v0",
    ),
    pytest.param(
        ProduceResponse, 0,
        ProduceResponse(
            responses=(
                ProduceResponseTopic(
                    name="events",
                    partition_responses=(
                        ProduceResponsePartition(
                            index=0, error_code=Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                            base_offset=-1,
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000001"  # responses: 1
            "0006" "6576656e7473"  # name "events"
            "00000001"  # partition_responses: 1
            "00000000"  # index 0
            "002b"  # error_code 43 UNSUPPORTED_FOR_MESSAGE_FORMAT
            "ffffffffffffffff"  # base_offset -1 (nothing appended)
        ),
        id="ProduceResponse-v0",
    ),
    pytest.param(
        ProduceResponse, 2,
        ProduceResponse(
            responses=(
                ProduceResponseTopic(
                    name="events",
                    partition_responses=(
                        ProduceResponsePartition(
                            index=0, error_code=Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                            base_offset=-1, log_append_time_ms=-1,
                        ),
                    ),
                ),
            ),
            throttle_time_ms=0,
        ),
        bytes.fromhex(
            "00000001"  # responses: 1
            "0006" "6576656e7473"  # name "events"
            "00000001"  # partition_responses: 1
            "00000000"  # index 0
            "002b"  # error_code 43 UNSUPPORTED_FOR_MESSAGE_FORMAT
            "ffffffffffffffff"  # base_offset -1
            "ffffffffffffffff"  # log_append_time_ms -1 (v2+)
            "00000000"  # throttle_time_ms 0 (v1+, after the responses)
        ),
        id="ProduceResponse-v2",
    ),
    # -- DescribeConfigs (32) v0 --------------------------------------------------
    pytest.param(
        DescribeConfigsRequest, 0,
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsRequestResource(
                    resource_type=2, resource_name="events", configuration_keys=None
                ),
            ),
        ),
        bytes.fromhex(
            "00000001"  # resources: 1
            "02"  # resource_type 2 (topic)
            "0006" "6576656e7473"  # resource_name "events"
            "ffffffff"  # configuration_keys: null (every key)
        ),
        id="DescribeConfigsRequest-v0",
    ),
    pytest.param(
        DescribeConfigsResponse, 0,
        DescribeConfigsResponse(
            results=(
                DescribeConfigsResponseResult(
                    error_message=None, resource_type=2, resource_name="events",
                    configs=(
                        DescribeConfigsResponseResourceResult(
                            name="cleanup.policy", value="delete", is_default=True
                        ),
                    ),
                ),
            ),
        ),
        bytes.fromhex(
            "00000000"  # throttle_time_ms 0
            "00000001"  # results: 1
            "0000"  # error_code 0
            "ffff"  # error_message: null
            "02"  # resource_type 2 (topic)
            "0006" "6576656e7473"  # resource_name "events"
            "00000001"  # configs: 1
            "000e" "636c65616e75702e706f6c696379"  # name "cleanup.policy"
            "0006" "64656c657465"  # value "delete"
            "00"  # read_only false
            "01"  # is_default true (v0 only; config_source from v1)
            "00"  # is_sensitive false
        ),
        id="DescribeConfigsResponse-v0",
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
