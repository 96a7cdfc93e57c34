"""Produce v0-2 on the broker listener: advertised (as Kafka 4 does) but never written.

Found by the differential tests (tests/kafka/differential): pykraft appended the v2 batch
of a Produce v0 request, where Kafka 4.4 closes the connection.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from broker.api.metadata import ListenerView
from broker.router import BrokerRequestRejected, BrokerRouter
from quorum.controller.image import EMPTY_IMAGE
from quorum.node.connection import ServerConnection
from quorum.wire.messages import ProduceRequest, ProduceRequestPartition, ProduceRequestTopic
from quorum.wire.protocol import RequestHeader, encode_request
from quorum.wire.records import build_batch_from_values

VIEW = ListenerView(
    node_id=7, cluster_id="cluster", listener_name="PLAINTEXT", host="b7", port=9092, rack=None
)


class RecordingReplicas:
    def __init__(self) -> None:
        self.produced: list[Any] = []

    def produce(self, slot: Any, request: Any) -> None:
        self.produced.append(request)


def _router(replicas: RecordingReplicas) -> BrokerRouter:
    return BrokerRouter(view=VIEW, image=lambda: EMPTY_IMAGE, replicas=cast(Any, replicas),
                        producer_ids=cast(Any, object()), groups=cast(Any, object()))


def _frame(version: int) -> bytes:
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=(ProduceRequestTopic(
        name="t", partition_data=(ProduceRequestPartition(
            index=0, records=build_batch_from_values([b"v"])),)),))
    header = RequestHeader(api_key=0, api_version=version, correlation_id=1)
    return encode_request(header, request)[4:]


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_produce_before_v3_closes_the_connection_and_writes_nothing(version: int) -> None:
    replicas = RecordingReplicas()
    router = _router(replicas)
    assert router.table[0] == (0, 9)  # still advertised, as Kafka 4 advertises it
    with pytest.raises(BrokerRequestRejected, match=f"Produce v{version}"):
        await router.dispatch(ServerConnection("test"), _frame(version))
    assert replicas.produced == []


async def test_produce_v3_reaches_the_replicas() -> None:
    replicas = RecordingReplicas()
    await _router(replicas).dispatch(ServerConnection("test"), _frame(3))
    assert len(replicas.produced) == 1
