"""The other way round: pykraft's client library and ``kraft`` tools against Apache Kafka.

The library (``broker.client``'s blocking front-ends) creates, describes, fills, reads and
administers a topic and a group on the real Kafka cluster of the ``kafka`` fixture. The
tools that mirror Kafka's (``kraft topics``, ``kraft metadata-quorum`` through both
bootstraps, ``kraft console-producer`` / ``console-consumer`` with and without ``--group``,
``kraft consumer-groups --list`` / ``--describe``) run against that cluster, and each one's
output is compared with Kafka's own tool for the same command on the same cluster (one JVM
for all of Kafka's runs), after ``normalise.py``. Both outputs describe the same Kafka
cluster, so both are normalised as Kafka's side: a difference is the tool's, never the
cluster's.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Final

import attrs
import pytest
from click.testing import CliRunner

from broker.client import (
    AlterConfigOp,
    BlockingAdmin,
    BlockingConsumer,
    BlockingProducer,
    ConfigResource,
    ConfigSource,
    ConsumerRecord,
    ElectionType,
    KafkaError,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
    TopicPartition,
)
from cli.main import kraft
from deploy.kafka.mains import ToolRun
from deploy.kafka_cluster import KafkaCluster
from deploy.waiting import wait_until

from .normalise import KNOWN, UNORDERED_LINES, Known, Side, normalise
from .support import TOPIC_COMMAND, wait_for_placements

LIB_TOPIC: Final = "pyk-lib"
LIB_GROUP: Final = "pyk-lib-group"
TOOL_TOPIC: Final = "pyk-tools"
TOOL_GROUP: Final = "pyk-tools-group"
PARTITIONS: Final = 3
PER_PARTITION: Final = 20
LINES: Final = tuple(f"line-{i}" for i in range(9))
_WAIT_S: Final = 30.0
_TOOL_S: Final = 60.0
KRAFT: Final = (sys.executable, "-m", "cli")
QUORUM_COMMAND: Final = "org.apache.kafka.tools.MetadataQuorumCommand"
GROUP_COMMAND: Final = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONSOLE_CONSUMER: Final = "org.apache.kafka.tools.consumer.ConsoleConsumer"


# -- the library ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def admin(kafka: KafkaCluster) -> Iterator[BlockingAdmin]:
    with BlockingAdmin({"bootstrap.servers": kafka.bootstrap_servers}) as client:
        yield client


@pytest.fixture(scope="module")
def produced(kafka: KafkaCluster, admin: BlockingAdmin) -> dict[int, list[bytes]]:
    """LIB_TOPIC created by the library's Admin and filled by its producer at the defaults
    (idempotent, acks=all): partition -> the keys written there, in order. Timestamps are
    a minute ago plus the record's index, so that by-time lookups have an answer."""
    outcome = admin.create_topics([NewTopic(name=LIB_TOPIC, num_partitions=PARTITIONS,
                                            replication_factor=3)])
    assert outcome == {LIB_TOPIC: None}
    wait_for_placements([kafka.address(b) for b in kafka.broker_ids], {LIB_TOPIC: PARTITIONS})
    base = _base_ms()
    keys: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    with BlockingProducer({"bootstrap.servers": kafka.bootstrap_servers}) as producer:
        assert producer.settings.enable_idempotence and producer.settings.acks == -1
        futures = []
        for i in range(PER_PARTITION):
            for partition in range(PARTITIONS):
                key = f"k-{partition}-{i}".encode()
                keys[partition].append(key)
                futures.append((partition, i, producer.send(
                    LIB_TOPIC, value=b"v" + key, key=key, partition=partition,
                    timestamp_ms=base + i)))
        producer.flush()
        for partition, i, future in futures:
            metadata = future.result(timeout=_WAIT_S)
            assert (metadata.partition, metadata.offset) == (partition, i)
    return keys


def _base_ms() -> int:
    return (int(time.time()) - 60) * 1000


def _read(consumer: BlockingConsumer, count: int) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    deadline = time.monotonic() + _WAIT_S
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.poll(200)
    return records


def test_the_library_describes_a_kafka_cluster_and_topic(
        kafka: KafkaCluster, admin: BlockingAdmin, produced: dict[int, list[bytes]]) -> None:
    cluster = admin.describe_cluster()
    assert sorted(b.node_id for b in cluster.brokers) == kafka.broker_ids
    assert cluster.controller is not None and cluster.controller.node_id in kafka.broker_ids
    assert LIB_TOPIC in admin.list_topics()
    topic = admin.describe_topics([LIB_TOPIC])[LIB_TOPIC]
    assert len(topic.partitions) == PARTITIONS and not topic.is_internal
    for partition in topic.partitions:
        assert len(partition.replicas) == 3 and set(partition.isr) == set(partition.replicas)
        assert partition.leader is not None and partition.leader.node_id in partition.replicas
    quorum = admin.describe_metadata_quorum()
    assert sorted(v.replica_id for v in quorum.voters) == kafka.controller_ids
    assert quorum.leader_id in kafka.controller_ids
    assert sorted(o.replica_id for o in quorum.observers) == kafka.broker_ids


def test_the_library_reads_back_what_it_wrote_to_kafka(
        kafka: KafkaCluster, produced: dict[int, list[bytes]]) -> None:
    with BlockingConsumer({"bootstrap.servers": kafka.bootstrap_servers}) as consumer:
        for partition, keys in produced.items():
            tp = TopicPartition(LIB_TOPIC, partition)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            records = _read(consumer, len(keys))
            assert [(r.offset, r.key, r.value) for r in records] == \
                [(i, key, b"v" + key) for i, key in enumerate(keys)]
        tps = [TopicPartition(LIB_TOPIC, p) for p in produced]
        assert consumer.end_offsets(tps) == dict.fromkeys(tps, PER_PARTITION)
        assert consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)


def test_the_library_lists_offsets_by_time_on_kafka(
        admin: BlockingAdmin, produced: dict[int, list[bytes]]) -> None:
    tp = TopicPartition(LIB_TOPIC, 0)
    earliest = admin.list_offsets({tp: OffsetSpec.EARLIEST})[tp]
    latest = admin.list_offsets({tp: OffsetSpec.LATEST})[tp]
    newest = admin.list_offsets({tp: OffsetSpec.MAX_TIMESTAMP})[tp]
    assert earliest is not None and earliest.offset == 0
    assert latest is not None and latest.offset == PER_PARTITION
    assert newest is not None and newest.offset == PER_PARTITION - 1
    by_time = admin.list_offsets({tp: newest.timestamp - 5})[tp]
    assert by_time is not None and by_time.offset == PER_PARTITION - 6


def test_a_library_group_consumes_commits_and_is_administered_on_kafka(
        kafka: KafkaCluster, admin: BlockingAdmin, produced: dict[int, list[bytes]]) -> None:
    settings = {"bootstrap.servers": kafka.bootstrap_servers, "group.id": LIB_GROUP,
                "auto.offset.reset": "earliest", "enable.auto.commit": "false"}
    total = sum(len(keys) for keys in produced.values())
    with BlockingConsumer(settings) as consumer:
        consumer.subscribe([LIB_TOPIC])
        records = _read(consumer, total)
        assert sorted(r.key or b"" for r in records) == sorted(k for keys in produced.values()
                                                       for k in keys)
        assert consumer.assignment() == {TopicPartition(LIB_TOPIC, p) for p in produced}
        consumer.commit()
    tps = {TopicPartition(LIB_TOPIC, p) for p in produced}
    offsets = admin.list_group_offsets(LIB_GROUP)
    assert {tp: o.offset for tp, o in offsets.items()} == dict.fromkeys(tps, PER_PARTITION)
    assert LIB_GROUP in {g.group_id for g in admin.list_groups()}
    description = admin.describe_groups([LIB_GROUP])[LIB_GROUP]
    assert (description.state, description.members) == ("Empty", ())
    assert admin.delete_groups([LIB_GROUP]) == {LIB_GROUP: None}
    assert LIB_GROUP not in {g.group_id for g in admin.list_groups()}


def test_the_library_changes_a_kafka_topic(
        kafka: KafkaCluster, admin: BlockingAdmin, produced: dict[int, list[bytes]]) -> None:
    resource = ConfigResource(ResourceType.TOPIC, LIB_TOPIC)
    before = admin.describe_configs([resource])[resource]["retention.ms"]
    assert (before.value, before.source) == ("604800000", ConfigSource.DEFAULT_CONFIG)
    assert admin.incremental_alter_configs(
        {resource: [AlterConfigOp("retention.ms", "3600000")]}) == {resource: None}

    def altered() -> bool:
        entry = admin.describe_configs([resource])[resource]["retention.ms"]
        return (entry.value, entry.source) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)

    wait_until(altered, "retention.ms=3600000 as a topic config", _WAIT_S)
    first = TopicPartition(LIB_TOPIC, 0)
    assert admin.delete_records({first: 5}) == {first: 5}
    # every replica holds the partition, and its size follows what is left in it
    dirs = admin.describe_log_dirs(kafka.broker_ids)
    holding = [d.replicas[(LIB_TOPIC, 0)] for node in dirs.values() for d in node.values()
               if (LIB_TOPIC, 0) in d.replicas]
    assert len(holding) == 3 and all(r.size > 0 for r in holding)
    elected = admin.elect_leaders(ElectionType.PREFERRED, [first], raise_on_error=False)
    assert [e.name if e else None for e in elected.values()] == ["ELECTION_NOT_NEEDED"]
    replicas = admin.describe_topics([LIB_TOPIC])[LIB_TOPIC].partitions[1].replicas
    second = TopicPartition(LIB_TOPIC, 1)
    assert admin.alter_partition_reassignments({second: list(reversed(replicas))}) == \
        {second: None}

    def reordered() -> bool:
        now = admin.describe_topics([LIB_TOPIC])[LIB_TOPIC].partitions[1].replicas
        return now == tuple(reversed(replicas)) and not admin.list_partition_reassignments()

    wait_until(reordered, "the reassignment to the reversed replicas", _WAIT_S)
    assert admin.create_partitions({LIB_TOPIC: NewPartitions(total_count=PARTITIONS + 1)}) \
        == {LIB_TOPIC: None}
    wait_until(lambda: len(admin.describe_topics([LIB_TOPIC])[LIB_TOPIC].partitions)
               == PARTITIONS + 1, "the new partition", _WAIT_S)


def test_the_library_reaches_kafka_s_controllers(kafka: KafkaCluster) -> None:
    with BlockingAdmin({"bootstrap.controllers": kafka.bootstrap_controllers}) as controllers:
        cluster = controllers.describe_cluster()
        assert sorted(b.node_id for b in cluster.brokers) == kafka.controller_ids
        quorum = controllers.describe_metadata_quorum()
        assert sorted(v.replica_id for v in quorum.voters) == kafka.controller_ids
        # Kafka's controllers serve no topic listing (Kafka's Admin refuses it too, with
        # UnsupportedEndpointTypeException); pykraft's Admin asks for its own image
        with pytest.raises(KafkaError, match="UNSUPPORTED_VERSION"):
            controllers.list_topics()


# -- the tools --------------------------------------------------------------------------


@attrs.frozen
class Pair:
    """One command run by pykraft's tool and by Kafka's, against the same Kafka cluster."""

    name: str
    kraft: ToolRun
    kafka: ToolRun


KRAFT_TOPICS_ELR: Final = next(k for k in KNOWN if k.name == "kraft topics without ELR fields")


def _kraft(args: Sequence[str], stdin: str = "") -> ToolRun:
    """``kraft ARGS`` in this process (click's runner: stdout and stderr apart, the exit
    status), which saves a Python start per command as MainRunner saves JVM starts."""
    result = CliRunner().invoke(kraft, list(args), input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return ToolRun(command=("kraft", *args), exit_code=result.exit_code,
                   stdout=result.stdout, stderr=result.stderr)


def _kraft_process(args: Sequence[str]) -> ToolRun:
    """``kraft ARGS`` as its own process, as a user runs it."""
    result = subprocess.run([*KRAFT, *args], stdin=subprocess.DEVNULL, capture_output=True,
                            timeout=_TOOL_S, check=False)
    return ToolRun(command=("kraft", *args), exit_code=result.returncode,
                   stdout=result.stdout.decode(errors="replace"),
                   stderr=result.stderr.decode(errors="replace"))


def _commands(kafka: KafkaCluster) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """name -> (kraft's arguments, Kafka's main class and arguments): the same command."""
    server, controller = kafka.bootstrap_servers, kafka.bootstrap_controllers
    out: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
        "topics --list": (
            ("topics", "--bootstrap-server", server, "--list"),
            (TOPIC_COMMAND, "--bootstrap-server", server, "--list")),
        "topics --describe": (
            ("topics", "--bootstrap-server", server, "--describe", "--topic", TOOL_TOPIC),
            (TOPIC_COMMAND, "--bootstrap-server", server, "--describe", "--topic",
             TOOL_TOPIC)),
        "topics --describe of an unknown topic": (
            ("topics", "--bootstrap-server", server, "--describe", "--topic", "pyk-missing"),
            (TOPIC_COMMAND, "--bootstrap-server", server, "--describe", "--topic",
             "pyk-missing")),
    }
    for flag, address in (("--bootstrap-server", server), ("--bootstrap-controller", controller)):
        for what in ("--status", "--replication"):
            out[f"metadata-quorum {flag} describe {what}"] = (
                ("metadata-quorum", flag, address, "describe", what),
                (QUORUM_COMMAND, flag, address, "describe", what))
    out["consumer-groups --list"] = (
        ("consumer-groups", "--bootstrap-server", server, "--list"),
        (GROUP_COMMAND, "--bootstrap-server", server, "--list"))
    out["consumer-groups --describe"] = (
        ("consumer-groups", "--bootstrap-server", server, "--describe", "--group", TOOL_GROUP),
        (GROUP_COMMAND, "--bootstrap-server", server, "--describe", "--group", TOOL_GROUP))
    # last: Kafka's console consumer joins a group of its own (console-consumer-NNNNN),
    # which the group listings above would show on Kafka's side only
    out["console-consumer --from-beginning"] = (
        ("console-consumer", "--bootstrap-server", server, "--topic", TOOL_TOPIC,
         "--from-beginning", "--max-messages", str(len(LINES)), "--timeout-ms", "20000"),
        (CONSOLE_CONSUMER, "--bootstrap-server", server, "--topic", TOOL_TOPIC,
         "--from-beginning", "--max-messages", str(len(LINES)), "--timeout-ms", "20000"))
    return out


@pytest.fixture(scope="module")
def written(kafka: KafkaCluster) -> dict[str, ToolRun]:
    """TOOL_TOPIC created, filled and read in a group by pykraft's tools alone."""
    server = kafka.bootstrap_servers
    runs = {
        "create": _kraft_process(["topics", "--bootstrap-server", server, "--create", "--topic",
                          TOOL_TOPIC, "--partitions", str(PARTITIONS),
                          "--replication-factor", "3"]),
    }
    wait_for_placements([kafka.address(b) for b in kafka.broker_ids], {TOOL_TOPIC: PARTITIONS})
    # keyed (k0..k8 hash to every one of the 3 partitions), so that every partition holds
    # records and the group commits an offset for each, whatever the producer's batching
    runs["produce"] = _kraft(["console-producer", "--bootstrap-server", server, "--topic",
                              TOOL_TOPIC, "--property", "parse.key=true"],
                             stdin="".join(f"k{i}\t{line}\n" for i, line in enumerate(LINES)))
    runs["consume in a group"] = _kraft([
        "console-consumer", "--bootstrap-server", server, "--topic", TOOL_TOPIC,
        "--from-beginning", "--group", TOOL_GROUP, "--max-messages", str(len(LINES)),
        "--timeout-ms", "20000"])
    return runs


@pytest.fixture(scope="module")
def pairs(kafka: KafkaCluster, written: dict[str, ToolRun]) -> dict[str, Pair]:
    commands = _commands(kafka)
    kraft_runs = {name: _kraft(kraft) for name, (kraft, _java) in commands.items()}
    kafka_runs = kafka.run_mains([java for _kraft_args, java in commands.values()])
    return {name: Pair(name, kraft_runs[name], run)
            for name, run in zip(commands, kafka_runs, strict=True)}


def test_kraft_tools_create_fill_and_read_a_kafka_topic(written: dict[str, ToolRun]) -> None:
    create, produce, consume = written["create"], written["produce"], written["consume in a group"]
    assert (create.exit_code, create.stdout) == (0, f"Created topic {TOOL_TOPIC}.\n"), create
    assert produce.exit_code == 0, produce
    assert consume.exit_code == 0, consume
    assert sorted(consume.stdout.splitlines()) == sorted(LINES), consume
    assert f"Processed a total of {len(LINES)} messages" in consume.stderr


def _known_for(name: str) -> tuple[Known, ...]:
    return (KRAFT_TOPICS_ELR,) if name == "topics --describe" else ()


def _normalised(pair: Pair, extra: Sequence[Known]) -> tuple[str, str]:
    rules = [k.rewrite for k in extra]
    if pair.name in ("console-consumer --from-beginning", "consumer-groups --list"):
        rules.append(UNORDERED_LINES.rewrite)  # records of 3 partitions; a hash map's order
    # both outputs describe the same Kafka cluster: both are Kafka's side
    return (normalise(pair.kafka.stdout, Side.KAFKA, rules),
            normalise(pair.kraft.stdout, Side.KAFKA, rules))


@pytest.mark.parametrize("name", [
    "topics --list", "topics --describe", "topics --describe of an unknown topic",
    "metadata-quorum --bootstrap-server describe --status",
    "metadata-quorum --bootstrap-server describe --replication",
    "metadata-quorum --bootstrap-controller describe --status",
    "metadata-quorum --bootstrap-controller describe --replication",
    "console-consumer --from-beginning", "consumer-groups --list",
    "consumer-groups --describe",
])
def test_a_kraft_tool_prints_what_kafka_s_tool_prints_for_kafka(
        pairs: dict[str, Pair], name: str) -> None:
    pair = pairs[name]
    assert pair.kraft.exit_code == pair.kafka.exit_code, pair
    kafka_text, kraft_text = _normalised(pair, ())
    if kafka_text == kraft_text:
        return
    known = _known_for(name)
    kafka_known, kraft_known = _normalised(pair, known)
    diff = "\n".join(difflib.unified_diff(kafka_known.splitlines(), kraft_known.splitlines(),
                                          "kafka's tool", "kraft", lineterm=""))
    assert not diff, f"{name}:\n{diff}\nkraft stderr:\n{pair.kraft.stderr}"
    pytest.xfail("known: " + "; ".join(f"{k.name} ({k.lacking})" for k in known))


def test_the_known_tool_differences_still_occur(pairs: dict[str, Pair]) -> None:
    """A known difference that no longer occurs was fixed: drop it here."""
    kafka_text, kraft_text = _normalised(pairs["topics --describe"], ())
    assert kafka_text != kraft_text


def test_kraft_consumer_groups_describe_shows_the_committed_offsets(
        pairs: dict[str, Pair]) -> None:
    lines = pairs["consumer-groups --describe"].kraft.stdout.splitlines()
    rows = [line.split() for line in lines if line.startswith(TOOL_GROUP)]
    assert sorted(int(row[2]) for row in rows) == list(range(PARTITIONS))
    # every record was read and committed: each partition's offset is at its end
    assert sum(int(row[3]) for row in rows) == len(LINES)
    assert all(row[3] == row[4] and row[5] == "0" for row in rows)
