"""The kafka layer: Apache Kafka itself beside pykraft (issue 20).

Kafka's jars come from the pinned ``deploy/kafka/pom.xml``, resolved by Maven into a
cache outside the repo on first use (``deploy.kafka.resolve``); a machine without java or
mvn fails here with what to install, never skips: a layer that tests nothing must not
look green.

At most one start of each cluster per layer: one real Kafka cluster (3 controllers +
3 brokers, ``deploy.kafka_cluster.KafkaCluster``) and one pykraft cluster (3 + 3 with the
shared test profile, as tests/clients starts it), each started by the first test that asks
for it and shared by every module after. Tests create topics of their own names. A failing
test gets every node's log tail of both clusters.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from deploy import ClusterSpec, LocalCluster
from deploy.kafka import KafkaDistribution, resolve_kafka
from deploy.kafka.jvm import write_log_configs
from deploy.kafka_cluster import KafkaCluster, KafkaClusterSpec

_LIVE_KAFKA: list[KafkaCluster] = []
_LIVE_PYKRAFT: list[LocalCluster] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for kafka in _LIVE_KAFKA:
            report.sections.append((f"Kafka node logs of {kafka.base_dir}", kafka.log_tails(40)))
        for cluster in _LIVE_PYKRAFT:
            report.sections.append((f"pykraft node logs of {cluster.base_dir}",
                                    cluster.log_tails(40)))
    return report


@pytest.fixture(scope="session")
def kafka_distribution() -> KafkaDistribution:
    """The pinned Kafka's jars (a first run resolves them with Maven: about a minute)."""
    return resolve_kafka()


@pytest.fixture(scope="session")
def tools_log_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Kafka's tools logging (WARN to stderr) for Java drivers run beside no Kafka cluster."""
    _server, tools = write_log_configs(tmp_path_factory.mktemp("kafka-logging"))
    return tools


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory,
          kafka_distribution: KafkaDistribution) -> Iterator[KafkaCluster]:
    """A real Apache Kafka cluster: controllers 1-3, brokers 4-6, Kafka's defaults."""
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka"), KafkaClusterSpec(),
                           distribution=kafka_distribution)
    _LIVE_KAFKA.append(cluster)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        _LIVE_KAFKA.remove(cluster)


@pytest.fixture(scope="session")
def pykraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A pykraft cluster as tests/clients starts one: 3 controllers + 3 brokers."""
    cluster = LocalCluster(tmp_path_factory.mktemp("pykraft"),
                           ClusterSpec(controllers=3, brokers=3))
    _LIVE_PYKRAFT.append(cluster)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        _LIVE_PYKRAFT.remove(cluster)


@pytest.fixture(scope="session")
def pykraft_bootstrap(pykraft: LocalCluster) -> str:
    return ",".join(f"{host}:{port}" for host, port in map(pykraft.address, pykraft.broker_ids))
