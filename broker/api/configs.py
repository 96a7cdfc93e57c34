"""DescribeConfigs answered by the broker itself, as Kafka's brokers do.

A topic's configs come from the broker's image (its overrides, the dynamic
cluster defaults, then this broker's own static settings and the defaults).
A broker resource is answered only for this broker's id (its dynamic,
cluster-wide and static values) or "" (the cluster-wide dynamic defaults);
another broker's id is INVALID_REQUEST with Kafka's message, since an admin
client sends a broker's DescribeConfigs to that broker. Forwarding it to the
controller instead would report the controller's static settings as any
broker's.
"""

from __future__ import annotations

import random

import trio

from quorum.controller.config_control import describe_configs_steps
from quorum.controller.image import ConfigResourceType, MetadataImage
from quorum.controller.operations import Operation
from quorum.controller.results import ControllerConfig, ControllerContext
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseResult,
)

__all__ = ["describe_configs_here"]


async def describe_configs_here(
    image: MetadataImage, request: DescribeConfigsRequest, version: int, config: ControllerConfig
) -> DescribeConfigsResponse:
    """This broker's answer (``config`` carries its id and static settings), worked out a
    bounded slice at a time (``describe_configs_steps``) with a checkpoint between slices:
    a request may name every topic of the cluster."""
    context = ControllerContext(config=config, now_ms=0, next_offset=0, rng=random.Random(0))
    elsewhere = {
        i for i, r in enumerate(request.resources) if _another_broker(r, config.node_id)
    }
    answerable = tuple(r for i, r in enumerate(request.resources) if i not in elsewhere)
    steps = describe_configs_steps(
        image, DescribeConfigsRequest(
            resources=answerable,
            include_synonyms=request.include_synonyms,
            include_documentation=request.include_documentation,
        ), version, context,
    )
    operation = Operation("DescribeConfigs", steps)
    while not operation.done:
        operation.step()  # a slice: a read writes no records
        await trio.lowlevel.checkpoint()
    assert operation.response is not None
    answered = iter(operation.response.results)
    results = [
        _refused(resource, config.node_id) if i in elsewhere else next(answered)
        for i, resource in enumerate(request.resources)
    ]
    return DescribeConfigsResponse(results=tuple(results))


def _another_broker(resource: DescribeConfigsRequestResource, node_id: int) -> bool:
    name = resource.resource_name
    return (
        resource.resource_type == ConfigResourceType.BROKER
        and name.isascii()
        and name.isdigit()
        and int(name) != node_id
    )


def _refused(resource: DescribeConfigsRequestResource, node_id: int) -> DescribeConfigsResponseResult:
    return DescribeConfigsResponseResult(
        error_code=Errors.INVALID_REQUEST,
        error_message=(
            f"Unexpected broker id, expected {node_id} or empty string, "
            f"but received {resource.resource_name}"
        ),
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )
