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
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResource,
    MetadataRequest,
    MetadataResponse,
)
from quorum.wire.messages.metadata_records import ConfigRecord

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


def _alter(*configs: tuple[str, int, str | None], resource_type: int = 4,
           name: str = "4", validate_only: bool = False) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(validate_only=validate_only, resources=(
        IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=resource_type, resource_name=name, configs=tuple(
                IncrementalAlterConfigsRequestAlterableConfig(
                    name=key, config_operation=operation, value=value)
                for key, operation, value in configs)),
    ))


def _altered(resource_type: int = 4, name: str = "4",
             error: Errors = Errors.NONE) -> IncrementalAlterConfigsResponse:
    return IncrementalAlterConfigsResponse(responses=(
        IncrementalAlterConfigsResponseAlterConfigsResource(
            resource_type=resource_type, resource_name=name, error_code=error),
    ))


def _config(resource_type: int, name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=resource_type, resource_name=name, name=key, value=value)


def test_an_altered_broker_config_waits_until_the_image_shows_the_value_and_the_deletion() -> None:
    before = fold([_config(4, "4", "log.cleaner.threads", "2")])
    request = _alter(("compression.gzip.level", 0, "5"), ("log.cleaner.threads", 1, None))
    shown = visible_when(request, _altered())
    assert shown is not None
    assert not shown(before)
    half = fold([_config(4, "4", "compression.gzip.level", "5")], before)
    assert not shown(half)  # the deletion not applied yet
    assert shown(fold([_config(4, "4", "log.cleaner.threads", None)], half))
    # another broker's value is not this one's
    assert not shown(fold([_config(4, "5", "compression.gzip.level", "5"),
                           _config(4, "5", "log.cleaner.threads", None)], before))


def test_a_topic_config_waits_and_failed_list_or_checked_alters_do_not() -> None:
    shown = visible_when(_alter(("retention.ms", 0, "7200000"), resource_type=2, name="orders"),
                         _altered(resource_type=2, name="orders"))
    assert shown is not None
    assert not shown(AFTER)
    assert shown(fold([_config(2, "orders", "retention.ms", "7200000")], AFTER))
    refused = _altered(error=Errors.INVALID_REQUEST)
    assert visible_when(_alter(("compression.gzip.level", 0, "5")), refused) is None
    checked = _alter(("compression.gzip.level", 0, "5"), validate_only=True)
    assert visible_when(checked, _altered()) is None
    appended = _alter(("cleanup.policy", 2, "compact"), resource_type=2, name="orders")
    assert visible_when(appended, _altered(resource_type=2, name="orders")) is None
