"""The Java ``Admin`` (the pinned kafka-clients) against pykraft, call for call as against Kafka.

``JavaAdmin.java`` runs every Admin call of issue 20 against each cluster, through
``bootstrap.servers`` and through ``bootstrap.controllers`` (KIP-919), all in one JVM, and
prints one line per call: ``LABEL MODE CALL name OK summary`` or ``... FAIL Class: message``.
A summary holds only what both clusters must agree on (counts, offsets, timestamps relative
to the records', config values and sources, per-partition error classes). Each call must
end on pykraft as on Kafka: the same OK or FAIL, the same exception class, and for an OK the
same summary. Through ``bootstrap.controllers`` Kafka's own Admin refuses most calls before
sending anything (``UnsupportedEndpointTypeException``: only describeCluster,
describeConfigs, incrementalAlterConfigs, the reassignment calls and
describeMetadataQuorum go to a controller), so those lines compare what pykraft's
controllers answer to the calls that reach them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import attrs
import pytest

from deploy import LocalCluster
from deploy.kafka import KafkaDistribution
from deploy.kafka_cluster import KafkaCluster

from .support import JavaRun, run_java

_RUN_S: Final = 300.0
MODES: Final = ("servers", "controllers")
CALLS: Final = (
    "describeCluster", "listTopics", "describeTopics", "createTopics", "createPartitions",
    "deleteTopics", "listOffsets", "deleteRecords", "describeLogDirs", "describeConfigs",
    "incrementalAlterConfigs", "electLeaders", "alterPartitionReassignments",
    "listPartitionReassignments", "describeMetadataQuorum", "listConsumerGroups",
    "describeConsumerGroups", "listConsumerGroupOffsets", "deleteConsumerGroups",
)
# what every call through bootstrap.servers answers on Kafka (3 brokers, 3 controllers)
# given the driver's setup: the check that the driver itself asks the right questions
KAFKA_SERVERS: Final = {
    "describeCluster": "nodes=3 controller-among-nodes=true cluster-id=true",
    "listOffsets": "earliest=0@-1 forTimestamp(BASE+5)=5@BASE+5 "
                   "forTimestamp(BASE+60000)=-1@-1 latest=10@-1 maxTimestamp=9@BASE+9",
    "deleteRecords": "low-watermark=3",
    "incrementalAlterConfigs": "retention.ms=123456(DYNAMIC_TOPIC_CONFIG)",
    "alterPartitionReassignments": "replicas-in-the-new-order=true",
    "listConsumerGroupOffsets": "[-data-0=5]",
}
_LINE: Final = re.compile(r"^(kafka|pykraft) (servers|controllers) CALL (\w+) (OK|FAIL) (.*)$")


@attrs.frozen
class Answer:
    ok: bool
    detail: str  # the summary of an OK, "Class: message" of a FAIL

    @property
    def comparable(self) -> str:
        """What must be equal on both clusters: the summary, or the exception class."""
        return "OK " + self.detail if self.ok else "FAIL " + self.detail.split(":", 1)[0]


def _controllers(cluster: LocalCluster) -> str:
    ids = [i for i in cluster.node_ids if i not in cluster.broker_ids]
    return ",".join(f"{host}:{port}" for host, port in map(cluster.address, ids))


@pytest.fixture(scope="module")
def admin_run(kafka_distribution: KafkaDistribution, tools_log_config: Path,
              kafka: KafkaCluster, pykraft: LocalCluster, pykraft_bootstrap: str) -> JavaRun:
    return run_java(kafka_distribution, tools_log_config, "JavaAdmin.java", [
        "java-admin",
        "kafka", kafka.bootstrap_servers, kafka.bootstrap_controllers,
        "pykraft", pykraft_bootstrap, _controllers(pykraft),
    ], timeout=_RUN_S)


@pytest.fixture(scope="module")
def answers(admin_run: JavaRun) -> dict[tuple[str, str, str], Answer]:
    found: dict[tuple[str, str, str], Answer] = {}
    for line in admin_run.stdout.splitlines():
        match = _LINE.match(line)
        if match:
            cluster, mode, call, status, detail = match.groups()
            found[(cluster, mode, call)] = Answer(status == "OK", detail)
    assert admin_run.exit_code == 0, admin_run.explain()
    return found


def test_the_driver_runs_every_call_in_both_modes_on_both_clusters(
        answers: dict[tuple[str, str, str], Answer], admin_run: JavaRun) -> None:
    wanted = {(c, m, call) for c in ("kafka", "pykraft") for m in MODES for call in CALLS}
    assert set(answers) == wanted, admin_run.explain()


def test_every_call_through_bootstrap_servers_works_on_kafka(
        answers: dict[tuple[str, str, str], Answer]) -> None:
    failed = {call: answers[("kafka", "servers", call)].detail for call in CALLS
              if not answers[("kafka", "servers", call)].ok}
    assert not failed
    summaries = {call: answers[("kafka", "servers", call)].detail for call in KAFKA_SERVERS}
    assert summaries == KAFKA_SERVERS


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call", CALLS)
def test_the_call_answers_on_pykraft_as_on_kafka(
        answers: dict[tuple[str, str, str], Answer], mode: str, call: str) -> None:
    kafka, pykraft = answers[("kafka", mode, call)], answers[("pykraft", mode, call)]
    assert pykraft.comparable == kafka.comparable, (
        f"{call} through bootstrap.{mode}:\n  kafka:   {kafka}\n  pykraft: {pykraft}")
