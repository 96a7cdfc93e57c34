"""Nodes stop when the launcher that started them dies, kill -9 included.

A separate launcher process (``tests/integration/lifeline_launcher.py``)
starts a controller and a broker and is then killed with SIGKILL: it cannot
stop anything itself, so every node must stop on its own. The checks are on
the nodes' PIDs, which are children of the killed launcher.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.waiting import wait_until

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
LIFELINE_LINE = "launcher gone (lifeline pipe closed)"


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [state, ppid, ...]; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rpartition(")")[2].split()


def has_exited(pid: int) -> bool:
    """Gone, or a zombie that its new parent has not reaped yet."""
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def parent_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


class Launcher:
    def __init__(self, base_dir: Path, how: str) -> None:
        self.base_dir = base_dir
        self.output = base_dir / "launcher.out"
        base_dir.mkdir(parents=True, exist_ok=True)
        with self.output.open("wb") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.integration.lifeline_launcher", str(base_dir),
                 how], cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def printed(self, tag: str) -> list[int]:
        """The PIDs the launcher printed after ``tag`` so far."""
        for line in self.output.read_text().splitlines():
            if line.startswith(tag + " "):
                return [int(pid) for pid in line.split()[1:]]
        return []

    def wait_printed(self, tag: str) -> list[int]:
        def printed() -> list[int]:
            assert self.process.poll() is None, "the launcher exited:\n" + self.text()
            return self.printed(tag)

        return wait_until(printed, f"the launcher's {tag} line", 30, details=self.text)

    def text(self) -> str:
        logs = sorted(self.base_dir.glob("*/node.log"))
        return "\n".join(f"--- {path}\n{path.read_text(errors='replace')}"
                         for path in [self.output, *logs])

    def node_log(self, index: int) -> str:
        return sorted(self.base_dir.glob("*/node.log"))[index].read_text(errors="replace")


def _kill_if_ours(pid: int, base_dir: Path) -> None:
    """SIGKILL a node (or holder) this test started that is still running: by PID,
    after checking that its command line names this test's directory."""
    with contextlib.suppress(OSError):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if str(base_dir).encode() in cmdline and not has_exited(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[list[Launcher]]:
    """Launchers started by the test; anything of theirs still running is killed."""
    launchers: list[Launcher] = []
    yield launchers
    for launcher in launchers:
        if launcher.process.poll() is None:
            launcher.process.kill()
            launcher.process.wait()
        for pid in launcher.printed("NODES") + launcher.printed("HOLDER"):
            _kill_if_ours(pid, launcher.base_dir)


def kill_launcher_and_wait_for_nodes(launcher: Launcher) -> None:
    nodes = launcher.wait_printed("NODES")
    assert len(nodes) == 2
    for pid in nodes:
        assert not has_exited(pid), f"node {pid} is not running:\n{launcher.text()}"
        assert parent_of(pid) == launcher.process.pid
    launcher.process.kill()
    assert launcher.process.wait(10) == -signal.SIGKILL
    for pid in nodes:
        wait_until(lambda pid=pid: has_exited(pid), f"node pid {pid} to exit after its "
                   "launcher was killed", 20, details=launcher.text)


@pytest.mark.parametrize("how", ["main-thread", "worker-thread"])
def test_every_node_exits_when_its_launcher_is_killed(
    launch: list[Launcher], tmp_path: Path, how: str,
) -> None:
    launcher = Launcher(tmp_path / how, how)
    launch.append(launcher)
    kill_launcher_and_wait_for_nodes(launcher)
    for index in range(2):
        log = launcher.node_log(index)
        if how == "worker-thread":
            # the lifeline alone: no parent-death signal once the starting thread ended
            assert LIFELINE_LINE in log
            assert "SIGTERM" not in log
        else:
            assert LIFELINE_LINE in log or "SIGTERM: " in log


def test_the_parent_death_signal_stops_nodes_when_the_lifeline_leaked(
    launch: list[Launcher], tmp_path: Path,
) -> None:
    launcher = Launcher(tmp_path / "leaked", "leaked-write-end")
    launch.append(launcher)
    [holder] = launcher.wait_printed("HOLDER")
    kill_launcher_and_wait_for_nodes(launcher)
    assert not has_exited(holder)  # the write end is still open
    for index in range(2):
        log = launcher.node_log(index)
        assert "SIGTERM: " in log
        assert LIFELINE_LINE not in log
