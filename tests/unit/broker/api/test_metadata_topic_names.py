"""Metadata for a topic name no topic may have: INVALID_TOPIC_EXCEPTION, as Kafka answers.

Found by the differential tests (tests/kafka/differential): pykraft answered
UNKNOWN_TOPIC_OR_PARTITION (3) where Kafka 4.4 answers INVALID_TOPIC_EXCEPTION (17).
"""

from __future__ import annotations

import pytest

from broker.api.metadata import ListenerView, metadata_response
from quorum.controller.image import EMPTY_IMAGE
from quorum.wire.error_codes import Errors
from quorum.wire.messages import MetadataRequest, MetadataRequestTopic

VIEW = ListenerView(
    node_id=7, cluster_id="cluster", listener_name="PLAINTEXT", host="b7", port=9092, rack=None
)


@pytest.mark.parametrize(("name", "error"), [
    ("orders", Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ("bad name!", Errors.INVALID_TOPIC_EXCEPTION),
    ("x" * 250, Errors.INVALID_TOPIC_EXCEPTION),
    ("..", Errors.INVALID_TOPIC_EXCEPTION),
])
def test_an_unknown_topic_is_unknown_unless_its_name_is_illegal(name: str, error: Errors) -> None:
    request = MetadataRequest(topics=(MetadataRequestTopic(name=name),),
                              allow_auto_topic_creation=False)
    answer = metadata_response(EMPTY_IMAGE, request, 12, VIEW)
    assert [(t.name, t.error_code) for t in answer.topics] == [(name, error)]
