"""A JetStream cluster of nats-server processes on loopback, for the NATS peer of the bench.

    with NatsCluster(program, base_dir) as cluster:   # started and healthy
        urls = cluster.client_urls

Each node gets free ports (client, cluster route, monitoring), a config file
and a JetStream store under ``base_dir/<name>/``, and its stdout and stderr in
``base_dir/<name>/server.log``. Durability is left at nats-server's default:
JetStream writes each message to its file store without an fsync before the
publish ack (the store is synced in the background), as Kafka relies on
replication rather than a flush per write; nothing here changes that.

Start waits, with a deadline and no fixed sleep, until every node's
monitoring endpoint answers ``/healthz`` with 200: JetStream is enabled and
its meta group has a leader that this node follows (``js-enabled-only``
would answer before a stream could be created). Leaving the block stops
every process this cluster started, by PID: SIGTERM, then SIGKILL after a
bound. The logs stay in ``base_dir``; the caller decides whether to keep it.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Final

import attrs

from bench.nats_server import NatsServerProgram
from deploy.layout import LaunchError, free_ports
from deploy.waiting import wait_until
from quorum.node.lifeline import arm_parent_death_signal

__all__ = ["HOST", "NatsCluster", "NatsNode"]

HOST: Final = "127.0.0.1"
CLUSTER_NAME: Final = "pykraft-bench"
_PORTS_PER_NODE: Final = 3
_STOP_TIMEOUT_S: Final = 10.0
_HEALTH_TIMEOUT_S: Final = 2.0
_LOG_TAIL_LINES: Final = 20


@attrs.frozen(kw_only=True)
class NatsNode:
    name: str
    client_port: int
    route_port: int
    monitor_port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"nats://{HOST}:{self.client_port}"

    @property
    def config_path(self) -> Path:
        return self.directory / "server.conf"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def store_dir(self) -> Path:
        return self.directory / "store"


def plan_nodes(base_dir: Path, size: int) -> list[NatsNode]:
    ports = free_ports(HOST, size * _PORTS_PER_NODE)
    return [
        NatsNode(name=f"n{i + 1}", client_port=ports[3 * i], route_port=ports[3 * i + 1],
                 monitor_port=ports[3 * i + 2], directory=base_dir / f"n{i + 1}")
        for i in range(size)
    ]


def render_config(node: NatsNode, nodes: list[NatsNode]) -> str:
    routes = ", ".join(f'"nats-route://{HOST}:{n.route_port}"' for n in nodes if n != node)
    # no sync setting (2.10's sync_interval included): the server's default durability applies
    return (
        f'server_name: "{node.name}"\n'
        f'listen: "{HOST}:{node.client_port}"\n'
        f'http: "{HOST}:{node.monitor_port}"\n'
        f"jetstream {{\n"
        f'  store_dir: "{node.store_dir}"\n'
        f"}}\n"
        f"cluster {{\n"
        f'  name: "{CLUSTER_NAME}"\n'
        f'  listen: "{HOST}:{node.route_port}"\n'
        f"  routes: [{routes}]\n"
        f"}}\n"
    )


def is_healthy(node: NatsNode) -> bool:
    url = f"http://{HOST}:{node.monitor_port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=_HEALTH_TIMEOUT_S) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):  # not listening yet, or 503 while electing
        return False


class NatsCluster:
    def __init__(self, program: NatsServerProgram, base_dir: Path, *, size: int = 3,
                 start_timeout_s: float = 30.0) -> None:
        self.program = program
        self.base_dir = base_dir
        self.start_timeout_s = start_timeout_s
        self.nodes = plan_nodes(base_dir, size)
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def client_urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._processes.items()}

    def start(self) -> None:
        for node in self.nodes:
            node.store_dir.mkdir(parents=True, exist_ok=True)
            node.config_path.write_text(render_config(node, self.nodes))
        for node in self.nodes:
            self._spawn(node)
        for node in self.nodes:
            wait_until(lambda node=node: self._healthy_or_failed(node),  # type: ignore[misc]
                       f"nats-server {node.name} to be healthy (/healthz)",
                       self.start_timeout_s, details=self.log_tails)

    def stop(self) -> None:
        """SIGTERM to every node this cluster started, SIGKILL after a bound; all reaped."""
        for process in self._processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self._processes.values():
            try:
                process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()

    def log_tails(self, lines: int = _LOG_TAIL_LINES) -> str:
        tails = []
        for node in self.nodes:
            with contextlib.suppress(OSError):
                text = node.log_path.read_text(errors="replace").splitlines()[-lines:]
                tails.append(f"--- {node.log_path}\n" + "\n".join(text))
        return "\n".join(tails)

    def __enter__(self) -> NatsCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _spawn(self, node: NatsNode) -> None:
        # the kernel's parent-death signal follows the forking thread: armed only from the
        # main thread, so that servers do not outlive a bench killed with -9
        on_main = threading.current_thread() is threading.main_thread()
        with node.log_path.open("ab") as log:
            self._processes[node.name] = subprocess.Popen(
                [self.program.path, "--config", str(node.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=node.directory, start_new_session=True,
                preexec_fn=(lambda: arm_parent_death_signal(signal.SIGTERM)) if on_main else None,
            )

    def _healthy_or_failed(self, node: NatsNode) -> bool:
        code = self._processes[node.name].poll()
        if code is not None:
            raise LaunchError(f"nats-server {node.name} exited with {code} while starting\n"
                              f"{self.log_tails()}")
        return is_healthy(node)
