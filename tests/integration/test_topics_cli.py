"""``kraft topics`` against real controllers and a broker: create, describe, offline partitions.

With one broker and replication factor 1, killing the broker leaves its
partitions without any eligible replica: the controller must not elect a
leader outside the ISR (unclean election is off), so they go offline and are
reported by ``--describe --unavailable-partitions``, by the active
controller's log and by its offline partition count.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deploy import LocalCluster
from tests.integration.checks import StartCluster
from tests.integration.test_brokers import active_image, broker_states, describe_image

_DEADLINE_S = 30.0
_ROOT = Path(__file__).resolve().parents[2]


def kraft(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env,
        timeout=60, check=False,
    )


def topics(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return kraft("topics", "--bootstrap-controller", cluster.bootstrap_controllers, *args)


def test_topics_cli_creates_describes_and_reports_offline_partitions(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3, brokers=1)
    [broker] = cluster.broker_ids
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == {broker: False} or None,
        "an unfenced broker", _DEADLINE_S,
    )
    created = topics(cluster, "--create", "--topic", "events", "--partitions", "3",
                     "--replication-factor", "1")
    assert (created.returncode, created.stdout) == (0, "Created topic events.\n"), created.stderr
    again = topics(cluster, "--create", "--topic", "events", "--partitions", "3")
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stdout
    assert topics(cluster, "--create", "--topic", "wide", "--replication-factor", "2").returncode == 1
    assert topics(cluster, "--list").stdout == "events\n"

    described = topics(cluster, "--describe", "--topic", "events").stdout.splitlines()
    assert described[0].startswith("Topic: events\tTopicId: ")
    assert described[0].endswith("PartitionCount: 3\tReplicationFactor: 1\tConfigs: min.insync.replicas=1")
    assert described[1:] == [
        f"\tTopic: events\tPartition: {i}\tLeader: {broker}\tReplicas: {broker}\tIsr: {broker}"
        for i in range(3)
    ]
    assert topics(cluster, "--describe", "--unavailable-partitions").stdout == ""

    cluster.kill(broker)

    def offline() -> list[str] | None:
        lines = topics(cluster, "--describe", "--unavailable-partitions").stdout.splitlines()
        return lines if len(lines) == 3 else None

    lines = cluster.wait_for(offline, "three unavailable partitions", _DEADLINE_S)
    # the last ISR member stays in the ISR: it is the only safe leader when it returns
    assert lines == [
        f"\tTopic: events\tPartition: {i}\tLeader: none\tReplicas: {broker}\tIsr: {broker}"
        for i in range(3)
    ]
    leader = cluster.leader()
    answer = describe_image(cluster, leader)
    assert answer is not None and answer.offline_partition_count == 3
    log_text = (cluster.layout[leader].log_path).read_text()
    assert "3 partition(s) offline" in log_text

    # the broker returns: unfenced, and its partitions have their leader back
    cluster.start_node(broker)
    cluster.wait_for(
        lambda: topics(cluster, "--describe", "--unavailable-partitions").stdout == "" or None,
        "partitions online again", _DEADLINE_S,
    )
