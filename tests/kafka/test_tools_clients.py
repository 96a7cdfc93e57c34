"""Kafka's verifiable clients (``VerifiableProducer`` / ``VerifiableConsumer``, what Kafka's
system tests drive) against pykraft, with a partition leader killed with -9 mid-stream.

The producer (acks=all, idempotent: the client's defaults) writes a one-partition topic of
replication factor 3 while its leader is killed; once it is done the killed broker is
restarted and waits until it is back in every ISR it belongs to (the ``pykraft`` cluster is
shared by the layer); then a consumer in a group reads the topic. Our own check: every
record the producer saw acknowledged (its ``producer_send_success`` events) is consumed
(the consumer's ``record_data`` events, ``--verbose``) at the acknowledged offset with its
value. Both are long-running processes, read line by line with a deadline.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from broker.client.admin_types import NewTopic
from broker.client.blocking_admin import BlockingAdmin
from deploy import LocalCluster
from deploy.kafka import KafkaDistribution
from deploy.kafka.jvm import tool_command
from deploy.probes import request_at
from deploy.waiting import wait_until
from quorum.client import ClientError
from quorum.wire.messages import MetadataRequest

from .support import placements, wait_for_placements

TOPIC: Final = "tools-verifiable"
RECORDS: Final = 2000
THROUGHPUT: Final = 1000         # records/s: the run lasts about 2 s
KILL_AFTER: Final = 500          # acknowledged records before the leader is killed
DEADLINE_S: Final = 90.0


class Events:
    """A tool's stdout, one JSON event per line, read by a thread into a queue."""

    def __init__(self, command: list[str], log_dir: Path) -> None:
        self._stderr = (log_dir / "stderr.log").open("wb")
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=self._stderr,
                                        cwd=log_dir)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(raw.decode(errors="replace"))
        self.lines.put(None)

    def until(self, deadline: float) -> Iterator[dict[str, Any]]:
        """Events until the tool's stdout ends or the deadline (then AssertionError)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("the tool ran past its deadline")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                return
            if line.startswith("{"):
                yield json.loads(line)

    def stop(self) -> None:
        """Ends the tool (SIGTERM, then SIGKILL), by its own process handle."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()


def _tool(distribution: KafkaDistribution, log_config: Path, log_dir: Path, main: str,
          args: list[str]) -> Events:
    log_dir.mkdir(parents=True, exist_ok=True)
    return Events(tool_command(distribution, f"org.apache.kafka.tools.{main}", args,
                               log_config=log_config, log_dir=log_dir), log_dir)


def _in_every_isr(address: tuple[str, int], node: int) -> bool:
    """Whether ``node`` is in the ISR of every partition it holds, in the metadata of the
    broker at ``address``."""
    try:
        response = request_at(address, MetadataRequest(topics=None))
    except (ClientError, OSError):
        return False
    return all(node in p.isr_nodes for t in response.topics for p in t.partitions
               if node in p.replica_nodes) and bool(response.topics)


@pytest.fixture(scope="module")
def run(pykraft: LocalCluster, pykraft_bootstrap: str, kafka_distribution: KafkaDistribution,
        tools_log_config: Path, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(the producer's events, the consumer's record_data events, the killed broker)."""
    base = tmp_path_factory.mktemp("verifiable")
    with BlockingAdmin({"bootstrap.servers": pykraft_bootstrap}) as admin:
        assert admin.create_topics([NewTopic(name=TOPIC, num_partitions=1, replication_factor=3)])[TOPIC] is None
    brokers = [pykraft.address(b) for b in pykraft.broker_ids]
    wait_for_placements(brokers, {TOPIC: 1})
    found = placements(brokers[0], TOPIC)
    assert found is not None
    leader = found[0].leader

    producer = _tool(kafka_distribution, tools_log_config, base / "producer",
                     "VerifiableProducer",
                     ["--topic", TOPIC, "--bootstrap-server", pykraft_bootstrap,
                      "--max-messages", str(RECORDS), "--throughput", str(THROUGHPUT),
                      "--acks", "-1"])
    produced: list[dict[str, Any]] = []
    killed = False
    try:
        acked = 0
        for event in producer.until(time.monotonic() + DEADLINE_S):
            produced.append(event)
            acked += event.get("name") == "producer_send_success"
            if acked == KILL_AFTER and not killed:
                pykraft.kill(leader)
                killed = True
        assert producer.process.wait(timeout=30) == 0
        assert killed, f"the producer ended before {KILL_AFTER} acknowledgements"
    finally:
        producer.stop()
        if not pykraft.is_running(leader):
            pykraft.restart(leader)
    wait_until(lambda: all(_in_every_isr(a, leader) for a in brokers),
               f"broker {leader} back in every ISR", 60)

    acked_offsets = {e["offset"] for e in produced if e.get("name") == "producer_send_success"}
    consumer = _tool(kafka_distribution, tools_log_config, base / "consumer",
                     "VerifiableConsumer",
                     ["--topic", TOPIC, "--group-id", "tools-verifiable-group",
                      "--bootstrap-server", pykraft_bootstrap, "--verbose",
                      "--reset-policy", "earliest"])
    consumed: list[dict[str, Any]] = []
    try:
        seen: set[int] = set()
        for event in consumer.until(time.monotonic() + DEADLINE_S):
            if event.get("name") == "record_data":
                consumed.append(event)
                seen.add(event["offset"])
                if acked_offsets <= seen:
                    break
    finally:
        consumer.stop()
    return produced, consumed, leader


def test_every_acknowledged_record_is_consumed_after_a_leader_kill(
        run: tuple[list[dict[str, Any]], list[dict[str, Any]], int]) -> None:
    produced, consumed, _leader = run
    names = [e.get("name") for e in produced]
    assert names[0] == "startup_complete" and "shutdown_complete" in names, names[-5:]
    acked = {(e["partition"], e["offset"]): e["value"] for e in produced
             if e.get("name") == "producer_send_success"}
    # the kill came after KILL_AFTER acknowledgements and the producer went on after it
    assert len(acked) > KILL_AFTER, len(acked)
    read = {(e["partition"], e["offset"]): e["value"] for e in consumed}
    missing = {k: v for k, v in acked.items() if read.get(k) != v}
    assert missing == {}, f"{len(missing)} acknowledged records not consumed as written, " \
                          f"e.g. {sorted(missing.items())[:5]}"
    # an idempotent producer's retries write no duplicates: every value once
    values = [e["value"] for e in consumed]
    assert len(values) == len(set(values)), "a value was consumed twice"
