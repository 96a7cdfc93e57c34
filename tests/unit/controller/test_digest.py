"""Image digests: equal state gives equal digests whatever the provenance or history."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable
from typing import Any

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller import digest as digest_module
from quorum.controller.delta import fold_records
from quorum.controller.digest import (
    SHORT_DIGEST_CHARS,
    ChunkSummaries,
    ImageSummary,
    ImageSummaryBuilder,
    LatestImageSummary,
    build_describe_image_response,
    image_digest,
    short_digest,
)
from quorum.controller.image import (
    EMPTY_IMAGE,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    Provenance,
    TopicImage,
)
from quorum.controller.image_json import image_to_json
from quorum.controller.partition_map import CHUNK_SIZE, PartitionMap
from quorum.controller.slicing import build_at_once
from quorum.controller.snapshot import image_records, read_snapshot, write_snapshot
from quorum.log.protocol import OffsetAndEpoch
from quorum.wire.codec import decode, encode
from quorum.wire.messages import PykraftDescribeImageRequest, PykraftDescribeImageResponse
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.image_strategies import images

TOPIC = uuid.UUID(int=0xA)
INCARNATION = uuid.UUID(int=0x77)
BASE: list[MetadataRecord] = [
    RegisterBrokerRecord(broker_id=1, incarnation_id=INCARNATION, broker_epoch=0, fenced=True),
    TopicRecord(name="alpha", topic_id=TOPIC),
    PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=(1,), isr=(1,), leader=1,
                    leader_epoch=0, partition_epoch=0),
]


def image_of(*extra: MetadataRecord, offset: int = 10, epoch: int = 1) -> MetadataImage:
    return fold_records(EMPTY_IMAGE, [*BASE, *extra], Provenance(offset, epoch))


def test_the_empty_image_digest_is_the_sha256_of_nothing() -> None:
    assert image_digest(EMPTY_IMAGE) == hashlib.sha256(b"").hexdigest()


def test_the_digest_ignores_provenance() -> None:
    assert image_digest(image_of(offset=10, epoch=1)) == image_digest(image_of(offset=99, epoch=7))


def test_the_same_state_reached_by_different_records_has_the_same_digest() -> None:
    unfenced_by_change = image_of(
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=0, fenced=-1)
    )
    registered_unfenced = fold_records(
        EMPTY_IMAGE,
        [
            RegisterBrokerRecord(
                broker_id=1, incarnation_id=INCARNATION, broker_epoch=0, fenced=False
            ),
            *BASE[1:],
        ],
        Provenance(3, 1),
    )
    assert image_digest(unfenced_by_change) == image_digest(registered_unfenced)


def test_any_change_of_state_changes_the_digest() -> None:
    changed = [
        image_of(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=0, fenced=-1)),
        image_of(PartitionChangeRecord(partition_id=0, topic_id=TOPIC, leader=-1)),
        image_of(PartitionChangeRecord(partition_id=0, topic_id=TOPIC, isr=(1,))),
        image_of(ConfigRecord(resource_type=2, resource_name="alpha", name="k", value="v")),
        image_of(ConfigRecord(resource_type=2, resource_name="alpha", name="k", value="w")),
    ]
    digests = {image_digest(image) for image in [image_of(), *changed]}
    assert len(digests) == len(changed) + 1


def test_the_short_digest_is_a_prefix() -> None:
    digest = image_digest(image_of())
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert short_digest(digest) == digest[:SHORT_DIGEST_CHARS]
    assert len(short_digest(digest)) == SHORT_DIGEST_CHARS


@settings(max_examples=40, deadline=None)
@given(images(), images())
def test_two_images_share_a_digest_exactly_when_their_records_are_equal(
    first: MetadataImage, second: MetadataImage
) -> None:
    same_records = image_records(first) == image_records(second)
    assert (image_digest(first) == image_digest(second)) == same_records


@settings(max_examples=40, deadline=None)
@given(images())
def test_a_snapshot_loaded_image_has_the_digest_of_the_replayed_one(image: MetadataImage) -> None:
    data = write_snapshot(image, last_contained_timestamp_ms=0)
    loaded = read_snapshot(data, OffsetAndEpoch(image.provenance.offset, image.provenance.epoch))
    assert image_digest(loaded) == image_digest(image)


def test_the_describe_image_answer_carries_provenance_digest_and_json_when_asked() -> None:
    image = image_of(offset=42, epoch=3)
    plain = build_describe_image_response(image, node_id=2, include_image=False)
    full = build_describe_image_response(image, node_id=2, include_image=True)
    assert (plain.node_id, plain.offset, plain.epoch) == (2, 42, 3)
    assert plain.digest == image_digest(image) and plain.image_json is None
    assert full.image_json is not None
    assert json.loads(full.image_json) == image_to_json(image)


def test_describe_image_messages_round_trip_at_v0() -> None:
    request = PykraftDescribeImageRequest(include_image=True)
    assert encode(request, 0) == b"\x01\x00"  # bool, no tagged fields
    assert decode(PykraftDescribeImageRequest, 0, encode(request, 0)) == request
    response = build_describe_image_response(image_of(), node_id=1, include_image=True)
    decoded: PykraftDescribeImageResponse = decode(
        PykraftDescribeImageResponse, 0, encode(response, 0)
    )
    assert decoded == response


def test_the_latest_summary_hashes_an_image_once_and_a_new_image_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hashed: list[MetadataImage] = []

    class CountingBuilder(digest_module.ImageSummaryBuilder):
        def __init__(self, image: MetadataImage, known: ChunkSummaries | None = None) -> None:
            hashed.append(image)
            super().__init__(image, known)

    monkeypatch.setattr(digest_module, "ImageSummaryBuilder", CountingBuilder)
    latest = LatestImageSummary()
    first = image_of()
    assert latest.of(first) is latest.of(first)
    # another image is hashed; going back to the first hashes it again (one entry kept)
    leaderless = image_of(PartitionChangeRecord(partition_id=0, topic_id=TOPIC, leader=-1))
    assert latest.of(leaderless) == ImageSummary(image_digest(leaderless), 1, 1, 1)
    assert hashed[:3] == [first, leaderless, leaderless]  # the last by image_digest itself
    assert latest.of(first).digest == image_digest(first)
    assert hashed[3:] == [first, first]


async def test_tasks_asking_for_one_image_share_one_computation_in_slices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[MetadataImage] = []

    class CountingBuilder(digest_module.ImageSummaryBuilder):
        def __init__(self, image: MetadataImage, known: ChunkSummaries | None = None) -> None:
            built.append(image)
            super().__init__(image, known)

    monkeypatch.setattr(digest_module, "ImageSummaryBuilder", CountingBuilder)
    image = image_of()
    latest = LatestImageSummary()
    found: list[ImageSummary] = []
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(lambda: _append(found, latest.of_async(image)))
    assert built == [image]
    assert found == [ImageSummary.of(image)] * 3
    assert await latest.of_async(image) is found[0]


async def _append(found: list[ImageSummary], summary: Awaitable[ImageSummary]) -> None:
    found.append(await summary)


def test_the_describe_image_answer_uses_the_summary_it_is_given() -> None:
    image = image_of()
    given_summary = ImageSummary("ab" * 32, 7)
    answer = build_describe_image_response(
        image, node_id=1, include_image=False, summary=given_summary
    )
    assert (answer.digest, answer.offline_partition_count) == ("ab" * 32, 7)


# -- partitions hashed by chunk ---------------------------------------------------------------

BIG_TOPIC = uuid.UUID(int=0xB)


def big_image(partitions: dict[int, PartitionRegistration] | PartitionMap) -> MetadataImage:
    topic = TopicImage(name="big", topic_id=BIG_TOPIC, partitions=partitions)
    return MetadataImage(
        provenance=Provenance(1, 1),
        topics_by_id={BIG_TOPIC: topic},
        topic_ids_by_name={"big": BIG_TOPIC},
    )


def registration(index: int) -> PartitionRegistration:
    replicas = (index % 5, (index + 1) % 5, (index + 2) % 5)
    return PartitionRegistration(replicas=replicas, isr=replicas, leader=replicas[index % 3 // 2],
                                 leader_epoch=index % 4, partition_epoch=index % 6)


PARTITIONS = {index: registration(index) for index in range(3 * CHUNK_SIZE + 17)}


def test_a_partition_map_and_a_dict_of_the_same_partitions_share_a_digest() -> None:
    as_map = big_image(PartitionMap.of(PARTITIONS))
    as_dict = big_image(dict(PARTITIONS))
    assert image_digest(as_map) == image_digest(as_dict)
    # and the same partitions added in another order (chunks built in another order)
    shuffled = PartitionMap.of(dict(reversed(list(PARTITIONS.items()))))
    assert image_digest(big_image(shuffled)) == image_digest(as_map)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=3 * CHUNK_SIZE))
def test_the_summary_is_the_same_whatever_the_slice_size(max_units: int) -> None:
    image = big_image(PartitionMap.of(PARTITIONS))
    builder = ImageSummaryBuilder(image)
    steps = 1
    while not builder.step(max_units):
        steps += 1
    assert builder.result() == ImageSummary.of(image)
    # records: a broker-less image has one TopicRecord; every position is a unit
    assert steps >= (len(PARTITIONS) + 1) // max_units


@pytest.mark.parametrize("change", [
    {"leader": -1},
    {"leader_epoch": 99},
    {"partition_epoch": 99},
    {"isr": (1,)},
    {"replicas": (4, 0, 1, 2)},
    {"removing_replicas": (2,)},
    {"adding_replicas": (3,)},
    {"leader_recovery_state": LeaderRecoveryState.RECOVERING},
])
def test_any_field_of_any_registration_changes_the_digest(change: dict[str, Any]) -> None:
    base = PartitionMap.of(PARTITIONS)
    changed = base.with_changes({2049: attrs.evolve(PARTITIONS[2049], **change)})
    assert image_digest(big_image(changed)) != image_digest(big_image(base))


def test_a_moved_registration_changes_the_digest() -> None:
    # the same registrations at other indexes: the index is hashed too
    moved = {index + 1: partition for index, partition in PARTITIONS.items()}
    assert image_digest(big_image(moved)) != image_digest(big_image(PARTITIONS))


def test_a_second_image_hashes_only_the_chunks_it_changed() -> None:
    known = ChunkSummaries()
    base = PartitionMap.of(PARTITIONS)
    first = ImageSummaryBuilder(big_image(base), known)
    build_at_once(first)
    assert first.chunks_hashed == 4 and len(known) == 4
    changed = base.with_changes({5: attrs.evolve(PARTITIONS[5], leader=-1)})
    second = ImageSummaryBuilder(big_image(changed), known)
    summary = build_at_once(second)
    assert second.chunks_hashed == 1
    assert summary == ImageSummary.of(big_image(changed))
    assert (summary.offline_partition_count, summary.partition_count) == (
        ImageSummary.of(big_image(base)).offline_partition_count + 1, len(PARTITIONS))
    assert len(known) == 4  # the first image's changed chunk is gone from the table
