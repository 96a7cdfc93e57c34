"""Requests whose message classes this build may lack, built by their Kafka field names.

OffsetForLeaderEpoch (23), DeleteRecords (21) and DescribeLogDirs (35) are
declared in ``quorum.wire.messages`` as the data plane lands. Until then the
library must still import: these helpers look the class up when a request
is made and build it from plain data keyed by the schema's field names in
snake case (``current_leader_epoch``), nested classes included, with
cattrs. Without the class a call raises UNSUPPORTED_VERSION naming the API,
and the consumer skips KIP-320 validation as Kafka does for brokers
without OffsetForLeaderEpoch v3+.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final

import cattrs

from broker.client.errors import KafkaError
from broker.client.fetch_core import CONSUMER_REPLICA_ID, EpochEndOffset, ValidationPlan
from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors

__all__ = [
    "OFFSET_FOR_LEADER_EPOCH_KEY",
    "OFFSET_FOR_LEADER_EPOCH_MIN_VERSION",
    "build_message",
    "epoch_end_offsets",
    "message_class",
    "offset_for_leader_epoch_request",
]

OFFSET_FOR_LEADER_EPOCH_KEY: Final = 23
# v3 is the first that carries replica_id, which says "a consumer asks" (-1)
OFFSET_FOR_LEADER_EPOCH_MIN_VERSION: Final = 3
_converter: Final = cattrs.Converter()


def message_class(name: str) -> type | None:
    """The declared message class ``name``, or None if this build has none."""
    messages = importlib.import_module("quorum.wire.messages")
    found = getattr(messages, name, None)
    return found if isinstance(found, type) else None


def build_message(name: str, data: Mapping[str, Any]) -> Any:
    """``name`` built from ``data`` (Kafka's field names, snake case); raises KafkaError."""
    cls = message_class(name)
    if cls is None:
        raise KafkaError(
            Errors.UNSUPPORTED_VERSION,
            f"this build of pykraft does not declare {name} yet",
        )
    return _converter.structure(dict(data), cls)


def offset_for_leader_epoch_request(plan: ValidationPlan) -> Any:
    """OffsetForLeaderEpoch as Kafka's consumer asks it (``forConsumer``)."""
    topics: dict[str, list[dict[str, int]]] = {}
    for tp, position in plan.positions.items():
        topics.setdefault(tp.topic, []).append({
            "partition": tp.partition,
            "current_leader_epoch": position.leader_epoch,
            "leader_epoch": position.offset_epoch,
        })
    return build_message("OffsetForLeaderEpochRequest", {
        "replica_id": CONSUMER_REPLICA_ID,
        "topics": [{"topic": t, "partitions": parts} for t, parts in topics.items()],
    })


def epoch_end_offsets(response: Any) -> dict[TopicPartition, EpochEndOffset]:
    """Each partition of an OffsetForLeaderEpoch answer."""
    return {
        TopicPartition(topic.topic, part.partition): EpochEndOffset(
            Errors.from_code(part.error_code), part.leader_epoch, part.end_offset
        )
        for topic in response.topics
        for part in topic.partitions
    }
