"""Messages encoded a slice of elements at a time give the bytes of encoding them at once."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from quorum.wire.apis import API_BY_KEY
from quorum.wire.codec import ArrayEncoder, EncodedArray, encode, with_encoded
from quorum.wire.errors import WireEncodeError
from quorum.wire.messages import (
    ApiVersionsResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from quorum.wire.protocol import EncodedBody, ResponseHeader, encode_response
from quorum.wire.schema import ArrayType, StructType, field_specs
from tests.unit.wire.strategies import random_message


def _struct_arrays(cls: type, version: int) -> list[tuple[str, type]]:
    """(field, element class) of the untagged arrays of structs ``cls`` has at ``version``."""
    return [
        (name, spec.type.element.cls)
        for name, spec, _ in field_specs(cls)
        if version in spec.versions
        and version not in spec.tagged
        and isinstance(spec.type, ArrayType)
        and isinstance(spec.type.element, StructType)
    ]


def _pairs() -> list[Any]:
    pairs = []
    for spec in sorted(API_BY_KEY.values(), key=lambda s: s.key):
        for cls in (spec.request, spec.response):
            for version in range(spec.low, spec.high + 1):
                if _struct_arrays(cls, version):
                    pairs.append(pytest.param(cls, version, id=f"{cls.__name__}-v{version}"))
    return pairs


def _in_chunks(cls: type, version: int, element_cls: type, items: Any, rng: random.Random) -> Any:
    encoder = ArrayEncoder(cls, version, element_cls)
    start = 0
    while start < len(items):
        end = start + rng.randint(1, 3)
        encoder.add(items[start:end])
        start = end
    return encoder.finish()


@pytest.mark.parametrize(("cls", "version"), _pairs())
def test_arrays_encoded_in_chunks_give_the_bytes_of_the_whole_message(
    cls: type, version: int
) -> None:
    rng = random.Random(f"{cls.__name__}-{version}")
    for _ in range(8):
        message = random_message(cls, version, rng)
        arrays = {
            name: _in_chunks(cls, version, element_cls, getattr(message, name), rng)
            for name, element_cls in _struct_arrays(cls, version)
            if getattr(message, name) is not None
        }
        assert encode(with_encoded(message, **arrays), version) == encode(message, version)


def _metadata(topics: int, partitions: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=(MetadataResponseBroker(node_id=1, host="b1", port=9092, rack="r"),),
        cluster_id="cluster",
        controller_id=1,
        topics=tuple(
            MetadataResponseTopic(
                name=f"t{t}",
                topic_id=uuid.UUID(int=t + 1),
                partitions=tuple(
                    MetadataResponsePartition(
                        partition_index=p, leader_id=1, replica_nodes=(1, 2), isr_nodes=(1,)
                    )
                    for p in range(partitions * t)
                ),
            )
            for t in range(topics)
        ),
    )


@pytest.mark.parametrize("version", range(13))
def test_nested_arrays_encoded_in_chunks_give_the_same_bytes(version: int) -> None:
    """A topic's partitions encoded in chunks, then the topic with them (Metadata answers)."""
    rng = random.Random(version)
    response = _metadata(topics=4, partitions=150)
    topics = ArrayEncoder(MetadataResponse, version, MetadataResponseTopic)
    for topic in response.topics:
        partitions = _in_chunks(
            MetadataResponse, version, MetadataResponsePartition, topic.partitions, rng
        )
        assert isinstance(partitions, EncodedArray) and len(partitions) == len(topic.partitions)
        topics.add([with_encoded(topic, partitions=partitions)])
    encoded = topics.finish()
    assert len(encoded.chunks) == 4  # one per add: chunks, not a few bytes per field
    assert encode(with_encoded(response, topics=encoded), version) == encode(response, version)


def test_an_element_that_does_not_fit_its_type_names_the_field() -> None:
    encoder = ArrayEncoder(MetadataResponse, 12, MetadataResponsePartition)
    with pytest.raises(WireEncodeError, match="leader_id"):
        encoder.add([MetadataResponsePartition(leader_id=2**40)])


def test_an_array_encoder_refuses_a_version_the_message_lacks() -> None:
    with pytest.raises(WireEncodeError, match=r"versions 0\.\.12, not 13"):
        ArrayEncoder(MetadataResponse, 13, MetadataResponseTopic)


@pytest.mark.parametrize("version", [0, 8, 9, 12])
def test_an_encoded_body_is_framed_like_the_message_it_encodes(version: int) -> None:
    response = _metadata(topics=2, partitions=3)
    header = ResponseHeader(correlation_id=77)
    body = EncodedBody(MetadataResponse, version, encode(response, version))
    assert encode_response(header, 3, version, body) == encode_response(
        header, 3, version, response
    )


def test_an_encoded_body_answers_only_its_api_and_version() -> None:
    body = EncodedBody(MetadataResponse, 12, encode(_metadata(1, 1), 12))
    with pytest.raises(WireEncodeError, match="encoded at v12 cannot answer a v11 request"):
        encode_response(ResponseHeader(1), 3, 11, body)
    other = EncodedBody(ApiVersionsResponse, 3, encode(ApiVersionsResponse(), 3))
    with pytest.raises(WireEncodeError, match="not the response class of api key 3"):
        encode_response(ResponseHeader(1), 3, 3, other)
