"""kafka-python (unmodified) against a real cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from deploy import LocalCluster

from .admin_checks import check_partitions, eventually

TIMEOUT_MS = 20_000


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    yield client
    client.close()


def test_topics_created_described_and_deleted(admin: KafkaAdminClient, cluster: LocalCluster) -> None:
    answer = admin.create_topics([NewTopic("kp-admin", 3, 3)])
    assert [t["error_code"] for t in answer["topics"]] == [0]
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("kp-admin", 3, 3)], raise_errors=True)
    eventually(lambda: "kp-admin" in admin.list_topics(), "kp-admin listed")
    eventually(
        lambda: admin.describe_topics(["kp-admin"])[0]["error_code"] == 0, "kp-admin described"
    )
    (described,) = admin.describe_topics(["kp-admin"])
    parts = described["partitions"]
    check_partitions(
        {p["partition_index"]: p["leader_id"] for p in parts},
        {p["partition_index"]: p["replica_nodes"] for p in parts},
        partitions=3,
        brokers=cluster.broker_ids,
    )
    admin.delete_topics(["kp-admin"])
    eventually(lambda: "kp-admin" not in admin.list_topics(), "kp-admin gone")


def test_each_broker_describes_its_own_configs(
    admin: KafkaAdminClient, cluster: LocalCluster
) -> None:
    for broker in cluster.broker_ids:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker))
        described = admin.describe_configs([resource], config_filter="all")
        (configs,) = described["broker"].values()
        assert set(described["broker"]) == {str(broker)}
        assert {"min.insync.replicas", "unclean.leader.election.enable"} <= set(configs)
