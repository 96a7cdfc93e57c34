"""The consumer protocol's bytes: our own round trips, and kafka-python's v0 as the other side."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberAssignment_v0,
    ConsumerProtocolMemberMetadata_v0,
)

from broker.client.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    generation_user_data,
    read_generation_user_data,
)
from broker.client.errors import KafkaError
from broker.client.types import TopicPartition

topics = st.lists(st.text("abc.-_", min_size=1, max_size=5), unique=True, max_size=4)
partitions = st.lists(st.builds(TopicPartition, st.sampled_from("xyz"), st.integers(0, 9)),
                      unique=True, max_size=8)


@given(topics, partitions, st.integers(-1, 1000), st.none() | st.binary(max_size=8),
       st.none() | st.text("rk", min_size=1, max_size=3))
def test_a_subscription_reads_back_as_it_was_written(
    names: list[str], owned: list[TopicPartition], generation: int, user_data: bytes | None,
    rack: str | None,
) -> None:
    written = Subscription(topics=tuple(sorted(names)), owned_partitions=tuple(sorted(owned)),
                           generation_id=generation, user_data=user_data, rack_id=rack)
    assert decode_subscription(encode_subscription(written)) == written


@given(partitions, st.none() | st.binary(max_size=8))
def test_an_assignment_reads_back_as_it_was_written(
    assigned: list[TopicPartition], user_data: bytes | None
) -> None:
    written = Assignment(partitions=tuple(sorted(assigned)), user_data=user_data)
    assert decode_assignment(encode_assignment(written)) == written


def test_kafka_python_v0_metadata_is_read_and_our_assignment_is_read_by_it() -> None:
    theirs = ConsumerProtocolMemberMetadata_v0(0, ["orders", "audit"], b"ud").encode()
    read = decode_subscription(theirs, group_instance_id="i-1")
    assert (read.topics, read.user_data, read.owned_partitions, read.generation_id,
            read.group_instance_id) == (("orders", "audit"), b"ud", (), -1, "i-1")
    ours = encode_assignment(Assignment(partitions=(TopicPartition("orders", 2),
                                                    TopicPartition("orders", 0))))
    decoded = ConsumerProtocolMemberAssignment_v0.decode(ours)
    assert decoded.partitions() == [("orders", 0), ("orders", 2)]


def test_a_newer_version_is_read_as_the_highest_known_and_bad_headers_are_refused() -> None:
    written = encode_subscription(Subscription(topics=("t",), generation_id=7))
    future = struct.pack(">h", 9) + written[2:] + b"extra fields of v9"
    assert decode_subscription(future).generation_id == 7
    with pytest.raises(KafkaError, match="not valid"):
        decode_subscription(struct.pack(">h", -1) + written[2:])
    with pytest.raises(KafkaError, match="cut short"):
        decode_subscription(b"\x00")
    assert decode_assignment(b"") == Assignment()


def test_the_cooperative_user_data_carries_the_generation() -> None:
    assert read_generation_user_data(generation_user_data(42)) == 42
    assert read_generation_user_data(None) is None
    assert read_generation_user_data(b"\x01") == -1
