"""A foreign cluster id is answered INCONSISTENT_CLUSTER_ID before the request is parsed.

Found by the differential tests (tests/kafka/differential): a Fetch v13+ on the controller
listener with a foreign cluster id and no topic id (so not addressed to the metadata
partition) got INVALID_REQUEST from pykraft; Kafka's KafkaRaftClient checks the cluster id
first (``hasValidClusterId``, then ``hasValidTopicPartition``) in its Fetch, Vote,
BeginQuorumEpoch and EndQuorumEpoch handlers, and answers INCONSISTENT_CLUSTER_ID (104).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from quorum.raft.output import InboundRequest
from quorum.raft.rpc import ErrorCode
from quorum.wire.messages import FetchRequestTopic

from .builders import (
    begin_epoch_request,
    end_epoch_request,
    fetch_request,
    make_leader,
    new_core,
    response_to,
    vote_request,
)


def _elsewhere(request: InboundRequest) -> InboundRequest:
    """The same request addressed to a topic other than the metadata log."""
    message: Any = request.message
    (topic,) = message.topics
    if isinstance(topic, FetchRequestTopic):  # the metadata log is named by id from v13
        moved = attrs.evolve(topic, topic="", topic_id=uuid.UUID(int=0))
    else:
        moved = attrs.evolve(topic, topic_name="elsewhere")
    return InboundRequest(request.handle, attrs.evolve(message, topics=(moved,)))


BUILDERS: dict[str, Callable[[str | None], InboundRequest]] = {
    "fetch": lambda cluster_id: fetch_request(2, 1, cluster_id=cluster_id),
    "vote": lambda cluster_id: vote_request(2, 2, cluster_id=cluster_id),
    "begin-quorum-epoch": lambda cluster_id: begin_epoch_request(2, 2, cluster_id=cluster_id),
    "end-quorum-epoch": lambda cluster_id: end_epoch_request(2, 2, cluster_id=cluster_id),
}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_the_cluster_id_is_checked_before_the_topic_partition(kind: str) -> None:
    core = new_core(1)
    make_leader(core)
    foreign = _elsewhere(BUILDERS[kind]("another-cluster"))
    answer = response_to(core.handle(foreign, 10_001), foreign)
    assert answer.error == ErrorCode.INCONSISTENT_CLUSTER_ID
    # our cluster, another topic partition: the request itself is invalid
    ours = _elsewhere(BUILDERS[kind]("pykraft-test-cluster"))
    answer = response_to(core.handle(ours, 10_002), ours)
    assert answer.error == ErrorCode.INVALID_REQUEST
