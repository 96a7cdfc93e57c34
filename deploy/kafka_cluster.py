"""``KafkaCluster``: a real Apache Kafka KRaft cluster on this host, beside ``LocalCluster``.

    with KafkaCluster(tmp_path, KafkaClusterSpec(controllers=3, brokers=3)) as kafka:
        kafka.bootstrap_servers              # "127.0.0.1:P4,127.0.0.1:P5,127.0.0.1:P6"
        kafka.kill(4)                        # SIGKILL, reaped
        kafka.restart(4)                     # started again, waits until it is unfenced
        kafka.run_tool("org.apache.kafka.tools.TopicCommand", ["--list", ...])

The shape is ``deploy.LocalCluster``'s: free ports on loopback, one directory per node
(``server.properties``, ``node.log`` with the JVM's stdout and stderr, ``data/``,
``logs/`` with the GC log), start / stop (SIGTERM: Kafka's controlled shutdown) / kill
(-9) / restart of one node, waits that poll with a deadline and fail with the log tails,
and leaving the ``with`` block kills and reaps every JVM this launcher started, by PID.

The jars are the pinned release (``deploy/kafka/pom.xml``, resolved on first use into a
cache outside the repo). Storage is formatted by Kafka's own ``kafka-storage`` class
(``kafka.tools.StorageTool format -t ID -c CONFIG``, all nodes in one JVM) and each node
runs ``kafka.Kafka server.properties`` with the heap, GC and JMX settings of
``kafka-server-start.sh`` (``deploy.kafka.jvm``). A node is ready once its output since
its latest start holds ``Kafka Server started`` (``KafkaRaftServer.startup``; a broker
says it only once unfenced) and its listener answers ApiVersions.

A JVM cannot watch pykraft's lifeline pipe, so a launcher killed with -9 takes its JVMs
with it through the parent-death signal alone: each JVM is started by ``setpriv
--pdeathsig KILL`` (util-linux) when the launcher forks from its main thread (the kernel
sends the signal when the forking *thread* exits).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final, TypeVar

from deploy.kafka import (
    KafkaClusterSpec,
    KafkaDistribution,
    KafkaNode,
    ToolRun,
    resolve_kafka,
    run_mains,
    run_tool,
)
from deploy.kafka.jvm import SERVER_HEAP, server_command, write_log_configs
from deploy.kafka.layout import plan_nodes, write_configs
from deploy.layout import LaunchError
from deploy.probes import is_serving
from deploy.waiting import wait_until
from quorum.wire.uuids import random_uuid, uuid_to_str

__all__ = ["STORAGE_TOOL", "KafkaCluster", "KafkaClusterSpec"]

# kafka-storage.sh's class in 4.x (Scala, in kafka_2.13)
STORAGE_TOOL: Final = "kafka.tools.StorageTool"
# KafkaBroker.STARTED_MESSAGE, logged by KafkaRaftServer.startup for every role
_READY: Final = re.compile(r"\[KafkaRaftServer nodeId=(\d+)\] Kafka Server started")
# a controlled shutdown moves leaders away first: give it the time Kafka's tests do
_STOP_TIMEOUT_S: Final = 30.0

T = TypeVar("T")


class KafkaCluster:
    def __init__(self, base_dir: str | Path, spec: KafkaClusterSpec | None = None, *,
                 distribution: KafkaDistribution | None = None) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.spec = spec or KafkaClusterSpec()
        self.distribution = distribution
        self.nodes: dict[int, KafkaNode] = {}
        self.cluster_id = ""
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._starts: dict[int, int] = {}
        self._log_starts: dict[int, int] = {}
        self._server_log_config = self.base_dir / "server-log4j2.properties"
        self._tools_log_config = self.base_dir / "tools-log4j2.properties"

    # -- setting up and tearing down ----------------------------------------------------

    def prepare(self) -> None:
        """Resolve Kafka (cached), choose ports, write the configs, format every node."""
        if self.distribution is None:
            self.distribution = resolve_kafka()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self._server_log_config, self._tools_log_config = write_log_configs(self.base_dir)
        nodes = plan_nodes(self.base_dir, self.spec)
        self.nodes = {n.node_id: n for n in nodes}
        write_configs(nodes, self.spec)
        self.cluster_id = uuid_to_str(random_uuid())
        runs = self.run_mains([
            (STORAGE_TOOL, "format", "-t", self.cluster_id, "-c", str(n.config_path))
            for n in nodes
        ])
        for run in runs:
            run.check()

    def start(self) -> KafkaCluster:
        """Prepare, start the controllers and then the brokers, and wait until every node
        is ready (the brokers unfenced)."""
        if not self.nodes:
            self.prepare()
        ordered = [*self.controller_ids, *(n for n in self.broker_ids
                                            if n not in self.controller_ids)]
        for node_id in ordered:
            self.start_node(node_id, wait=False)
        for node_id in ordered:
            self.wait_ready(node_id)
        return self

    def close(self) -> None:
        """Kill and reap every JVM this launcher started."""
        for node_id in list(self._processes):
            self._reap(node_id, signal.SIGKILL)

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- addresses ----------------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.nodes)

    @property
    def controller_ids(self) -> list[int]:
        return sorted(n for n, node in self.nodes.items() if node.is_controller)

    @property
    def broker_ids(self) -> list[int]:
        return sorted(n for n, node in self.nodes.items() if node.is_broker)

    def address(self, node_id: int) -> tuple[str, int]:
        """Where clients reach the node: its broker listener, else its controller one."""
        return self.nodes[node_id].address

    def controller_address(self, node_id: int) -> tuple[str, int]:
        address = self.nodes[node_id].controller_address
        if address is None:
            raise LaunchError(f"node {node_id} is no controller")
        return address

    @property
    def bootstrap_servers(self) -> str:
        """``bootstrap.servers`` for every broker."""
        return ",".join(f"{h}:{p}" for h, p in map(self.address, self.broker_ids))

    @property
    def bootstrap_controllers(self) -> str:
        """``bootstrap.controllers`` (``--bootstrap-controller``) for every controller."""
        return ",".join(f"{h}:{p}" for h, p in map(self.controller_address, self.controller_ids))

    # -- one node -------------------------------------------------------------------------

    def is_running(self, node_id: int) -> bool:
        process = self._processes.get(node_id)
        return process is not None and process.poll() is None

    def pid(self, node_id: int) -> int:
        return self._process(node_id).pid

    def start_node(self, node_id: int, *, wait: bool = True) -> None:
        if self.is_running(node_id):
            raise LaunchError(f"node {node_id} is already running (pid {self.pid(node_id)})")
        node = self.nodes[node_id]
        self._starts[node_id] = self._starts.get(node_id, 0) + 1
        command = server_command(
            self._distribution(), node.config_path, log_dir=node.app_log_dir,
            log_config=self._server_log_config, heap=self.spec.heap or SERVER_HEAP,
        )
        with node.log_path.open("ab") as log:
            # where this start's output begins: the ready line is looked for after it
            self._log_starts[node_id] = log.tell()
            log.write(f"=== launcher: start #{self._starts[node_id]}: "
                      f"{' '.join(command)}\n".encode())
            log.flush()
            self._processes[node_id] = subprocess.Popen(
                [*_parent_death_prefix(), *command], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=node.directory, start_new_session=True,
            )
        if wait:
            self.wait_ready(node_id)

    def wait_ready(self, node_id: int, timeout: float | None = None) -> None:
        """Until this start of the node logged that it started and its listener answers
        ApiVersions; fails at once if the JVM exits."""
        def ready() -> bool:
            if not self.is_running(node_id):
                code = self._process(node_id).poll()
                raise LaunchError(f"Kafka node {node_id} exited with status {code} while "
                                  "starting\n" + self.log_tail(node_id))
            return self._said_ready(node_id) and is_serving(self.address(node_id))

        self.wait_for(ready, f"Kafka node {node_id} to start",
                      timeout or self.spec.ready_timeout_s, nodes=[node_id])

    def _said_ready(self, node_id: int) -> bool:
        path = self.nodes[node_id].log_path
        with path.open("rb") as log:
            log.seek(self._log_starts.get(node_id, 0))
            since = log.read().decode(errors="replace")
        return any(m.group(1) == str(node_id) for m in _READY.finditer(since))

    def kill(self, node_id: int, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send ``sig``; SIGKILL also reaps the JVM (it is gone on return)."""
        if sig == signal.SIGKILL:
            self._reap(node_id, sig)
        else:
            self._process(node_id).send_signal(sig)

    def stop(self, node_id: int, timeout: float = _STOP_TIMEOUT_S) -> int:
        """SIGTERM (Kafka's shutdown hook: a broker's controlled shutdown) and wait;
        SIGKILL after ``timeout``. Returns the exit status."""
        process = self._process(node_id)
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            code = self._reap(node_id, signal.SIGKILL)
        self._processes.pop(node_id, None)
        return code

    def restart(self, node_id: int) -> None:
        if self.is_running(node_id):
            self.stop(node_id)
        self.start_node(node_id)

    # -- Kafka's tools --------------------------------------------------------------------

    def run_tool(self, main_class: str, args: Sequence[str], *,
                 timeout: float = 120.0) -> ToolRun:
        """One of Kafka's tools in a JVM of its own, as its ``bin/`` script runs it."""
        return run_tool(self._distribution(), main_class, args,
                        log_config=self._tools_log_config, log_dir=self.base_dir,
                        timeout=timeout)

    def run_mains(self, commands: Sequence[Sequence[str]], *,
                  timeout: float = 120.0) -> list[ToolRun]:
        """Several tools (main class, arguments) in turn in one JVM (``MainRunner.java``)."""
        return run_mains(self._distribution(), commands, log_config=self._tools_log_config,
                         timeout=timeout)

    # -- waiting and debugging ------------------------------------------------------------

    def wait_for(self, condition: Callable[[], T | None], what: str, timeout: float,
                 *, nodes: Sequence[int] | None = None) -> T:
        return wait_until(
            condition, what, timeout,
            details=lambda: "\n".join(self.log_tail(n) for n in (nodes or self.node_ids)),
        )

    def log_tail(self, node_id: int, lines: int = 30) -> str:
        path = self.nodes[node_id].log_path
        text = path.read_text(errors="replace") if path.exists() else ""
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- {path} (last {lines} lines) ---\n{tail}"

    def log_tails(self, lines: int = 30) -> str:
        return "\n".join(self.log_tail(n, lines) for n in self.node_ids)

    # -- internals ------------------------------------------------------------------------

    def _distribution(self) -> KafkaDistribution:
        if self.distribution is None:
            self.distribution = resolve_kafka()
        return self.distribution

    def _process(self, node_id: int) -> subprocess.Popen[bytes]:
        process = self._processes.get(node_id)
        if process is None:
            raise LaunchError(f"Kafka node {node_id} was not started (or was stopped)")
        return process

    def _reap(self, node_id: int, sig: signal.Signals) -> int:
        process = self._processes.pop(node_id)
        if process.poll() is None:
            process.send_signal(sig)
        return process.wait()


def _parent_death_prefix() -> list[str]:
    """``setpriv --pdeathsig KILL --`` when this is the main thread and setpriv exists:
    setpriv arms the signal and execs the JVM, which keeps it (and the PID)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"]
