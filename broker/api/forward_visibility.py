"""What a forwarded change must look like in the broker's own image before it is answered.

The controller answers CreateTopics once the new topic is committed, but the
forwarding broker learns it from the metadata log a moment later; a client
that creates a topic and at once asks the same broker for its metadata would
be told UNKNOWN_TOPIC_OR_PARTITION (kafka-python's ``list_topics`` right
after ``create_topics`` returned an empty list). So for the changes a client
reads back from the broker (topics created or deleted, partitions added,
topic and broker configs set or deleted: kafka-configs --alter then
--describe read a broker's configs from that broker), the broker waits,
within the request's own timeout, until its image shows them. Kafka's brokers answer at once and leave the window to the client;
this closes it for the common create-then-use sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quorum.controller.image import ConfigResource, ConfigResourceType, MetadataImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

__all__ = ["ImagePredicate", "visible_when"]

ImagePredicate = Callable[[MetadataImage], bool]

# IncrementalAlterConfigs operations whose outcome is known from the request alone
_SET, _DELETE = 0, 1


def visible_when(request: Any, response: Any) -> ImagePredicate | None:
    """When the image shows what ``response`` reports done (None: nothing to wait for)."""
    if isinstance(request, CreateTopicsRequest) and isinstance(response, CreateTopicsResponse):
        if request.validate_only:
            return None
        created = [t.name for t in response.topics if t.error_code == Errors.NONE]
        return _all_of(created, lambda image, name: image.topic(name) is not None)
    if isinstance(request, DeleteTopicsRequest) and isinstance(response, DeleteTopicsResponse):
        deleted = [t.name for t in response.responses if t.error_code == Errors.NONE]
        return _all_of(deleted, lambda image, name: image.topic(name) is None)
    if isinstance(request, CreatePartitionsRequest) and isinstance(
        response, CreatePartitionsResponse
    ):
        if request.validate_only:
            return None
        counts = {t.name: t.count for t in request.topics}
        grown = [(r.name, counts[r.name]) for r in response.results
                 if r.error_code == Errors.NONE and r.name in counts]
        return _all_of(grown, _has_partitions)
    if isinstance(request, IncrementalAlterConfigsRequest) and isinstance(
        response, IncrementalAlterConfigsResponse
    ):
        return None if request.validate_only else _configs_shown(request, response)
    return None


def _configs_shown(
    request: IncrementalAlterConfigsRequest, response: IncrementalAlterConfigsResponse
) -> ImagePredicate | None:
    """Each key a resource altered without error set to its value (or gone, deleted);
    APPEND and SUBTRACT depend on the list before, and are not waited for."""
    done = {(r.resource_type, r.resource_name) for r in response.responses
            if r.error_code == Errors.NONE}
    stored = {kind.value for kind in ConfigResourceType}
    wanted = [
        (ConfigResource(ConfigResourceType(resource.resource_type), resource.resource_name),
         config.name, config.value if config.config_operation == _SET else None)
        for resource in request.resources
        if (resource.resource_type, resource.resource_name) in done
        and resource.resource_type in stored
        for config in resource.configs
        if config.config_operation in (_SET, _DELETE)
    ]
    return _all_of(wanted, _config_is)


def _config_is(image: MetadataImage, wanted: tuple[ConfigResource, str, str | None]) -> bool:
    resource, name, value = wanted
    return image.configs.get(resource, {}).get(name) == value


def _has_partitions(image: MetadataImage, wanted: tuple[str, int]) -> bool:
    name, count = wanted
    topic = image.topic(name)
    return topic is not None and len(topic.partitions) >= count


def _all_of(items: list[Any], holds: Callable[[MetadataImage, Any], bool]) -> ImagePredicate | None:
    if not items:
        return None
    return lambda image: all(holds(image, item) for item in items)
