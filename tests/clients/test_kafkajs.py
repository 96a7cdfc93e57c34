"""kafkajs (unmodified, the Node.js client) against a real cluster.

kafkajs runs in Node: each producer or consumer is a ``node kafkajs/bridge.js`` process
that takes one JSON command a line and answers one a line (the pinned kafkajs is installed
on first use outside the repo, ``kafkajs_install``). kafkajs has no ``assign()``: every
consumer here is a group member, subscribed from the beginning with auto commit off.
Each bridge's log (kafkajs's own, at INFO; ``KAFKAJS_LOG_LEVEL=debug`` adds every request and
answer) is ``kafkajs-N-ROLE.log`` in the test's tmp dir.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any, Final

import pytest

from deploy import LocalCluster

from . import group_scenarios as scenarios
from .admin_checks import eventually
from .kafkajs_install import BRIDGE_DIR, kafkajs_modules
from .records import PARTITIONS, check_read_back, records

_CALL_S: Final = 30.0  # a command's answer comes within this (kafkajs's request timeout)
_START_S: Final = 60.0  # a consumer's connect, subscribe and run
_CLOSE_S: Final = 20.0


class BridgeError(RuntimeError):
    """kafkajs refused a command (its error's name and message)."""


class _Bridge:
    """One ``node bridge.js`` process: a kafkajs producer or consumer."""

    def __init__(self, node_modules: Path, log: Path, make: dict[str, Any]) -> None:
        self._log_path = log
        self._log = log.open("wb")
        self._process = subprocess.Popen(
            ["node", str(BRIDGE_DIR / "bridge.js")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            env={**os.environ, "NODE_PATH": str(node_modules)},
        )
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0
        self.closed = False
        try:
            self.call(make, timeout_s=_START_S)
        except BaseException:
            self.kill()
            raise

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._answers.put(json.loads(line))
        self._answers.put(None)  # end of output: the process is gone

    def call(self, command: dict[str, Any], timeout_s: float = _CALL_S) -> Any:
        """The result of ``command``; an answer to an earlier command that timed out is
        dropped."""
        assert self._process.stdin is not None and not self.closed
        self._next_id += 1
        wanted = self._next_id
        self._process.stdin.write(json.dumps({"id": wanted, **command}).encode() + b"\n")
        self._process.stdin.flush()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                answer = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(
                    f"kafkajs gave no answer to {command['op']} within {timeout_s}s; "
                    f"its log ends: {self._tail()}"
                ) from None
            if answer is None:
                self._answers.put(None)
                raise BridgeError(f"the kafkajs bridge exited; its log ends: {self._tail()}")
            if answer["id"] == wanted:
                break
        if not answer["ok"]:
            raise BridgeError(answer["error"])
        return answer["result"]

    def _tail(self) -> str:
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-15:])

    def close(self) -> None:
        """The ``close`` command, then end of input; killed if it does not exit."""
        if self.closed:
            return
        try:
            self.call({"op": "close"}, timeout_s=_CLOSE_S)
        finally:
            self.kill()

    def kill(self) -> None:
        """Ends the process (by its PID, if it has not exited at end of input)."""
        self.closed = True
        if self._process.stdin is not None:
            with suppress(BrokenPipeError):
                self._process.stdin.close()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)
        self._reader.join(5)
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._log.close()


def _encoded(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _decoded(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class _Producer:
    """kafkajs's producer; for the scenarios idempotent (its default is off) at acks=all."""

    def __init__(self, bridge: _Bridge) -> None:
        self._bridge = bridge
        self._acknowledged: dict[bytes, tuple[int, int]] = {}
        self._seen = 0  # acknowledgements already fetched from the bridge

    def send(self, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        self._bridge.call({
            "op": "send", "topic": topic,
            "pairs": [[_encoded(key), _encoded(value)] for key, value in pairs],
        })

    def flush(self, timeout_s: float) -> None:
        self._bridge.call({"op": "flush", "timeout_ms": int(timeout_s * 1000)}, timeout_s + 10)

    def acknowledged(self) -> dict[bytes, tuple[int, int]]:
        new = self._bridge.call({"op": "acknowledged", "since": self._seen})
        self._seen += len(new)
        for value, partition, offset in new:
            self._acknowledged[base64.b64decode(value)] = (partition, offset)
        return dict(self._acknowledged)

    def failures(self) -> list[str]:
        found: list[str] = self._bridge.call({"op": "failures"})
        return found

    def close(self) -> None:
        self._bridge.close()


class _Consumer:
    def __init__(self, bridge: _Bridge) -> None:
        self._bridge = bridge

    def poll(self, timeout_s: float) -> list[scenarios.Read]:
        read = self._bridge.call({"op": "poll", "timeout_ms": int(timeout_s * 1000)},
                                 timeout_s + _CALL_S)
        return [(p, o, _decoded(k), _decoded(v)) for p, o, k, v in read]

    def assignment(self) -> frozenset[int]:
        return frozenset(self._bridge.call({"op": "assignment"}))

    def positions(self) -> dict[int, int]:
        found = self._bridge.call({"op": "positions"})
        return {int(p): o for p, o in found.items()}

    def commit(self) -> None:
        self._bridge.call({"op": "commit"})

    def committed(self) -> dict[int, int]:
        found = self._bridge.call({"op": "committed"})
        return {int(p): o for p, o in found.items()}

    def close(self) -> None:
        self._bridge.close()


class _KafkaJs:
    name = "kj"

    def __init__(self, bootstrap: str, node_modules: Path, logs: Path) -> None:
        self._bootstrap = bootstrap
        self._node_modules = node_modules
        self._logs = logs
        self._bridges: list[_Bridge] = []

    def _bridge(self, role: str, make: dict[str, Any]) -> _Bridge:
        log = self._logs / f"kafkajs-{len(self._bridges) + 1}-{role}.log"
        bridge = _Bridge(self._node_modules, log, {"op": role, "bootstrap": self._bootstrap, **make})
        self._bridges.append(bridge)
        return bridge

    def producer(
        self, *, idempotent: bool = True, acks: int = -1, one_partition_per_send: bool = True
    ) -> _Producer:
        """The scenarios' producer by default; ``one_partition_per_send``: see bridge.js
        (kafkajs drops a partition's records when its leader moves within a send())."""
        return _Producer(self._bridge("producer", {
            "idempotent": idempotent, "acks": acks,
            "one_partition_per_send": one_partition_per_send,
        }))

    def consumer(self, group: str, topic: str) -> _Consumer:
        return _Consumer(self._bridge("consumer", {
            "group": group, "topic": topic,
            "session_timeout_ms": scenarios.SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": scenarios.HEARTBEAT_INTERVAL_MS,
        }))

    def close(self) -> None:
        for bridge in self._bridges:
            bridge.kill()


@pytest.fixture(scope="module")
def node_modules() -> Path:
    return kafkajs_modules()


@pytest.fixture
def kafkajs_client(bootstrap: str, node_modules: Path, tmp_path: Path) -> Iterator[_KafkaJs]:
    client = _KafkaJs(bootstrap, node_modules, tmp_path)
    yield client
    client.close()


def _ends(acknowledged: dict[bytes, tuple[int, int]]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for partition, offset in acknowledged.values():
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    return ends


def _produced(client: _KafkaJs, topic: str, sent: Sequence[tuple[bytes, bytes]],
              **settings: Any) -> dict[bytes, tuple[int, int]]:
    producer = client.producer(**settings)
    try:
        producer.send(topic, sent)
        producer.flush(60)
        assert producer.failures() == [], producer.failures()[:5]
        acknowledged = producer.acknowledged()
    finally:
        producer.close()
    assert len(acknowledged) == len(sent), "a record without its answer"
    return acknowledged


@pytest.mark.parametrize("acks", ["all", 1])
def test_records_produced_are_consumed(
    cluster: LocalCluster, bootstrap: str, kafkajs_client: _KafkaJs, acks: str | int
) -> None:
    topic = f"kj-data-{acks}"
    scenarios.create_topic(cluster, bootstrap, topic, PARTITIONS)
    sent = records(topic)
    # kafkajs as an application uses it: each send() spans every partition
    acknowledged = _produced(kafkajs_client, topic, sent, idempotent=False,
                             acks=-1 if acks == "all" else acks, one_partition_per_send=False)
    # kafkajs has no assign(): one group member reads the topic from the beginning
    ends = _ends(acknowledged)
    reader = kafkajs_client.consumer(topic, topic)
    read: list[scenarios.Read] = []
    try:
        def read_all() -> bool:
            read.extend(reader.poll(0.5))
            return len(read) >= len(sent) and reader.positions() == ends

        eventually(read_all, f"{len(sent)} records of {topic} read back", 60)
    finally:
        reader.close()
    check_read_back(sent, read, acknowledged)


def test_two_members_share_the_partitions_and_commit(
    cluster: LocalCluster, bootstrap: str, kafkajs_client: _KafkaJs
) -> None:
    """The short group check CI runs for kafkajs (the three scenarios need --all-clients):
    idempotent records, two members split the partitions, read them all and commit."""
    topic = group = "kj-pair"
    scenarios.create_topic(cluster, bootstrap, topic, PARTITIONS)
    sent = records(topic, 3000)
    acknowledged = _produced(kafkajs_client, topic, sent)
    ends = _ends(acknowledged)
    reads = scenarios.Reads()
    with ExitStack() as stack:
        pair = []
        for _ in range(2):
            member = kafkajs_client.consumer(group, topic)
            stack.callback(member.close)
            pair.append(member)

        def shared_and_read() -> bool:
            for member in pair:
                reads.add(member.poll(0.2))
            parts = [member.assignment() for member in pair]
            return (
                all(parts) and not parts[0] & parts[1]
                and parts[0] | parts[1] == set(range(PARTITIONS))
                and all(member.positions() == {p: ends[p] for p in member.assignment()}
                        for member in pair)
            )

        eventually(shared_and_read, "two members share the partitions and read them all", 60)
        for member in pair:
            member.commit()
        assert pair[0].committed() == ends
        assert pair[1].committed() == ends
    check_read_back(sent, reads.listed(), acknowledged)


@pytest.mark.all_clients
def test_a_group_shares_commits_resumes_and_rebalances(
    cluster: LocalCluster, bootstrap: str, kafkajs_client: _KafkaJs
) -> None:
    scenarios.group_shares_commits_resumes_and_rebalances(kafkajs_client, cluster, bootstrap)


@pytest.mark.all_clients
def test_a_group_carries_on_after_its_coordinators_kill(
    cluster: LocalCluster, bootstrap: str, kafkajs_client: _KafkaJs
) -> None:
    scenarios.group_carries_on_after_coordinator_kill(kafkajs_client, cluster, bootstrap)


@pytest.mark.all_clients
def test_an_idempotent_producer_writes_once_across_a_leader_kill(
    cluster: LocalCluster, bootstrap: str, kafkajs_client: _KafkaJs
) -> None:
    scenarios.idempotent_producer_survives_leader_kill(kafkajs_client, cluster, bootstrap)
