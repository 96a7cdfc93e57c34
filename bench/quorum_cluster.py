"""A small launcher for the quorum benchmark: N controller processes on loopback.

Each node runs ``python -m bench.quorum_node CONFIG`` (a ``ControllerNode``
with optional in-process workload and profiler) in its own process group,
with fsync on. The launcher writes the configs, formats the storage, waits
for each node's ready line, finds the leader through PykraftAppend's
NOT_LEADER_OR_FOLLOWER hint, and kills, stops and restarts nodes by PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from quorum.client import BlockingKafkaConnection, ClientError
from quorum.config import load_server_config
from quorum.storage import format_storage
from quorum.wire.messages.pykraft_append import PykraftAppendRequest, PykraftAppendResponse

__all__ = ["BenchCluster"]

CLUSTER_ID = "YmVuY2gtcXVvcnVtLTAwMQ"


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


class BenchCluster:
    def __init__(
        self,
        base: Path,
        *,
        size: int = 3,
        overrides: Mapping[str, str] | None = None,
        node_args: Sequence[str] = (),
    ) -> None:
        self.base = base
        self.size = size
        self.ports = _free_ports(size)
        self.node_args = list(node_args)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.configs: dict[int, Path] = {}
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.ports))
        for node_id in range(1, size + 1):
            home = base / f"controller-{node_id}"
            home.mkdir(parents=True, exist_ok=True)
            lines = [
                "process.roles=controller",
                f"node.id={node_id}",
                f"controller.quorum.voters={voters}",
                f"listeners=CONTROLLER://127.0.0.1:{self.ports[node_id - 1]}",
                "controller.listener.names=CONTROLLER",
                f"log.dirs={home}/logs",
                f"metadata.log.dir={home}/metadata",
                *(f"{k}={v}" for k, v in (overrides or {}).items()),
            ]
            path = home / "controller.properties"
            path.write_text("\n".join(lines) + "\n")
            format_storage(load_server_config(path), CLUSTER_ID)
            self.configs[node_id] = path

    def address(self, node_id: int) -> tuple[str, int]:
        return "127.0.0.1", self.ports[node_id - 1]

    # -- processes ---------------------------------------------------------------------------

    def start(self, node_id: int, extra_args: Sequence[str] = ()) -> None:
        home = self.configs[node_id].parent
        log = (home / "node.log").open("ab")
        out = home / "stdout.txt"
        out.write_bytes(b"")
        command = [sys.executable, "-m", "bench.quorum_node", str(self.configs[node_id]),
                   *self.node_args, *extra_args]
        self.processes[node_id] = subprocess.Popen(
            command, stdout=out.open("wb"), stderr=log, start_new_session=True
        )

    def start_all(self) -> None:
        for node_id in self.configs:
            self.start(node_id)
        for node_id in self.configs:
            self.wait_ready(node_id)

    def stdout(self, node_id: int) -> str:
        return (self.configs[node_id].parent / "stdout.txt").read_text()

    def wait_ready(self, node_id: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while "ready:" not in self.stdout(node_id):
            process = self.processes[node_id]
            if process.poll() is not None or time.monotonic() > deadline:
                log = (self.configs[node_id].parent / "node.log").read_text()[-2000:]
                raise RuntimeError(f"node {node_id} did not start:\n{log}")
            time.sleep(0.01)

    def signal(self, node_id: int, signum: int) -> None:
        process = self.processes[node_id]
        os.kill(process.pid, signum)

    def reap(self, node_id: int, timeout: float = 20.0) -> None:
        self.processes.pop(node_id).wait(timeout)

    def stop_all(self) -> None:
        for node_id in list(self.processes):
            if self.processes[node_id].poll() is None:
                self.signal(node_id, signal.SIGTERM)
        for node_id in list(self.processes):
            try:
                self.reap(node_id)
            except subprocess.TimeoutExpired:
                self.signal(node_id, signal.SIGKILL)
                self.reap(node_id)

    def running(self) -> list[int]:
        return [n for n, p in self.processes.items() if p.poll() is None]

    # -- the quorum ------------------------------------------------------------------------

    def append(self, node_id: int, payloads: Sequence[bytes], timeout: float = 2.0
               ) -> PykraftAppendResponse | None:
        """One PykraftAppend at ``node_id``; None if it cannot be reached."""
        host, port = self.address(node_id)
        try:
            with BlockingKafkaConnection.connect(host, port, timeout=timeout) as conn:
                response: PykraftAppendResponse = conn.request(
                    PykraftAppendRequest(records=tuple(payloads)), timeout=timeout
                )
                return response
        except ClientError:
            return None

    def find_leader(self, timeout: float = 30.0) -> int:
        """The node that commits an append (asking the nodes in turn, following hints)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node_id in self.running():
                answer = self.append(node_id, [b"probe"])
                if answer is not None and answer.error_code == 0:
                    return node_id
            time.sleep(0.02)
        raise RuntimeError("no leader commits")
