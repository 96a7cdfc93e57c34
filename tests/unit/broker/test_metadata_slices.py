"""Metadata answers built and encoded in slices, and kept per image.

The oracle is the answer written the plain way (every lookup per partition,
as the listener did before answers were sliced); the builder must give the
same answer whatever the slice size, and the encoding sink its bytes.
"""

from __future__ import annotations

import uuid

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.api.metadata import (
    ListenerView,
    MetadataAnswerBuilder,
    ResponseSink,
    metadata_response,
)
from broker.api.metadata_cache import EncodingSink, MetadataAnswerCache, metadata_answer_key
from broker.router import BrokerRouter
from quorum.controller.image import NO_LEADER, MetadataImage, TopicImage
from quorum.controller.slicing import MAX_UNITS_PER_SLICE, build_at_once
from quorum.node.connection import ServerConnection
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from quorum.wire.protocol import (
    EncodedBody,
    RequestHeader,
    ResponseHeader,
    decode_response,
    encode_request,
    encode_response,
)
from quorum.wire.uuids import ZERO_UUID
from tests.unit.controller.image_strategies import TOPIC_NAMES, images
from tests.unit.controller.large_images import large_image


def view(listener_name: str = "PLAINTEXT") -> ListenerView:
    return ListenerView(
        node_id=9, cluster_id="cluster", listener_name=listener_name, host="self", port=1,
        rack="r9",
    )


# -- the oracle ----------------------------------------------------------------------------


def _reachable(image: MetadataImage, broker_id: int, listener: str) -> bool:
    broker = image.broker(broker_id)
    return broker is not None and not broker.fenced and broker.listener(listener) is not None


def _oracle_partition(
    image: MetadataImage, topic: TopicImage, index: int, listener: str
) -> MetadataResponsePartition:
    partition = topic.partitions[index]
    leader, error = partition.leader, Errors.NONE
    if not _reachable(image, leader, listener):
        broker = image.broker(leader)
        alive = broker is not None and not broker.fenced
        error = Errors.LISTENER_NOT_FOUND if alive else Errors.LEADER_NOT_AVAILABLE
        leader = NO_LEADER
    return MetadataResponsePartition(
        error_code=error, partition_index=index, leader_id=leader,
        leader_epoch=partition.leader_epoch, replica_nodes=partition.replicas,
        isr_nodes=partition.isr,
        offline_replicas=tuple(
            r for r in partition.replicas if not _reachable(image, r, listener)
        ),
    )


def _oracle_topic(image: MetadataImage, topic: TopicImage, listener: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        name=topic.name, topic_id=topic.topic_id,
        is_internal=topic.name in ("__consumer_offsets", "__transaction_state"),
        partitions=tuple(
            _oracle_partition(image, topic, i, listener) for i in sorted(topic.partitions)
        ),
    )


def oracle(
    image: MetadataImage, request: MetadataRequest, version: int, at: ListenerView
) -> MetadataResponse:
    listener = at.listener_name
    topics: list[MetadataResponseTopic] = []
    if request.topics is None or (version == 0 and not request.topics):
        for name in sorted(image.topic_ids_by_name):
            topic = image.topics_by_id[image.topic_ids_by_name[name]]
            topics.append(_oracle_topic(image, topic, listener))
    else:
        seen = set()
        for wanted in request.topics:
            if (wanted.name, wanted.topic_id) in seen:
                continue
            seen.add((wanted.name, wanted.topic_id))
            if wanted.name is None:
                found = image.topics_by_id.get(wanted.topic_id)
                if found is None:
                    topics.append(MetadataResponseTopic(
                        error_code=Errors.UNKNOWN_TOPIC_ID, name=None, topic_id=wanted.topic_id
                    ))
                    continue
            else:
                found = image.topic(wanted.name)
                if found is None:
                    topics.append(MetadataResponseTopic(
                        error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, name=wanted.name,
                        topic_id=ZERO_UUID,
                    ))
                    continue
            topics.append(_oracle_topic(image, found, listener))
    brokers = [
        MetadataResponseBroker(node_id=b, host=endpoint.host, port=endpoint.port,
                               rack=image.brokers[b].rack)
        for b in sorted(image.brokers)
        if _reachable(image, b, listener)
        and (endpoint := image.brokers[b].listener(listener)) is not None
    ] or [MetadataResponseBroker(node_id=at.node_id, host=at.host, port=at.port, rack=at.rack)]
    return MetadataResponse(
        brokers=tuple(brokers), cluster_id=at.cluster_id, controller_id=at.node_id,
        topics=tuple(topics),
    )


# -- requests ----------------------------------------------------------------------------


@st.composite
def requests(draw: st.DrawFn, image: MetadataImage) -> tuple[MetadataRequest, int]:
    version = draw(st.integers(0, 12))
    if draw(st.booleans()):
        return MetadataRequest(topics=None if version else ()), version
    by_name = st.builds(
        MetadataRequestTopic, name=st.sampled_from((*TOPIC_NAMES, "nope")), topic_id=st.just(ZERO_UUID)
    )
    # by id only at v12, where an unknown id's answer (a null name) can be encoded
    ids = [*image.topics_by_id, uuid.UUID(int=5)]
    by_id = st.builds(MetadataRequestTopic, name=st.none(), topic_id=st.sampled_from(ids))
    wanted = by_name | by_id if version == 12 else by_name
    topics = draw(st.lists(wanted, max_size=6))
    if version == 0 and not topics:
        topics = [MetadataRequestTopic(name="nope")]
    return MetadataRequest(topics=tuple(topics)), version


def built_in_slices(
    image: MetadataImage, request: MetadataRequest, version: int, at: ListenerView,
    max_units: int,
) -> tuple[MetadataResponse, list[int], list[int]]:
    """(the answer, units per slice, partitions built per slice)."""
    builder = MetadataAnswerBuilder(image, request, version, at, ResponseSink())
    units: list[int] = []
    partitions: list[int] = []
    done = False
    while not done:
        before = (builder.units, builder.partitions_built)
        done = builder.step(max_units)
        units.append(builder.units - before[0])
        partitions.append(builder.partitions_built - before[1])
    return builder.result(), units, partitions


@settings(max_examples=80, deadline=None)
@given(st.data(), images(), st.integers(1, 5), st.sampled_from(("PLAINTEXT", "SSL")))
def test_an_answer_built_in_slices_is_the_oracles_and_so_are_its_bytes(
    data: st.DataObject, image: MetadataImage, max_units: int, listener: str
) -> None:
    request, version = data.draw(requests(image))
    at = view(listener)
    expected = oracle(image, request, version, at)
    answer, units, _ = built_in_slices(image, request, version, at, max_units)
    assert answer == expected
    assert max(units) <= max_units
    assert metadata_response(image, request, version, at) == expected
    sink = EncodingSink(version)
    encoded = build_at_once(MetadataAnswerBuilder(image, request, version, at, sink))
    assert encoded == EncodedBody(MetadataResponse, version, encode(expected, version))


BIG = large_image(
    {"big": 20_000, "medium": 1_500, "small": 3, "zero": 0},
    brokers=4, fenced=frozenset({4}), reassigning_every=7,
)


def test_every_topic_of_a_20000_partition_image_is_answered_in_bounded_slices() -> None:
    everything = MetadataRequest(topics=None)
    answer, units, partitions = built_in_slices(BIG, everything, 12, view(), MAX_UNITS_PER_SLICE)
    assert answer == oracle(BIG, everything, 12, view())
    assert len(units) > 20 and max(units) <= MAX_UNITS_PER_SLICE
    assert sum(partitions) == 21_503 and max(partitions) <= MAX_UNITS_PER_SLICE
    assert sum(units) == 21_503 + 4  # partitions and topics
    some = {p.error_code for t in answer.topics for p in t.partitions}
    assert some == {Errors.NONE, Errors.LEADER_NOT_AVAILABLE}  # broker 4 is fenced


@pytest.mark.parametrize("version", [0, 1, 9, 12])
def test_the_encoding_sink_gives_the_bytes_of_the_whole_answer(version: int) -> None:
    request = MetadataRequest(topics=() if version == 0 else None)
    encoded = build_at_once(
        MetadataAnswerBuilder(BIG, request, version, view(), EncodingSink(version))
    )
    assert encoded.body == encode(oracle(BIG, request, version, view()), version)


# -- the cache -----------------------------------------------------------------------------


def test_the_key_is_what_changes_the_answer_besides_the_image() -> None:
    everything = metadata_answer_key(MetadataRequest(topics=None), 12, view())
    assert metadata_answer_key(MetadataRequest(topics=None), 12, view()) == everything
    assert metadata_answer_key(MetadataRequest(topics=()), 0, view()) != everything  # v0
    assert metadata_answer_key(MetadataRequest(topics=None), 11, view()) != everything
    assert metadata_answer_key(MetadataRequest(topics=None), 12, view("SSL")) != everything
    named = MetadataRequest(topics=(MetadataRequestTopic(name="small"),))
    assert metadata_answer_key(named, 12, view()) != everything
    # nothing else in the request changes the answer
    no_creation = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    assert metadata_answer_key(no_creation, 12, view()) == everything


async def test_the_cache_keeps_one_answer_per_image_and_recomputes_for_a_new_one() -> None:
    cache = MetadataAnswerCache()
    everything = MetadataRequest(topics=None)
    first = await cache.encoded_response(BIG, everything, 12, view())
    assert await cache.encoded_response(BIG, everything, 12, view()) is first
    assert cache.computed == 1
    other_version = await cache.encoded_response(BIG, everything, 11, view())
    assert other_version.version == 11 and cache.computed == 2
    newer = large_image({"small": 3}, brokers=4)
    answer = await cache.encoded_response(newer, everything, 12, view())
    assert answer.body == encode(oracle(newer, everything, 12, view()), 12)
    assert cache.computed == 3


async def test_concurrent_askers_of_one_answer_share_one_computation() -> None:
    cache = MetadataAnswerCache()
    found: list[EncodedBody] = []

    async def ask() -> None:
        found.append(await cache.encoded_response(BIG, MetadataRequest(topics=None), 12, view()))

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(ask)
    assert len(found) == 4 and all(answer is found[0] for answer in found)
    assert cache.computed == 1


async def test_the_broker_listener_answers_metadata_from_the_cache() -> None:
    router = BrokerRouter(view=view(), image=lambda: BIG)
    conn = ServerConnection("test")
    for correlation_id, version in enumerate([12, 12, 4]):
        frame = encode_request(
            RequestHeader(api_key=3, api_version=version, correlation_id=correlation_id),
            MetadataRequest(topics=None),
        )
        await router.dispatch(conn, frame[4:])
        sent = b"".join(conn._out_receive.receive_nowait())
        expected = oracle(BIG, MetadataRequest(topics=None), version, view())
        assert sent == encode_response(ResponseHeader(correlation_id), 3, version, expected)
        assert decode_response(sent[4:], 3, version)[0].correlation_id == correlation_id
    assert router.metadata_answers.computed == 2  # v12 once, v4 once
