"""Which forwarded answers wait for the broker's image, and what they wait for."""

from __future__ import annotations

from broker.api.forward_visibility import visible_when
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    CreateTopicsResponseTopic,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseTopic,
    MetadataRequest,
    MetadataResponse,
)

from .records import fold, partition, topic

BEFORE = fold([topic("orders"), partition("orders", 0, [1])])
AFTER = fold([
    topic("orders"), partition("orders", 0, [1]), partition("orders", 1, [1]),
    topic("audit"), partition("audit", 0, [1]),
])


def test_a_created_topic_waits_until_the_image_has_it() -> None:
    request = CreateTopicsRequest(topics=(CreateTopicsRequestTopic(name="audit"),
                                          CreateTopicsRequestTopic(name="orders")))
    response = CreateTopicsResponse(topics=(
        CreateTopicsResponseTopic(name="audit"),
        CreateTopicsResponseTopic(name="orders", error_code=Errors.TOPIC_ALREADY_EXISTS),
    ))
    shown = visible_when(request, response)
    assert shown is not None
    assert not shown(BEFORE) and shown(AFTER)


def test_nothing_to_wait_for_without_a_change() -> None:
    failed = CreateTopicsResponse(topics=(
        CreateTopicsResponseTopic(name="orders", error_code=Errors.TOPIC_ALREADY_EXISTS),
    ))
    create = CreateTopicsRequest(topics=(CreateTopicsRequestTopic(name="orders"),))
    assert visible_when(create, failed) is None
    checked = CreateTopicsResponse(topics=(CreateTopicsResponseTopic(name="new"),))
    assert visible_when(CreateTopicsRequest(validate_only=True), checked) is None
    assert visible_when(MetadataRequest(), MetadataResponse()) is None


def test_a_deleted_topic_waits_until_the_image_lost_it() -> None:
    shown = visible_when(
        DeleteTopicsRequest(topic_names=("audit",)),
        DeleteTopicsResponse(responses=(DeleteTopicsResponseTopic(name="audit"),)),
    )
    assert shown is not None
    assert not shown(AFTER) and shown(BEFORE)


def test_added_partitions_wait_for_the_new_count() -> None:
    shown = visible_when(
        CreatePartitionsRequest(topics=(CreatePartitionsRequestTopic(name="orders", count=2),)),
        CreatePartitionsResponse(results=(CreatePartitionsResponseTopicResult(name="orders"),)),
    )
    assert shown is not None
    assert not shown(BEFORE) and shown(AFTER)
