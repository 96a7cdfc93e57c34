"""confluent-kafka (librdkafka, unmodified) against a real cluster."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from deploy import LocalCluster

from .admin_checks import check_partitions, eventually

TIMEOUT_S = 20


@pytest.fixture
def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def test_topics_created_described_and_deleted(admin: AdminClient, cluster: LocalCluster) -> None:
    # the first thing a new user tries: librdkafka asks for all topics with a count it
    # never shrinks (trailing bytes after the request body)
    assert "cf-admin" not in admin.list_topics(timeout=TIMEOUT_S).topics
    (future,) = admin.create_topics([NewTopic("cf-admin", 3, 3)]).values()
    assert future.result(TIMEOUT_S) is None
    (again,) = admin.create_topics([NewTopic("cf-admin", 3, 3)]).values()
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        again.result(TIMEOUT_S)

    def described() -> bool:
        found = admin.list_topics(topic="cf-admin", timeout=TIMEOUT_S).topics["cf-admin"]
        return found.error is None

    eventually(described, "cf-admin described")
    topic = admin.list_topics(topic="cf-admin", timeout=TIMEOUT_S).topics["cf-admin"]
    check_partitions(
        {p.id: p.leader for p in topic.partitions.values()},
        {p.id: p.replicas for p in topic.partitions.values()},
        partitions=3,
        brokers=cluster.broker_ids,
    )
    (gone,) = admin.delete_topics(["cf-admin"]).values()
    assert gone.result(TIMEOUT_S) is None
    eventually(
        lambda: "cf-admin" not in admin.list_topics(timeout=TIMEOUT_S).topics, "cf-admin gone"
    )
