"""``LocalCluster``: N controller processes on this host, for tests, ``kraft dev`` and benches.

    with LocalCluster(tmp_path, ClusterSpec(controllers=3)) as cluster:
        leader = cluster.leader()
        cluster.kill(leader)                 # SIGKILL, reaped
        cluster.append([b"x"])               # commits through the new leader
        cluster.restart(leader)

Each node is a real OS process, ``sys.executable -m cli server-start
CONFIG`` (so it works from a fresh clone without the ``kraft`` script),
in its own session so that a terminal's Ctrl-C reaches only the launching
program (``kraft dev`` then stops the nodes in order). stdout and stderr of every start go to
``<base>/controller-N/node.log``. Every wait polls with a deadline and
fails with the tail of the node's log. Leaving the ``with`` block kills and
reaps every process this launcher started, and nothing else (by PID).

A launcher that dies without leaving the block (kill -9 of a test run or of
``kraft dev``) takes its nodes with it: each cluster owns a lifeline pipe
whose write end only this process holds (close-on-exec, and every node is
started with ``close_fds``, so no node of this or another cluster inherits
it); every node gets the read end (``pass_fds``, named by
``PYKRAFT_LIFELINE_FD``) and stops when it reads end of file
(``quorum.node.lifeline``). Nodes started from the main thread also ask
Linux for SIGTERM when it exits, in case the write end leaked elsewhere.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final, TypeVar

from deploy import handicap
from deploy.layout import (
    ClusterSpec,
    LaunchError,
    NodeLayout,
    format_all,
    link_proxies,
    plan_layout,
    write_configs,
)
from deploy.probes import is_serving
from deploy.proxy import CutMode, LinkProxy
from deploy.quorum_view import QuorumView
from deploy.waiting import wait_until
from quorum.node import lifeline_environ

__all__ = ["ClusterSpec", "LaunchError", "LocalCluster"]

_STOP_TIMEOUT_S: Final = 10.0
_PLAN_ATTEMPTS: Final = 5
# what a node process prints once it serves (quorum.node.process.ready_line)
_READY: Final = re.compile(r"^pykraft (?:node|broker) (\d+) ready: ", re.MULTILINE)
# where Python starts printing an uncaught exception (a group's print is indented)
_TRACEBACK_START: Final = re.compile(r"^(?:Traceback|  \+ Exception Group Traceback) ")
# the directory holding the cli package, for the nodes' PYTHONPATH
_PROJECT_ROOT: Final = Path(__file__).resolve().parent.parent

T = TypeVar("T")


class LocalCluster(QuorumView):
    def __init__(self, base_dir: str | Path, spec: ClusterSpec | None = None) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.spec = spec or ClusterSpec()
        self.layout: dict[int, NodeLayout] = {}
        self.proxies: dict[tuple[int, int], LinkProxy] = {}
        self.cluster_id = ""
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._starts: dict[int, int] = {}
        self._log_starts: dict[int, int] = {}
        # (read end, write end) of the lifeline pipe, made by the first start
        self._lifeline: tuple[int, int] | None = None

    # -- setting up and tearing down ----------------------------------------------------

    def prepare(self) -> None:
        """Choose addresses, start proxies, write the configs and format the storage."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        nodes = self._plan_with_proxies()
        self.layout = {n.node_id: n for n in nodes}
        write_configs(nodes, self.spec, self.proxies)
        self.cluster_id = format_all(nodes)

    def _plan_with_proxies(self) -> list[NodeLayout]:
        """The layout, and its proxies listening on ports no node was given.

        The nodes' ports are free when chosen but bound only when the nodes
        start, so a proxy listening on port 0 in between may be handed one
        of them: then the proxies are closed and the ports chosen again.
        """
        for _ in range(_PLAN_ATTEMPTS):
            nodes = plan_layout(self.base_dir, self.spec)
            if not self.spec.link_proxies:
                return nodes
            proxies = link_proxies(nodes)
            taken = {(n.host, p) for n in nodes for p in (n.port, n.metrics_port) if p}
            if not any((p.host, p.port) in taken for p in proxies.values()):
                self.proxies = proxies
                return nodes
            for proxy in proxies.values():
                proxy.close()
        raise LaunchError(f"no proxy ports apart from the nodes' in {_PLAN_ATTEMPTS} attempts")

    def start(self) -> LocalCluster:
        """Prepare, start every node, and wait until each serves requests."""
        if not self.layout:
            self.prepare()
        for node_id in self.layout:
            self.start_node(node_id, wait=False)
        for node_id in self.layout:
            self.wait_ready(node_id)
        return self

    def close(self) -> None:
        """Kill and reap every process this launcher started; close the proxies."""
        for node_id in list(self._processes):
            self._reap(node_id, signal.SIGKILL)
        for proxy in self.proxies.values():
            proxy.close()
        if self._lifeline is not None:
            for fd in self._lifeline:
                os.close(fd)
            self._lifeline = None

    def __enter__(self) -> LocalCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- one node -------------------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        """The controllers (the quorum's voters)."""
        return sorted(n for n, node in self.layout.items() if not node.is_broker)

    @property
    def broker_ids(self) -> list[int]:
        return sorted(n for n, node in self.layout.items() if node.is_broker)

    def address(self, node_id: int) -> tuple[str, int]:
        return self.layout[node_id].address

    def metrics_address(self, node_id: int) -> tuple[str, int]:
        """Where node ``node_id`` serves GET /metrics (``ClusterSpec(metrics=True)``)."""
        node = self.layout[node_id]
        if node.metrics_port is None:
            raise LaunchError("this cluster was started without metrics (ClusterSpec.metrics)")
        return (node.host, node.metrics_port)

    def is_running(self, node_id: int) -> bool:
        process = self._processes.get(node_id)
        return process is not None and process.poll() is None

    def pid(self, node_id: int) -> int:
        return self._process(node_id).pid

    def start_node(self, node_id: int, *, wait: bool = True, args: Sequence[str] = ()) -> None:
        if self.is_running(node_id):
            raise LaunchError(f"node {node_id} is already running (pid {self.pid(node_id)})")
        node = self.layout[node_id]
        self._starts[node_id] = self._starts.get(node_id, 0) + 1
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PROJECT_ROOT), env.get("PYTHONPATH")) if p
        )
        env["PYTHONUNBUFFERED"] = "1"
        lifeline = self._lifeline_read_end()
        # the kernel's parent-death signal follows the forking thread, not this process:
        # safe only from the main thread, which lives as long as the launcher
        env.update(lifeline_environ(
            lifeline, parent_death_signal=threading.current_thread() is threading.main_thread(),
        ))
        program = self.spec.command or (sys.executable, "-m", "cli", "server-start")
        command = [*program, *args, str(node.config_path)]
        with node.log_path.open("ab") as log:
            # where this start's output begins: the ready line is looked for after it
            self._log_starts[node_id] = log.tell()
            log.write(f"=== launcher: start #{self._starts[node_id]}: "
                      f"{' '.join(command)}\n".encode())
            log.flush()
            self._processes[node_id] = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.base_dir, env=env, start_new_session=True, pass_fds=(lifeline,),
            )
        # a handicapped run slows its nodes as much as itself (deploy.handicap)
        handicap.adopt(self._processes[node_id].pid)
        if wait:
            self.wait_ready(node_id)

    def wait_ready(self, node_id: int, timeout: float | None = None) -> None:
        """Until this start of the node said it is ready and answers ApiVersions; fails at
        once if it exits. (Its port answering is not enough: something else may hold it.)"""
        def ready() -> bool:
            if not self.is_running(node_id):
                code = self._process(node_id).poll()
                raise LaunchError(f"node {node_id} exited with status {code} while starting\n"
                                  + self.log_tail(node_id))
            return self._said_ready(node_id) and is_serving(self.address(node_id))

        self.wait_for(ready, f"node {node_id} to serve requests",
                      timeout or self.spec.ready_timeout_s, nodes=[node_id])

    def _said_ready(self, node_id: int) -> bool:
        """Whether the node's output since its latest start holds its ready line."""
        path = self.layout[node_id].log_path
        if not path.exists():
            return False
        with path.open("rb") as log:
            log.seek(self._log_starts.get(node_id, 0))
            since = log.read().decode(errors="replace")
        return any(m.group(1) == str(node_id) for m in _READY.finditer(since))

    def wait_exit(self, node_id: int, timeout: float = _STOP_TIMEOUT_S) -> int:
        """The node's exit status, once it exits by itself (e.g. a refused start)."""
        process = self._process(node_id)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise LaunchError(f"node {node_id} still runs after {timeout}s\n"
                              + self.log_tail(node_id)) from None
        self._processes.pop(node_id, None)
        return code

    def kill(self, node_id: int, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send ``sig``; SIGKILL also reaps the process (it is gone on return)."""
        if sig == signal.SIGKILL:
            self._reap(node_id, sig)
        else:
            self._process(node_id).send_signal(sig)

    def stop(self, node_id: int, timeout: float = _STOP_TIMEOUT_S) -> int:
        """SIGTERM (an orderly shutdown: a leader hands over) and wait; SIGKILL after
        ``timeout``. Returns the exit status."""
        process = self._process(node_id)
        process.send_signal(signal.SIGCONT)  # a paused node could not handle SIGTERM
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

    def pause(self, node_id: int) -> None:
        self._process(node_id).send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self._process(node_id).send_signal(signal.SIGCONT)

    # -- links ----------------------------------------------------------------------------

    def cut(self, source: int, target: int, mode: CutMode = CutMode.DROP) -> None:
        """Cut the directed link source -> target (source's requests to target)."""
        self._proxy(source, target).cut(mode)

    def isolate(self, node_id: int, mode: CutMode = CutMode.DROP) -> None:
        """Cut every link to and from ``node_id``."""
        for (source, target), proxy in self.proxies.items():
            if node_id in (source, target):
                proxy.cut(mode)

    def heal(self) -> None:
        for proxy in self.proxies.values():
            proxy.heal()

    # -- waiting and debugging ------------------------------------------------------------

    def wait_for(self, condition: Callable[[], T | None], what: str, timeout: float,
                 *, nodes: Sequence[int] | None = None) -> T:
        """Poll ``condition`` until it returns something truthy; LaunchError with the
        nodes' log tails after ``timeout`` seconds."""
        def details() -> str:
            tails = [self.log_tail(n) for n in (nodes or sorted(self.layout))]
            return "\n".join([*self._exits(), *tails])

        return wait_until(condition, what, timeout, details=details)

    def _exits(self) -> list[str]:
        """Each node that exited by itself (no stop or kill of ours), with the traceback it
        printed last: first in a timeout's message, which a CI log may cut after a page."""
        found = []
        for node_id, process in sorted(self._processes.items()):
            code = process.poll()
            if code is None:
                continue
            found.append(f"=== node {node_id} exited by itself with status {code}\n"
                         + self.last_traceback(node_id))
        return found

    def last_traceback(self, node_id: int, lines: int = 60) -> str:
        """The node's output from the last traceback it printed (its first ten lines and its
        end, ``lines`` in all), or its last lines when it printed none."""
        path = self.layout[node_id].log_path
        text = path.read_text(errors="replace").splitlines() if path.exists() else []
        starts = [i for i, line in enumerate(text) if _TRACEBACK_START.match(line)]
        if not starts:
            return self.log_tail(node_id, lines=10)
        block = text[starts[-1]:]
        if len(block) > lines:  # the innermost error is printed last: keep the end
            block = [*block[:10], f"[... {len(block) - lines} lines ...]",
                     *block[-(lines - 10):]]
        return "\n".join(block)

    def log_tail(self, node_id: int, lines: int = 30) -> str:
        path = self.layout[node_id].log_path
        text = path.read_text(errors="replace") if path.exists() else ""
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- {path} (last {lines} lines) ---\n{tail}"

    def log_tails(self, lines: int = 30) -> str:
        return "\n".join(self.log_tail(n, lines) for n in sorted(self.layout))

    # -- internals ------------------------------------------------------------------------

    def _process(self, node_id: int) -> subprocess.Popen[bytes]:
        process = self._processes.get(node_id)
        if process is None:
            raise LaunchError(f"node {node_id} was not started (or was stopped)")
        return process

    def _proxy(self, source: int, target: int) -> LinkProxy:
        if not self.proxies:
            raise LaunchError("links can be cut only with ClusterSpec(link_proxies=True)")
        return self.proxies[(source, target)]

    def _lifeline_read_end(self) -> int:
        """The lifeline's read end, for a node to inherit; the write end stays here.

        Both ends are close-on-exec (os.pipe), and subprocess closes every fd
        but ``pass_fds`` in a child: a node holding the write end would keep
        the pipe open after this process died, and no node would ever stop."""
        if self._lifeline is None:
            self._lifeline = os.pipe()
        return self._lifeline[0]

    def _reap(self, node_id: int, sig: signal.Signals) -> int:
        process = self._processes.pop(node_id)
        if process.poll() is None:
            process.send_signal(sig)
        return process.wait()
