"""OffsetCommit of topics the cluster does not hold: Kafka's KafkaApis answers them
UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees the request."""

from __future__ import annotations

from typing import Any

import attrs

from broker.api.groups import commit_known_topics
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)


@attrs.frozen
class _Image:
    names: frozenset[str]

    def topic(self, name: str) -> object | None:
        return object() if name in self.names else None


class _Slot:
    def __init__(self) -> None:
        self.answers: list[Any] = []

    def complete(self, response: Any) -> None:
        self.answers.append(response)


def _request(*names: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id="g", topics=tuple(
        OffsetCommitRequestTopic(name=n, partitions=(
            OffsetCommitRequestPartition(partition_index=0, committed_offset=1),
            OffsetCommitRequestPartition(partition_index=1, committed_offset=1)))
        for n in names))


def _codes(response: OffsetCommitResponse) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics
            for p in t.partitions}


def test_known_topics_go_to_the_coordinator_untouched() -> None:
    slot = _Slot()
    request = _request("a", "b")
    assert commit_known_topics(_Image(frozenset({"a", "b"})), request, slot) == (request, slot)
    assert slot.answers == []


def test_no_topic_known_is_answered_at_once() -> None:
    slot = _Slot()
    passed, _ = commit_known_topics(_Image(frozenset()), _request("x"), slot)
    assert passed is None
    (answer,) = slot.answers
    assert _codes(answer) == {("x", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                              ("x", 1): Errors.UNKNOWN_TOPIC_OR_PARTITION}


def test_the_coordinators_answer_gets_the_unknown_topics_added() -> None:
    slot = _Slot()
    passed, wrapped = commit_known_topics(_Image(frozenset({"a"})), _request("x", "a"), slot)
    assert passed is not None and [t.name for t in passed.topics] == ["a"]
    assert slot.answers == []
    wrapped.complete(OffsetCommitResponse(topics=(OffsetCommitResponseTopic(name="a", partitions=(
        OffsetCommitResponsePartition(partition_index=0, error_code=Errors.NONE),
        OffsetCommitResponsePartition(partition_index=1, error_code=Errors.NONE))),)))
    (answer,) = slot.answers
    assert _codes(answer) == {("a", 0): Errors.NONE, ("a", 1): Errors.NONE,
                              ("x", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                              ("x", 1): Errors.UNKNOWN_TOPIC_OR_PARTITION}
