"""The Java client against pykraft: the pinned kafka-clients 4.x and the 3.9.x of Spark.

``ClientRoundTrip.java`` runs each case in one JVM: Admin creates the case's topic, a
producer at its defaults (idempotent, acks=all) plus the case's settings writes the
records, and a group-less consumer (assign + seek) reads them back, checking count, order,
keys and values. The cases: the defaults, idempotence off, acks=1 and acks=0 (either turns
idempotence off, as the client does when it is not set explicitly).

``JavaClientsGroup.java`` is the consumer in a group (classic protocol, the default):
two consumers of one group share a topic's partitions after a rebalance, commit with
commitSync and leave; a third resumes from the committed offsets.

The same round trips run with kafka-clients 3.9.x, what Spark 4.x's Kafka connector
brings (``deploy/kafka/clients-3.9/pom.xml``, resolved into a cache of its own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from deploy.kafka import KafkaDistribution
from deploy.kafka.resolve import resolve_clients

from .support import JavaRun, run_java

COUNT: Final = 500
PER_PARTITION: Final = 50
_RUN_S: Final = 240.0
# topic -> the producer settings of its case
CASES: Final = {
    "java-plain": ("enable.idempotence=false",),
    "java-defaults": (),
    "java-acks1": ("acks=1",),
    "java-acks0": ("acks=0",),
}
CASES_3_9: Final = {
    "java39-defaults": (),
    "java39-acks1": ("acks=1",),
}


@pytest.fixture(scope="session")
def spark_clients() -> KafkaDistribution:
    """kafka-clients 3.9.x and its run-time jars (a first run resolves them: about 30 s)."""
    return resolve_clients()


def _round_trips(distribution: KafkaDistribution, log_config: Path, bootstrap: str,
                 cases: dict[str, tuple[str, ...]]) -> JavaRun:
    words = [",".join((topic, *settings)) for topic, settings in cases.items()]
    return run_java(distribution, log_config, "ClientRoundTrip.java",
                    [bootstrap, str(COUNT), *words], timeout=_RUN_S)


@pytest.fixture(scope="module")
def round_trips(kafka_distribution: KafkaDistribution, tools_log_config: Path,
                pykraft_bootstrap: str) -> JavaRun:
    return _round_trips(kafka_distribution, tools_log_config, pykraft_bootstrap, CASES)


@pytest.fixture(scope="module")
def round_trips_3_9(spark_clients: KafkaDistribution, tools_log_config: Path,
                    pykraft_bootstrap: str) -> JavaRun:
    return _round_trips(spark_clients, tools_log_config, pykraft_bootstrap, CASES_3_9)


def outcome(run: JavaRun, topic: str) -> tuple[list[str], str]:
    """The case's progress lines and its outcome line (without the topic prefix)."""
    assert run.exit_code == 0, run.explain()
    mine = [line.removeprefix(f"{topic}: ") for line in run.stdout.splitlines()
            if line.startswith(f"{topic}: ")]
    assert mine, run.explain()
    return mine[:-1], mine[-1]


@pytest.mark.parametrize("topic", list(CASES))
def test_the_java_client_round_trip(round_trips: JavaRun, topic: str) -> None:
    progress, result = outcome(round_trips, topic)
    assert result == "OK", round_trips.explain()
    assert progress == [f"produced {COUNT}", f"consumed {COUNT}"]


@pytest.mark.parametrize("topic", list(CASES_3_9))
def test_the_spark_java_client_round_trip(round_trips_3_9: JavaRun,
                                          spark_clients: KafkaDistribution, topic: str) -> None:
    assert spark_clients.version.startswith("3.9."), spark_clients.version
    assert (spark_clients.libs / f"kafka-clients-{spark_clients.version}.jar").is_file()
    progress, result = outcome(round_trips_3_9, topic)
    assert result == "OK", round_trips_3_9.explain()
    assert progress == [f"produced {COUNT}", f"consumed {COUNT}"]


def test_java_consumers_share_a_group_rebalance_commit_and_resume(
        kafka_distribution: KafkaDistribution, tools_log_config: Path,
        pykraft_bootstrap: str) -> None:
    run = run_java(kafka_distribution, tools_log_config, "JavaClientsGroup.java",
                   [pykraft_bootstrap, "java-group-topic", "java-group", str(PER_PARTITION)],
                   timeout=_RUN_S)
    progress, result = outcome(run, "group")
    assert result == "OK", run.explain()
    assert progress == [
        "A held 4 partitions, read and committed wave 1",
        "rebalance: A and B hold 2 partitions each",
        "A and B read and committed wave 2 from their own partitions",
        "C resumed from the committed offsets and read wave 3 only",
    ], run.explain()
