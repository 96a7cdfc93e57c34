"""Metadata answers for the client's core tests, built from a few numbers."""

from __future__ import annotations

from collections.abc import Mapping

from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

__all__ = ["metadata"]


def metadata(
    topics: Mapping[str, list[tuple[int, int]]],
    *,
    brokers: tuple[int, ...] = (1, 2, 3),
    missing: tuple[str, ...] = (),
    controller_id: int = 1,
) -> MetadataResponse:
    """A MetadataResponse: per topic, (leader, leader epoch) for each partition in order."""
    described = [
        MetadataResponseTopic(name=name, partitions=tuple(
            MetadataResponsePartition(
                partition_index=index, leader_id=leader, leader_epoch=epoch,
                replica_nodes=brokers, isr_nodes=brokers,
            )
            for index, (leader, epoch) in enumerate(parts)
        ))
        for name, parts in topics.items()
    ]
    refused = [
        MetadataResponseTopic(name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION)
        for name in missing
    ]
    return MetadataResponse(
        brokers=tuple(
            MetadataResponseBroker(node_id=b, host="127.0.0.1", port=9000 + b) for b in brokers
        ),
        cluster_id="test-cluster",
        controller_id=controller_id,
        topics=tuple(described + refused),
    )
