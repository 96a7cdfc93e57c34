"""Kafka's file readers on pykraft's files: ``kafka-dump-log`` (``DumpLogSegments``) on a
data partition's ``.log`` and ``.index``, on the ``__cluster_metadata-0`` log and on a
metadata snapshot (``--cluster-metadata-decoder``), and ``kafka-metadata-shell`` (kafka-shell 4.3.1, pinned apart) on the
snapshot.

The files come from a small pykraft cluster of this module's own (1 controller + 1 broker,
``metadata.log.max.snapshot.interval.ms`` at 1 s, stopped gracefully before the files are
read): the layer's shared cluster writes no snapshot within the layer's time (Kafka's
default interval is an hour), and files of a stopped node hold what it wrote, index
included. What is compared with Kafka is the structure, on the shared Kafka cluster's own
metadata log: every batch line has the fields Kafka's have; and the counts, against what
was written: every batch valid, every record there, every metadata record decoded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest

from broker.client.admin_types import NewTopic
from broker.client.blocking import BlockingProducer
from broker.client.blocking_admin import BlockingAdmin
from deploy import ClusterSpec, LocalCluster
from deploy.kafka import KafkaDistribution, ToolRun, run_mains, run_tool
from deploy.kafka.resolve import resolve_shell
from deploy.kafka_cluster import KafkaCluster
from deploy.waiting import wait_until

DUMP: Final = "org.apache.kafka.tools.DumpLogSegments"
SHELL: Final = "org.apache.kafka.shell.MetadataShell"
TOPIC: Final = "tools-files"
RECORDS: Final = 500
METADATA: Final = "__cluster_metadata-0"
_SHELL_ASKS: Final = 5


def _batch_fields(dump: str) -> list[tuple[str, ...]]:
    return [tuple(re.findall(r"(\w+): ", line)) for line in dump.splitlines()
            if line.startswith("baseOffset: ")]


def _counts(dump: str) -> int:
    return sum(int(n) for n in re.findall(r"^baseOffset: .* count: (\d+) ", dump, re.MULTILINE))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A stopped pykraft cluster's files: the data segment and index, the metadata log
    and the newest snapshot."""
    spec = ClusterSpec(controllers=1, brokers=1,
                       properties={"metadata.log.max.snapshot.interval.ms": "1000"})
    with LocalCluster(tmp_path_factory.mktemp("pykraft-files"), spec) as cluster:
        bootstrap = "{}:{}".format(*cluster.address(2))
        metadata = cluster.base_dir / "controller-1" / "metadata" / METADATA
        with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
            assert admin.create_topics([NewTopic(name=TOPIC, num_partitions=1,
                                                 replication_factor=1)])[TOPIC] is None
            ticks = iter(range(1000))

            def snapshot_written() -> bool:
                # the time rule is checked when records are replayed (as Kafka's is): a
                # small topic per poll gives the controller records to replay
                admin.create_topics([NewTopic(name=f"tools-files-tick-{next(ticks)}",
                                              num_partitions=1, replication_factor=1)])
                return any(metadata.glob("*.checkpoint"))

            wait_until(snapshot_written, "the controller's first metadata snapshot", 30)
        with BlockingProducer({"bootstrap.servers": bootstrap, "acks": "all",
                               "linger.ms": "5"}) as producer:
            sends = [producer.send(TOPIC, value=b"v" * 200, key=f"k{i}".encode())
                     for i in range(RECORDS)]
            producer.flush()
            for send in sends:
                send.result(timeout=30)
        for node in (2, 1):
            cluster.stop(node)
        data = cluster.base_dir / "broker-2" / "logs" / f"{TOPIC}-0"
        yield {
            "log": data / "00000000000000000000.log",
            "index": data / "00000000000000000000.index",
            "metadata": metadata / "00000000000000000000.log",
            "snapshot": sorted(metadata.glob("*.checkpoint"))[-1],
        }


@pytest.fixture(scope="module")
def dumps(files: dict[str, Path], kafka: KafkaCluster,
          kafka_distribution: KafkaDistribution, tools_log_config: Path) -> list[ToolRun]:
    """One JVM: pykraft's four files, then Kafka's own metadata log for the structure."""
    kafka_metadata = kafka.base_dir / "controller-1" / "data" / METADATA
    commands = [
        (DUMP, "--files", str(files["log"])),
        (DUMP, "--files", str(files["index"])),
        (DUMP, "--cluster-metadata-decoder", "--files", str(files["metadata"])),
        (DUMP, "--cluster-metadata-decoder", "--files", str(files["snapshot"])),
        (DUMP, "--cluster-metadata-decoder", "--files",
         str(kafka_metadata / "00000000000000000000.log")),
    ]
    return run_mains(kafka_distribution, commands, log_config=tools_log_config)


def _clean(run: ToolRun) -> str:
    assert run.exit_code == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Exception" not in run.stdout + run.stderr, run.stdout[-2000:] + run.stderr[-2000:]
    return run.stdout


def test_a_data_segment_reads_as_valid_batches_holding_every_record(
        dumps: list[ToolRun]) -> None:
    dump = _clean(dumps[0])
    fields = _batch_fields(dump)
    assert fields and all("isvalid: false" not in line for line in dump.splitlines())
    assert dump.count("isvalid: true") == len(fields)
    assert _counts(dump) == RECORDS
    # the batch lines carry the fields Kafka's own segments' do
    assert set(fields) == set(_batch_fields(_clean(dumps[4])))


def test_the_offset_index_points_at_batches(dumps: list[ToolRun]) -> None:
    dump = _clean(dumps[1])
    entries = re.findall(r"^offset: (\d+) position: (\d+)$", dump, re.MULTILINE)
    positions = set(re.findall(r" position: (\d+) ", _clean(dumps[0])))
    # a 500-record segment of about 120 KB passes index.interval.bytes (4096) many times
    assert entries, dump[-500:]
    assert {p for _, p in entries} <= positions
    assert "Mismatches" not in dump


@pytest.mark.parametrize("which", [2, 3], ids=["metadata-log", "snapshot"])
def test_metadata_records_are_decoded(dumps: list[ToolRun], which: int) -> None:
    dump = _clean(dumps[which])
    records = re.findall(r"^\| offset: \d+ .*$", dump, re.MULTILINE)
    # a data record's JSON follows "payload:", a control record's its type's name
    decoded = [r for r in records if re.search(r" (payload|LeaderChange|SnapshotHeader|"
                                                  r"SnapshotFooter|KRaftVersion|"
                                                  r"KRaftVoters):? \{", r)]
    assert records and len(decoded) == len(records), \
        [r for r in records if r not in decoded][:3]
    assert _counts(dump) == len(records)
    assert '"type":"TOPIC_RECORD"' in dump and f'"name":"{TOPIC}"' in dump
    assert set(_batch_fields(dump)) <= set(_batch_fields(_clean(dumps[4]))) | \
        set(_batch_fields(_clean(dumps[0])))


def test_the_metadata_shell_lists_the_snapshot_topics(
        files: dict[str, Path], tools_log_config: Path,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """kafka-metadata-shell (its own pinned jars, deploy/kafka/shell/pom.xml: kafka-shell
    4.4.0 is not served) loads pykraft's snapshot into Kafka's own image: the topic is
    listed and its partition reads back as the registration pykraft wrote (one replica on
    the broker, node 2, leading in epoch 0)."""
    shell = resolve_shell()
    snapshot = str(files["snapshot"])
    log_dir = tmp_path_factory.mktemp("metadata-shell")

    def shell_says(loaded: Callable[[str], bool], *command: str) -> str:
        """The command's output once ``loaded`` holds for it: the shell's
        ``MetadataShell.waitUntilCaughtUp`` returns after the loader applied anything at all
        (``lastAppliedOffset() > 0``) while ``SnapshotFileReader`` still feeds the snapshot's
        later batches, so a command may see a partial image (Kafka's own snapshots too):
        asked again, a new JVM each time, at most ``_SHELL_ASKS`` times."""
        said = ""
        for _ in range(_SHELL_ASKS):
            said = _clean(run_tool(shell, SHELL, ["--snapshot", snapshot, *command],
                                   log_config=tools_log_config, log_dir=log_dir))
            if loaded(said):
                return said
        return said

    topics = shell_says(lambda said: TOPIC in said.split(), "ls", "/image/topics/byName")
    assert TOPIC in topics.split(), topics
    registration = shell_says(lambda said: said.startswith("PartitionRegistration("),
                              "cat", f"/image/topics/byName/{TOPIC}/0")
    assert registration.startswith("PartitionRegistration(replicas=[2], "), registration
    assert "isr=[2]" in registration and "leader=2, " in registration, registration
