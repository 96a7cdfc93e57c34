"""``kraft topics`` and ``kraft metadata-quorum`` with ``--bootstrap-server``: a broker
forwards admin requests and DescribeQuorum to the active controller, also after that
controller is killed."""

from __future__ import annotations

import re

import pytest

from deploy import LocalCluster
from tests.integration.checks import StartCluster
from tests.integration.test_brokers import active_image, broker_states
from tests.integration.test_topics_cli import kraft

_DEADLINE_S = 30.0


def via(cluster: LocalCluster, broker: int, *args: str) -> tuple[int, str, str]:
    host, port = cluster.address(broker)
    done = kraft("topics", "--bootstrap-server", f"{host}:{port}", *args)
    return done.returncode, done.stdout, done.stderr


def quorum_status(cluster: LocalCluster, broker: int) -> dict[str, str]:
    """``kraft metadata-quorum --bootstrap-server <broker> describe --status``, by key."""
    host, port = cluster.address(broker)
    done = kraft("metadata-quorum", "--bootstrap-server", f"{host}:{port}", "describe",
                 "--status")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = (line.split(":", 1) for line in done.stdout.splitlines())
    return {key: value.strip() for key, value in rows}


def test_topics_through_brokers_survive_a_controller_failover(start_cluster: StartCluster) -> None:
    cluster = start_cluster(controllers=3, brokers=3)
    first, second, _third = cluster.broker_ids
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == dict.fromkeys(cluster.broker_ids, False)
        or None, "three unfenced brokers", _DEADLINE_S,
    )
    code, out, err = via(cluster, first, "--create", "--topic", "orders", "--partitions", "6",
                         "--replication-factor", "3")
    assert (code, out) == (0, "Created topic orders.\n"), err

    def described() -> list[str] | None:
        code, out, _ = via(cluster, second, "--describe", "--topic", "orders")
        lines = out.splitlines()
        return lines if code == 0 and len(lines) == 7 else None

    lines = cluster.wait_for(described, "orders described by another broker", _DEADLINE_S)
    assert "PartitionCount: 6\tReplicationFactor: 3" in lines[0]
    assert all("Leader: none" not in line for line in lines[1:])
    # as Kafka's TopicCommand: the command's error on stdout
    code, out, _ = via(cluster, second, "--create", "--topic", "orders", "--partitions", "1")
    assert code == 1 and "TOPIC_ALREADY_EXISTS" in out

    # the active controller dies: the broker finds the next one
    killed = cluster.leader()
    cluster.kill(killed)
    code, out, err = via(cluster, first, "--create", "--topic", "after", "--partitions", "2",
                         "--replication-factor", "2")
    assert (code, out) == (0, "Created topic after.\n"), err
    # the new leader lists each broker as an observer once it has fetched from it
    def observed_by_all() -> dict[str, str] | None:
        status = quorum_status(cluster, second)
        observers = re.findall(r'"id": (\d+)', status["CurrentObservers"])
        return status if sorted(int(o) for o in observers) == cluster.broker_ids else None

    status = cluster.wait_for(
        observed_by_all, "the brokers observing the new leader, told through a broker", _DEADLINE_S
    )
    assert status["ClusterId"] == cluster.cluster_id
    assert int(status["LeaderId"]) not in (killed, -1)
    assert int(status["LeaderId"]) == cluster.leader()
    code, _, err = via(cluster, first, "--alter", "--topic", "after", "--partitions", "4")
    assert code == 0, err
    code, _, err = via(cluster, first, "--delete", "--topic", "orders")
    assert code == 0, err

    def listed() -> str | None:
        code, out, _ = via(cluster, second, "--list")
        return out if code == 0 and out == "after\n" else None

    cluster.wait_for(listed, "only 'after' listed", _DEADLINE_S)
    [after] = [t for t in active_image(cluster)["topics"] if t["name"] == "after"]
    assert len(after["partitions"]) == 4


def test_kafka_pythons_admin_client_creates_and_deletes_topics_through_a_broker(
    start_cluster: StartCluster,
) -> None:
    admin_module = pytest.importorskip("kafka.admin", reason="kafka-python is not installed")
    cluster = start_cluster(controllers=3, brokers=3)
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == dict.fromkeys(cluster.broker_ids, False)
        or None, "three unfenced brokers", _DEADLINE_S,
    )
    host, port = cluster.address(cluster.broker_ids[0])
    admin = admin_module.KafkaAdminClient(bootstrap_servers=f"{host}:{port}",
                                          request_timeout_ms=10_000)
    try:
        created = admin.create_topics([admin_module.NewTopic("kp", 3, 2)])
        [topic] = created["topics"]
        assert (topic["name"], topic["error_code"], topic["num_partitions"]) == ("kp", 0, 3)
        # the controller's safer default, reported back as a topic config
        assert topic["configs"]["min.insync.replicas"]["value"] == "2"
        # the broker learns of the topic when it has fetched the records (as in Kafka)
        cluster.wait_for(lambda: "kp" in admin.list_topics() or None, "kp listed", _DEADLINE_S)
        deleted = admin.delete_topics(["kp"])
        [gone] = deleted["topics"]
        assert gone["error_code"] == 0
    finally:
        admin.close()
    assert all(t["name"] != "kp" for t in active_image(cluster)["topics"])
