"""The data-plane bench's failure and memory probes, for pykraft's cluster and Kafka's alike.

- ``start_to_first_produce``: a fresh cluster launched (its storage formatted before,
  as a user formats once) while a probe in a thread of this process creates a topic of
  one partition, RF 3, ``min.insync.replicas=2``, and produces one record at acks=all,
  again and again until one is acknowledged: launch -> that acknowledgement.
- ``leader_failover``: a librdkafka producer at acks=all sends one record every few
  milliseconds to that partition; its leader broker is killed with -9; the time from
  the kill to the first acknowledgement of a record sent after it. The broker is then
  restarted and the partition's ISR waited for, ready for the next kill.
- ``node_memory``: a server's RSS (/proc) and, for a JVM, the heap in use after a full
  GC (``jcmd``).

Both clusters are driven through the same few calls (``ProbedCluster``): the launcher of
each has them. The probe clients' settings are the same for both clusters.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.dataplane_figures import NodeMemory
from bench.dataplane_run import wait_for_leaders
from bench.peer_figures import first_ack_after, heap_used_bytes
from bench.scale_probes import rss_bytes
from deploy.kafka import java_program

__all__ = ["PROBE_TOPIC", "ProbeFailed", "ProbedCluster", "leader_failover", "node_memory",
           "partition_leader", "start_to_first_produce"]

PROBE_TOPIC: Final = "probe"
_RECORD: Final = 1024
# the probe sends one record this often while it waits for the next acknowledgement
_EVERY_S: Final = 0.005
# acknowledgements seen before the kill: the producer is connected and steady
_WARM_S: Final = 1.0
_START_TIMEOUT_S: Final = 240.0
_FAILOVER_TIMEOUT_S: Final = 120.0
_REJOIN_TIMEOUT_S: Final = 180.0
# the start probe retries quickly: librdkafka's reconnect backoff grows to 10 s by default,
# which would measure the client's backoff rather than the cluster's start
_QUICK: Final[dict[str, str | int | float | bool]] = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
                 "retry.backoff.ms": 50, "retry.backoff.max.ms": 200}


class ProbeFailed(RuntimeError):
    """A probe measured nothing (no acknowledgement in time); the cluster may be fine."""


class ProbedCluster(Protocol):
    """What the probes use of ``deploy.LocalCluster`` and ``KafkaCluster``."""

    def prepare(self) -> None: ...
    def start(self) -> object: ...
    def kill(self, node_id: int) -> None: ...
    def restart(self, node_id: int) -> None: ...


def _create_probe_topic(admin: AdminClient, timeout_s: float) -> bool:
    topic = NewTopic(PROBE_TOPIC, 1, 3, config={"min.insync.replicas": "2"})
    (future,) = admin.create_topics([topic], request_timeout=timeout_s).values()
    try:
        future.result(timeout_s)
    except KafkaException as exc:
        return bool(exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS)
    return True


def _first_produce(bootstrap: str, began: float, deadline: float) -> float:
    """Seconds from ``began`` to the first acknowledged record (raises at ``deadline``)."""
    # refused connections are the expected state while the cluster starts: not logged
    settings: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap,
                                                     "log_level": 2, **_QUICK}
    admin = AdminClient(settings)
    producer = Producer({**settings, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 5_000})
    acked: list[float] = []

    def report(error: KafkaError | None, _message: Message) -> None:
        if error is None:
            acked.append(time.monotonic())

    created = False
    value = os.urandom(_RECORD)
    try:
        while time.monotonic() < deadline:
            try:
                created = created or _create_probe_topic(admin, 5.0)
            except (KafkaException, TimeoutError):  # no controller or broker answering yet
                created = False
            if not created:
                time.sleep(_EVERY_S * 4)
                continue
            producer.produce(PROBE_TOPIC, value, partition=0, on_delivery=report)
            producer.flush(6.0)
            if acked:
                return acked[0] - began
    finally:
        # nothing left queued, so that the client stops reconnecting once this returns
        producer.purge()
        producer.flush(1.0)
    raise ProbeFailed(f"no record acknowledged {_START_TIMEOUT_S} s after the launch")


def start_to_first_produce(cluster: ProbedCluster, bootstrap: str) -> float:
    """Start the prepared ``cluster``; seconds from the launch of its processes to the
    first acknowledged produce, measured while it starts (the launcher's own waits are
    not in the figure)."""
    found: list[float] = []
    failed: list[BaseException] = []
    began = time.monotonic()

    def probe() -> None:
        try:
            found.append(_first_produce(bootstrap, began, began + _START_TIMEOUT_S))
        except BaseException as exc:  # handed to the caller's thread, without its frames
            failed.append(exc.with_traceback(None))

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    cluster.start()
    thread.join(_START_TIMEOUT_S + 30.0)
    if failed:
        raise ProbeFailed(f"the start probe failed: {failed[0]!r}") from failed[0]
    if not found:
        raise ProbeFailed("the start probe did not finish")
    return found[0]


def partition_leader(bootstrap: str, topic: str = PROBE_TOPIC, partition: int = 0) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    leader: int = admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader
    if leader < 0:
        raise RuntimeError(f"{topic}-{partition} has no leader")
    return leader


def leader_failover(cluster: ProbedCluster, bootstrap: str, *, restart: bool = True) -> float:
    """Kill -9 the probe partition's leader while records flow; seconds from the kill to
    the first acknowledgement of a record sent after it. The broker is restarted and the
    partition's ISR full again on return when ``restart``."""
    # the start probe made the topic, unless it failed
    _create_probe_topic(AdminClient({"bootstrap.servers": bootstrap}), 60.0)
    wait_for_leaders(bootstrap, 1, PROBE_TOPIC, _REJOIN_TIMEOUT_S)
    leader = partition_leader(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 120_000})
    deliveries: list[tuple[float, float | None]] = []
    value = os.urandom(_RECORD)

    def sender(sent: float) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, _message: Message) -> None:
            deliveries.append((sent, time.monotonic() if error is None else None))
        return report

    began = time.monotonic()
    kill_at: float | None = None
    gap: float | None = None
    while time.monotonic() < began + _WARM_S + _FAILOVER_TIMEOUT_S:
        now = time.monotonic()
        producer.produce(PROBE_TOPIC, value, partition=0, on_delivery=sender(now))
        producer.poll(_EVERY_S)
        if kill_at is None and now - began >= _WARM_S and any(a for _, a in deliveries):
            cluster.kill(leader)
            kill_at = time.monotonic()
        elif kill_at is not None:
            gap = first_ack_after(kill_at, deliveries)
            if gap is not None:
                break
    producer.purge()
    producer.flush(1.0)
    if restart and kill_at is not None:
        cluster.restart(leader)
        wait_for_leaders(bootstrap, 1, PROBE_TOPIC, _REJOIN_TIMEOUT_S)
    if gap is None:
        raise ProbeFailed(f"no acknowledgement {_FAILOVER_TIMEOUT_S} s after killing "
                           f"broker {leader}" if kill_at else "no acknowledgement before the kill")
    return gap


def _jcmd() -> str:
    """jcmd of the JDK whose ``java`` runs the servers (the same JVM version attaches)."""
    return str(Path(java_program()).resolve().parent / "jcmd")


def node_memory(pid: int, *, jvm: bool) -> NodeMemory:
    """A server's RSS; for a JVM also its heap in use after a full GC.

    ``jcmd PID GC.run`` is System.gc(), which Kafka's start script turns into a concurrent
    cycle (-XX:+ExplicitGCInvokesConcurrent) that leaves old regions for later mixed
    collections; ``GC.class_histogram`` collects the whole heap first (a stop-the-world full
    GC), so it is the full GC here, then ``GC.heap_info`` says what is in use."""
    heap = None
    if jvm:
        for command in ("GC.run", "GC.class_histogram"):
            subprocess.run([_jcmd(), str(pid), command], capture_output=True, check=True,
                           timeout=120)
        info = subprocess.run([_jcmd(), str(pid), "GC.heap_info"], capture_output=True,
                              text=True, check=True, timeout=60)
        heap = heap_used_bytes(info.stdout)
    return NodeMemory(rss_bytes=rss_bytes(pid)[0], heap_used_bytes=heap)
