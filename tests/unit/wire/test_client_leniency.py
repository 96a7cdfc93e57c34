"""What the codec accepts from Kafka clients: what Kafka's own request parsing accepts.

Kafka reads a request with ``RequestHeader.parse`` and the ``read`` methods that
``MessageDataGenerator`` writes from the JSON schemas, and
``RequestContext.parseRequest`` never asks whether the body used the whole
frame.  Each test below names the behaviour it mirrors; docs/design.md ("What
the codec accepts from clients") lists them with the few places where we stay
stricter on purpose.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import attrs
import pytest

from quorum.wire import ApiKey
from quorum.wire.apis import (
    API_BY_KEY,
    CLIENT_LISTENER_VERSIONS,
    CONTROLLER_LISTENER_VERSIONS,
    PEER_ONLY_APIS,
)
from quorum.wire.codec import decode, encode
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    CreateTopicsRequest,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    MetadataRequest,
    MetadataRequestTopic,
    ProduceRequest,
)
from quorum.wire.protocol import RequestHeader, decode_request, encode_request
from quorum.wire.schema import INT32, field, message, struct
from tests.unit.wire.strategies import random_message


def _advertised() -> list[Any]:
    """(api key, version) of every request a listener advertises, named."""
    tables = (CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS)
    cases = []
    for key in sorted(set(CLIENT_LISTENER_VERSIONS) | set(CONTROLLER_LISTENER_VERSIONS)):
        ranges = [table[key] for table in tables if key in table]
        for version in range(min(lo for lo, _ in ranges), max(hi for _, hi in ranges) + 1):
            cases.append(pytest.param(key, version, id=f"{API_BY_KEY[key].name}-v{version}"))
    return cases


def _framed(key: int, version: int) -> tuple[RequestHeader, Any, bytes]:
    spec = API_BY_KEY[key]
    rng = random.Random(zlib.crc32(f"{spec.name}-{version}".encode()))
    message_ = random_message(spec.request, version, rng)
    header = RequestHeader(api_key=key, api_version=version, correlation_id=9, client_id="c")
    return header, message_, encode_request(header, message_)[4:]


# -- bytes after a complete body -------------------------------------------------


@pytest.mark.parametrize(("key", "version"), _advertised())
def test_bytes_after_a_complete_body_are_ignored_unless_only_our_nodes_send_it(
    key: int, version: int
) -> None:
    header, sent, payload = _framed(key, version)
    assert decode_request(payload) == (header, sent)
    if key in PEER_ONLY_APIS:
        with pytest.raises(WireDecodeError, match=r"3 unexpected trailing bytes"):
            decode_request(payload + b"\x01\x00\x00")
    else:
        assert decode_request(payload + b"\x01\x00\x00") == (header, sent)


def test_no_request_a_kafka_client_sends_is_peer_only() -> None:
    assert not PEER_ONLY_APIS & set(CLIENT_LISTENER_VERSIONS)
    # served on the controller listener too, and sent by clients (consumers,
    # kafka-python's describe_metadata_quorum, Admin.unregisterBroker)
    for key in (ApiKey.FETCH, ApiKey.DESCRIBE_QUORUM, ApiKey.UNREGISTER_BROKER,
                ApiKey.CREATE_TOPICS, ApiKey.DESCRIBE_CLUSTER, ApiKey.API_VERSIONS):
        assert key not in PEER_ONLY_APIS, key.name
    assert set(API_BY_KEY) >= PEER_ONLY_APIS
    assert set(CONTROLLER_LISTENER_VERSIONS) >= PEER_ONLY_APIS


# -- tagged fields ------------------------------------------------------------------


def test_unknown_tags_in_the_header_and_in_every_struct_are_skipped() -> None:
    # Metadata v12 from a newer client: an unknown tag in the header, in a
    # topic and at the top level (Kafka keeps them as unknown tagged fields)
    payload = bytes.fromhex(
        "0003" "000c" "00000005" "0001" "63"  # api key 3, v12, correlation 5, client id "c"
        "01" "07" "02" "abcd"  # header tag block: tag 7, 2 bytes
        "02"  # topics: compact count 1 + 1
        "00000000000000000000000000000000"  # topic_id: zero
        "02" "74"  # name "t"
        "02" "05" "01" "ff" "09" "00"  # topic tag block: tags 5 and 9
        "01"  # allow_auto_topic_creation true
        "00"  # include_topic_authorized_operations false
        "01" "7f" "03" "010203"  # top-level tag block: tag 127, 3 bytes
    )
    header, request = decode_request(payload)
    assert (header.api_key, header.api_version, header.client_id) == (3, 12, "c")
    assert request == MetadataRequest(
        topics=(MetadataRequestTopic(name="t"),), allow_auto_topic_creation=True
    )


@attrs.frozen(kw_only=True)
class Inner:
    value: int = field(INT32, default=0)


@message(api_key=None, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class TaggedStruct:
    inner: Inner | None = field(struct(Inner), nullable="0+", tag=0, tagged="0+", default=None)


@message(api_key=None, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class TaggedStructWithDefault:
    inner: Inner | None = field(struct(Inner), nullable="0+", tag=0, tagged="0+", factory=Inner)


def test_a_tagged_nullable_struct_has_kafkas_varint_marker() -> None:
    # Kafka writes a tagged nullable struct as marker uvarint 1 + the struct,
    # and null (when the default is not null) as marker 0
    present = bytes.fromhex(
        "01" "00" "06"  # one tagged field: tag 0, 6 bytes
        "01"  # marker: present
        "00000007" "00"  # Inner(value=7) and its tag block
    )
    assert encode(TaggedStruct(inner=Inner(value=7)), 0) == present
    assert decode(TaggedStruct, 0, present) == TaggedStruct(inner=Inner(value=7))
    null = bytes.fromhex("01" "00" "01" "00")  # tag 0, 1 byte: marker 0, null
    assert encode(TaggedStructWithDefault(inner=None), 0) == null
    assert decode(TaggedStructWithDefault, 0, null) == TaggedStructWithDefault(inner=None)
    assert encode(TaggedStruct(inner=None), 0) == b"\x00"  # null is the default: not written


# -- lengths and nulls ----------------------------------------------------------------


def test_a_negative_length_other_than_minus_one_is_null_where_null_is_allowed() -> None:
    # Kafka's readers test `length < 0`: -2 reads as null just like -1
    produce = bytes.fromhex(
        "fffe"  # transactional_id: int16 length -2
        "0001" "00000064"  # acks 1, timeout_ms 100
        "00000001" "0001" "74"  # topic_data: 1, name "t"
        "00000001" "00000000"  # partition_data: 1, index 0
        "fffffff0"  # records: int32 length -16
    )
    request = decode(ProduceRequest, 3, produce)
    assert request.transactional_id is None
    assert request.topic_data[0].partition_data[0].records is None
    configs = bytes.fromhex("00000001" "02" "0001" "74" "80000000")  # keys: length INT32_MIN
    assert decode(DescribeConfigsRequest, 0, configs) == DescribeConfigsRequest(
        resources=(DescribeConfigsRequestResource(
            resource_type=2, resource_name="t", configuration_keys=None),)
    )


def test_null_where_the_schema_forbids_it_is_refused_as_kafka_refuses_it() -> None:
    # Kafka: RuntimeException("non-nullable field name was serialized as null"),
    # the request is invalid and the connection closed
    classic = bytes.fromhex(
        "00000001" "fffe"  # topics: 1; name: int16 length -2
        "00000001" "0001" "00000000" "00000000"  # partitions, factor, no assignments/configs
        "00007530" "00"  # timeout_ms, validate_only
    )
    with pytest.raises(WireDecodeError, match=r"null where null is not allowed"):
        decode(CreateTopicsRequest, 4, classic)
    compact = bytes.fromhex(
        "02" "00"  # topics: 1; name: compact length 0, null
        "00000001" "0001" "01" "01" "00"  # partitions, factor, no assignments/configs, tags
        "00007530" "00" "00"  # timeout_ms, validate_only, tag block
    )
    with pytest.raises(WireDecodeError, match=r"null where null is not allowed"):
        decode(CreateTopicsRequest, 5, compact)


# -- the header ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_id", "expected"),
    [("ffff", None), ("fffe", None), ("0002c328", "\ufffd("), ("0003616263", "abc")],
    ids=["null", "negative", "bad-utf8", "plain"],
)
def test_a_client_id_is_read_as_kafka_reads_it(client_id: str, expected: str | None) -> None:
    body = bytes.fromhex("00" "00" "00" "00")  # Metadata v12: topics null, two false, tag block
    payload = bytes.fromhex("0003" "000c" "00000001" + client_id + "00") + body
    header, request = decode_request(payload)
    assert header.client_id == expected
    assert request == MetadataRequest(topics=None, allow_auto_topic_creation=False)


def test_bad_utf8_in_a_body_reads_as_replacement_characters() -> None:
    # Java's new String(bytes, UTF_8): the topic name then fails Kafka's (and
    # our controller's) name check with an error code, not a closed connection
    payload = bytes.fromhex(
        "0013" "0005" "00000001" "ffff" "00"  # CreateTopics v5, null client id
        "02" "03" "c328"  # topics: 1; name: 2 bytes of bad UTF-8
        "00000001" "0001" "01" "01" "00"  # 1 partition, factor 1, no assignments/configs
        "00007530" "00" "00"  # timeout_ms 30000, validate_only false, tag block
    )
    _, request = decode_request(payload)
    assert request.topics[0].name == "\ufffd("
