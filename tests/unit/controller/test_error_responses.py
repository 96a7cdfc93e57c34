"""A whole-request error answer encodes at every version its request is served at."""

from __future__ import annotations

import random

import pytest

from quorum.controller.error_responses import CONTROLLER_REQUESTS, error_response
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeQuorumRequest,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
)
from quorum.wire.schema import message_info
from tests.unit.wire.strategies import random_message


def _served() -> list[object]:
    """(request class, version) for every version a listener serves it at."""
    cases = []
    for cls in sorted(CONTROLLER_REQUESTS | {DescribeQuorumRequest}, key=lambda c: c.__name__):
        key = message_info(cls).api_key
        versions = {
            v
            for table in (CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS)
            if key in table
            for v in range(table[key][0], table[key][1] + 1)
        }
        cases += [pytest.param(cls, v, id=f"{cls.__name__}-v{v}") for v in sorted(versions)]
    return cases


@pytest.mark.parametrize(("cls", "version"), _served())
def test_a_not_controller_answer_encodes_at_the_requests_version(cls: type, version: int) -> None:
    rng = random.Random(f"{cls.__name__}-{version}")
    for _ in range(20):
        request = random_message(cls, version, rng)
        encode(error_response(request, Errors.NOT_CONTROLLER, "moved", version=version), version)


def test_elect_leaders_errors_every_partition_asked_about_and_the_top_only_from_v1() -> None:
    request = ElectLeadersRequest(
        topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(3, 4)),)
    )
    for version, top in ((0, Errors.NONE), (1, Errors.NOT_CONTROLLER)):
        answer = error_response(request, Errors.NOT_CONTROLLER, "moved", version=version)
        assert answer.error_code == top
        assert [(r.topic, [(p.partition_id, p.error_code, p.error_message)
                           for p in r.partition_result])
                for r in answer.replica_election_results] == [
            ("t", [(3, Errors.NOT_CONTROLLER, "moved"), (4, Errors.NOT_CONTROLLER, "moved")])
        ]
