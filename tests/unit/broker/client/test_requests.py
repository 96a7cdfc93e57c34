"""Requests the client builds for the data plane survive the wire at the versions it sends."""

from __future__ import annotations

from typing import Any

from broker.client import FetchPosition, TopicPartition
from broker.client.admin_requests import delete_records_request
from broker.client.fetch_core import ValidationPlan
from broker.client.leader_epochs import (
    OFFSET_FOR_LEADER_EPOCH_MAX_VERSION,
    OFFSET_FOR_LEADER_EPOCH_MIN_VERSION,
    can_validate,
    epoch_end_offsets,
    offset_for_leader_epoch_request,
)
from quorum.client import ClientConnection
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponsePartition,
    OffsetForLeaderEpochResponseTopic,
)
from quorum.wire.protocol import decode_request


def over_the_wire(message: Any, version: int) -> Any:
    _, frame = ClientConnection().send_request(message, version=version)
    return decode_request(frame[4:])[1]


def test_offset_for_leader_epoch_asks_as_a_consumer_with_both_epochs() -> None:
    plan = ValidationPlan(node=2, positions={
        TopicPartition("t", 0): FetchPosition(10, offset_epoch=4, leader=2, leader_epoch=7),
        TopicPartition("t", 3): FetchPosition(5, offset_epoch=6, leader=2, leader_epoch=7),
    })
    request = offset_for_leader_epoch_request(plan)
    for version in range(OFFSET_FOR_LEADER_EPOCH_MIN_VERSION, OFFSET_FOR_LEADER_EPOCH_MAX_VERSION + 1):
        decoded = over_the_wire(request, version)
        assert decoded.replica_id == -1
        [topic] = decoded.topics
        assert [(p.partition, p.current_leader_epoch, p.leader_epoch) for p in topic.partitions] \
            == [(0, 7, 4), (3, 7, 6)]


def test_epoch_end_offsets_are_read_per_partition() -> None:
    response = OffsetForLeaderEpochResponse(topics=(OffsetForLeaderEpochResponseTopic(
        topic="t", partitions=(
            OffsetForLeaderEpochResponsePartition(partition=0, leader_epoch=4, end_offset=8),
            OffsetForLeaderEpochResponsePartition(
                partition=1, error_code=Errors.FENCED_LEADER_EPOCH),
        )),))
    found = epoch_end_offsets(response)
    assert (found[TopicPartition("t", 0)].leader_epoch,
            found[TopicPartition("t", 0)].end_offset) == (4, 8)
    assert found[TopicPartition("t", 1)].error is Errors.FENCED_LEADER_EPOCH


def test_only_brokers_with_offset_for_leader_epoch_v3_can_validate_a_consumer() -> None:
    assert can_validate(None)
    assert can_validate({23: (0, 4)})
    assert not can_validate({23: (0, 2)})
    assert not can_validate({1: (0, 12)})


def test_delete_records_groups_partitions_by_topic() -> None:
    request = delete_records_request(
        {TopicPartition("a", 0): 5, TopicPartition("a", 2): -1, TopicPartition("b", 1): 9},
        timeout_ms=1_000,
    )
    decoded = over_the_wire(request, 2)
    assert decoded.timeout_ms == 1_000
    assert {(t.name, p.partition_index, p.offset) for t in decoded.topics for p in t.partitions} \
        == {("a", 0, 5), ("a", 2, -1), ("b", 1, 9)}
