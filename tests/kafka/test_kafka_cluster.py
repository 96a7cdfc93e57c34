"""The launcher's real Apache Kafka cluster: started, served to Kafka's own tools, a broker
killed with -9 and restarted."""

from __future__ import annotations

import re

from deploy.kafka import KafkaDistribution
from deploy.kafka_cluster import STORAGE_TOOL, KafkaCluster

from .support import TOPIC_COMMAND, placements, wait_for_placements

TOPIC = "launcher-check"
PARTITIONS = 3


def test_the_pinned_release_holds_the_classes_the_launcher_runs(
    kafka_distribution: KafkaDistribution,
) -> None:
    # Exit moved from common.utils to common.utils.internals in 4.4 (MainRunner imports it)
    for name in (STORAGE_TOOL, "kafka.Kafka", TOPIC_COMMAND,
                 "org.apache.kafka.common.utils.internals.Exit"):
        assert kafka_distribution.has_class(name), name
    assert not kafka_distribution.has_class("org.apache.kafka.NoSuchClass")


def test_the_launcher_starts_three_controllers_and_three_brokers(kafka: KafkaCluster) -> None:
    assert kafka.controller_ids == [1, 2, 3]
    assert kafka.broker_ids == [4, 5, 6]
    assert all(kafka.is_running(n) for n in kafka.node_ids)
    assert len({kafka.address(n) for n in kafka.node_ids}) == 6


def test_kafka_topics_creates_lists_and_describes_against_the_real_cluster(
    kafka: KafkaCluster,
) -> None:
    bootstrap = ["--bootstrap-server", kafka.bootstrap_servers]
    # the tool's script (kafka-run-class.sh) starts one JVM per run: so does run_tool
    created = kafka.run_tool(TOPIC_COMMAND, [
        *bootstrap, "--create", "--topic", TOPIC, "--partitions", str(PARTITIONS),
        "--replication-factor", "3",
    ])
    assert created.check().stdout == f"Created topic {TOPIC}.\n"
    wait_for_placements(map(kafka.address, kafka.broker_ids), {TOPIC: PARTITIONS})
    # two more runs in one JVM (MainRunner), as the later tests run tools
    listed, described = kafka.run_mains([
        (TOPIC_COMMAND, *bootstrap, "--list"),
        (TOPIC_COMMAND, *bootstrap, "--describe", "--topic", TOPIC),
    ])
    assert TOPIC in listed.check().stdout.splitlines()
    lines = described.check().stdout.splitlines()
    assert re.match(rf"Topic: {TOPIC}\tTopicId: \S+\tPartitionCount: {PARTITIONS}\t"
                    r"ReplicationFactor: 3\t", lines[0]), lines[0]
    partition_lines = [line for line in lines[1:] if "Partition:" in line]
    assert len(partition_lines) == PARTITIONS
    for index, line in enumerate(partition_lines):
        replicas = re.search(r"Replicas: ([\d,]+)", line)
        assert replicas is not None and f"Partition: {index}\t" in line
        assert sorted(map(int, replicas.group(1).split(","))) == kafka.broker_ids


def test_a_broker_killed_with_sigkill_loses_its_leadership_and_restarts(
    kafka: KafkaCluster,
) -> None:
    first = kafka.address(kafka.broker_ids[0])
    wait_for_placements([first], {TOPIC: PARTITIONS})
    before = placements(first, TOPIC)
    assert before is not None
    victim = before[0].leader
    survivor = next(kafka.address(b) for b in kafka.broker_ids if b != victim)

    kafka.kill(victim)
    assert not kafka.is_running(victim)

    # the controller fences it after broker.session.timeout.ms (Kafka's 9 s) and elects
    # another leader from the ISR
    def moved() -> bool:
        now = placements(survivor, TOPIC)
        return now is not None and now[0].leader not in (victim, -1)

    kafka.wait_for(moved, f"partition 0 to leave killed broker {victim}", 60.0)

    kafka.restart(victim)
    assert kafka.is_running(victim)

    # back in the ISR of every partition it holds, as the restarted broker itself reports
    def caught_up() -> bool:
        now = placements(kafka.address(victim), TOPIC)
        return now is not None and all(victim in p.isr for p in now.values()
                                       if victim in p.replicas)

    kafka.wait_for(caught_up, f"restarted broker {victim} back in the ISR", 60.0)
