"""Every API both listeners advertise, fed well-formed requests with unusual content.

A seeded ``RequestMaker`` builds requests at random versions of each API's served range
(``request_fuzz``) and sends them to every node of a cluster of its own: one
controller and two brokers holding two topics with records. Requests may do what
they ask (create, delete, fence, elect): the cluster is this test's alone. What
must hold is what Kafka does: every node answers or closes the connection, with an
answer the client can read, and no node fails (none exits, none prints a
traceback). The run is bounded in requests per API and in time.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from deploy import ClusterSpec, LocalCluster
from deploy.waiting import wait_until
from quorum.client import BlockingKafkaConnection
from quorum.client.errors import ConnectionClosedError, ProtocolError, RequestTimeoutError
from quorum.wire.apis import API_BY_KEY
from quorum.wire.errors import WireEncodeError
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    MetadataRequest,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
)
from quorum.wire.records import build_batch_from_values
from tests.integration.conftest import _close, _started

from .request_fuzz import RequestMaker

SEED: Final = 20261129
PER_API: Final = 120  # requests per API and node
BUDGET_S: Final = 45.0  # the whole run's sending, whatever the machine's speed
REQUEST_TIMEOUT_S: Final = 3.0
_PRODUCE: Final = 0
# Kafka 4 no longer reads message formats v0 and v1 (Produce v0-2): the broker closes
_OLDEST_PRODUCE_READ: Final = 3


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    started = _started(tmp_path_factory.mktemp("fuzz"), ClusterSpec(controllers=1, brokers=2))
    yield started
    _close(started)


def _connect(cluster: LocalCluster, node: int) -> BlockingKafkaConnection:
    return BlockingKafkaConnection.connect(*cluster.address(node), timeout=10.0)


def _topics_with_records(cluster: LocalCluster) -> dict[str, uuid.UUID]:
    broker = cluster.broker_ids[0]
    with _connect(cluster, broker) as conn:
        conn.request(CreateTopicsRequest(topics=(
            CreateTopicsRequestTopic(name="t1", num_partitions=3, replication_factor=2),
            CreateTopicsRequestTopic(name="t2", num_partitions=1, replication_factor=1),
        ), timeout_ms=10_000), timeout=20.0)

    def placed() -> dict[str, Any] | None:
        with _connect(cluster, broker) as conn:
            answer = conn.request(MetadataRequest(topics=None), timeout=10.0)
        topics = {t.name: t for t in answer.topics}
        if {"t1", "t2"} <= set(topics) and all(
            p.leader_id >= 0 for t in topics.values() for p in t.partitions
        ):
            return topics
        return None

    topics = wait_until(placed, "both topics with leaders", 60.0)
    for name, topic in topics.items():
        for partition in topic.partitions:
            with _connect(cluster, partition.leader_id) as conn:
                answer = conn.request(ProduceRequest(acks=-1, timeout_ms=5_000, topic_data=(
                    ProduceRequestTopic(name=name, partition_data=(ProduceRequestPartition(
                        index=partition.partition_index,
                        records=build_batch_from_values([b"a", b"b", b"c"]),
                    ),)),
                )), timeout=10.0)
                assert answer.responses[0].partition_responses[0].error_code == 0
    return {name: topic.topic_id for name, topic in topics.items()}


def _tracebacks(cluster: LocalCluster) -> dict[int, str]:
    found = {}
    for node in sorted(cluster.layout):
        path: Path = cluster.layout[node].log_path
        if path.exists() and "Traceback" in path.read_text(errors="replace"):
            found[node] = cluster.last_traceback(node)
    return found


def test_every_api_survives_unusual_requests_on_every_node(fuzz_cluster: LocalCluster) -> None:
    cluster = fuzz_cluster
    topics = _topics_with_records(cluster)
    rng = random.Random(SEED)
    maker = RequestMaker(rng, topics=topics, node_ids=sorted(cluster.layout))
    sent: Counter[str] = Counter()
    unreadable: list[str] = []
    deadline = time.monotonic() + BUDGET_S  # a bound on the run, not a wait for a condition
    for node in [*cluster.broker_ids, *cluster.node_ids]:
        conn = _connect(cluster, node)
        broken = False
        table = dict(conn.server_versions or {})
        try:
            for key in sorted(table):
                api = API_BY_KEY.get(key)
                if api is None:
                    continue
                low, high = max(table[key][0], api.low), min(table[key][1], api.high)
                for _ in range(PER_API):
                    if time.monotonic() > deadline:
                        break
                    version = rng.randint(low, high)
                    if key == _PRODUCE and version < _OLDEST_PRODUCE_READ:
                        continue
                    request = maker.request(api.request, version)
                    try:
                        if broken:
                            conn, broken = _connect(cluster, node), False
                        if isinstance(request, ProduceRequest) and request.acks == 0:
                            conn.send_no_response(request, version=version,
                                                  timeout=REQUEST_TIMEOUT_S)
                        else:
                            conn.request(request, version=version, timeout=REQUEST_TIMEOUT_S)
                    except WireEncodeError:
                        continue  # a value this version cannot carry: not sent
                    except ProtocolError as exc:
                        unreadable.append(f"node {node} {api.name} v{version}: {exc}: "
                                          f"{request!r:.2000}")
                        conn.close()
                        broken = True
                    except (ConnectionClosedError, RequestTimeoutError):
                        conn.close()  # closing is an answer Kafka gives too; a new one next
                        broken = True
                    sent[f"{node}:{api.name}"] += 1
                running = {n: cluster.is_running(n) for n in sorted(cluster.layout)}
                assert all(running.values()), (api.name, running, _tracebacks(cluster))
        finally:
            conn.close()
    assert _tracebacks(cluster) == {}
    assert unreadable == []
    assert sum(sent.values()) >= 300, sent  # the run did send, even on a slow machine
    for node in sorted(cluster.layout):  # and every node still answers
        with _connect(cluster, node) as conn:
            assert conn.server_versions
