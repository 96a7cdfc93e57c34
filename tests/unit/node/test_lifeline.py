"""The launcher's lifeline, node side: reading it from the environment, watching it,
and stopping the node (in order, then at once after the grace) when the launcher is gone."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from quorum.metrics import NodeActivity
from quorum.node import Lifeline, NodeAddress, NodeStartupError, lifeline_environ, take_lifeline
from quorum.node.lifeline import (
    LIFELINE_FD_ENV,
    LIFELINE_GRACE_S,
    LIFELINE_PDEATHSIG_ENV,
    parse_lifeline,
    wait_until_launcher_gone,
)
from quorum.node.process import serve_until_signalled

ADDRESS = NodeAddress("CONTROLLER", "127.0.0.1", 9092)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    """A lifeline pipe (read end, write end); a test closes the write end as a dying
    launcher would, and whatever is left open is closed afterwards."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


# -- the environment ---------------------------------------------------------------------


def test_a_node_started_by_hand_has_no_lifeline() -> None:
    environ = {"PATH": "/bin"}
    assert parse_lifeline(environ) is None
    assert take_lifeline(environ) is None
    assert environ == {"PATH": "/bin"}


@pytest.mark.parametrize("from_main_thread", [True, False])
def test_the_node_reads_back_the_lifeline_its_launcher_wrote(from_main_thread: bool) -> None:
    environ = lifeline_environ(7, parent_death_signal=from_main_thread)
    assert parse_lifeline(environ) == Lifeline(7, parent_death_signal=from_main_thread)


def test_the_launchers_variables_replace_any_it_inherited_itself() -> None:
    environ = {LIFELINE_FD_ENV: "3", LIFELINE_PDEATHSIG_ENV: "1"}
    environ.update(lifeline_environ(9, parent_death_signal=False))
    assert parse_lifeline(environ) == Lifeline(9, parent_death_signal=False)


@pytest.mark.parametrize("value", ["", "three", "-1", "3.0"])
def test_a_lifeline_that_is_not_an_fd_number_is_refused_with_a_way_out(value: str) -> None:
    with pytest.raises(NodeStartupError, match=f"{LIFELINE_FD_ENV}=.* unset it"):
        parse_lifeline({LIFELINE_FD_ENV: value})


def test_a_lifeline_fd_that_is_not_open_is_refused(pipe: tuple[int, int]) -> None:
    read_end, _ = pipe
    os.close(read_end)
    with pytest.raises(NodeStartupError, match=f"{LIFELINE_FD_ENV}={read_end}: .*unset it"):
        take_lifeline({LIFELINE_FD_ENV: str(read_end)})


def test_a_lifeline_fd_that_is_not_a_pipe_is_refused(tmp_path: Path) -> None:
    with (
        (tmp_path / "file").open("wb") as file,
        pytest.raises(NodeStartupError, match="is not a pipe"),
    ):
        take_lifeline({LIFELINE_FD_ENV: str(file.fileno())})


def test_taking_the_lifeline_hides_it_from_programs_the_node_runs(
    pipe: tuple[int, int],
) -> None:
    read_end, _ = pipe
    os.set_inheritable(read_end, True)  # as pass_fds leaves it in the node
    os.set_blocking(read_end, True)
    environ = {"PATH": "/bin", **lifeline_environ(read_end, parent_death_signal=False)}
    assert take_lifeline(environ) == Lifeline(read_end, parent_death_signal=False)
    assert environ == {"PATH": "/bin"}
    assert not os.get_inheritable(read_end)
    assert not os.get_blocking(read_end)


# PR_GET_PDEATHSIG, in a process of its own: arming it in the test runner would tie the
# runner to its parent
_ARM_AND_REPORT = """
import ctypes
from quorum.node import take_lifeline
take_lifeline()
libc = ctypes.CDLL(None, use_errno=True)
armed = ctypes.c_int(-1)
assert libc.prctl(2, ctypes.byref(armed), 0, 0, 0) == 0
print(armed.value)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize(("from_main_thread", "armed"), [(True, signal.SIGTERM), (False, 0)])
def test_a_node_asks_for_sigterm_at_its_launchers_death_only_if_forked_from_the_main_thread(
    pipe: tuple[int, int], from_main_thread: bool, armed: int,
) -> None:
    read_end, _ = pipe
    env = {**os.environ, **lifeline_environ(read_end, parent_death_signal=from_main_thread)}
    result = subprocess.run([sys.executable, "-c", _ARM_AND_REPORT], env=env, cwd=ROOT,
                            pass_fds=(read_end,), capture_output=True, text=True, timeout=20,
                            check=True)
    assert int(result.stdout) == armed


# -- watching ----------------------------------------------------------------------------


async def test_the_launcher_is_gone_only_when_every_write_end_is_closed(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    other_write_end = os.dup(write_end)  # as a leaked copy would
    gone = trio.Event()

    async def watch() -> None:
        await wait_until_launcher_gone(read_end)
        gone.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        os.write(other_write_end, b"x")  # not the protocol: read and ignored
        os.close(write_end)
        await trio.testing.wait_all_tasks_blocked()
        assert not gone.is_set()
        os.close(other_write_end)
        with trio.fail_after(5):
            await gone.wait()


# -- stopping the node -------------------------------------------------------------------


class FakeNode:
    """A node that serves at once and, asked to stop, stops once ``finish_stop`` is set
    (never, if the test does not set it)."""

    def __init__(self) -> None:
        self.stop_asked = trio.Event()
        self.finish_stop = trio.Event()
        self.stopped_in_order = False
        self.ready = trio.Event()
        self.activity = NodeActivity()

    @property
    def stopping(self) -> bool:
        return self.stop_asked.is_set()

    def stop(self) -> None:
        self.stop_asked.set()

    async def run(self, *, task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED,
                  ) -> None:
        task_status.started(ADDRESS)
        await self.stop_asked.wait()
        await self.finish_stop.wait()
        self.stopped_in_order = True


async def serve(node: FakeNode, lifeline: Lifeline | None, ended_at: list[float]) -> None:
    await serve_until_signalled(node, lambda _address: node.ready.set(), lifeline=lifeline)
    ended_at.append(trio.current_time())


async def test_a_node_stops_in_order_when_its_launcher_is_gone(
    pipe: tuple[int, int], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    read_end, write_end = pipe
    node = FakeNode()
    node.finish_stop.set()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, node, Lifeline(read_end, parent_death_signal=False), [])
            await node.ready.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert not node.stopping
            os.close(write_end)
    assert node.stopped_in_order
    assert "launcher gone (lifeline pipe closed): shutting down" in caplog.text


async def test_a_node_still_stopping_after_the_grace_is_stopped_at_once(
    pipe: tuple[int, int], autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    read_end, write_end = pipe
    node = FakeNode()  # its stop never finishes
    ended_at: list[float] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, node, Lifeline(read_end, parent_death_signal=False), ended_at)
        await node.ready.wait()
        launcher_died_at = trio.current_time()
        os.close(write_end)
    assert node.stopping and not node.stopped_in_order
    assert ended_at[0] - launcher_died_at == pytest.approx(LIFELINE_GRACE_S, abs=0.01)
    assert "stopping at once" in caplog.text


async def test_a_signal_after_the_launcher_is_gone_does_not_cut_the_orderly_stop_short(
    pipe: tuple[int, int], caplog: pytest.LogCaptureFixture,
) -> None:
    """The parent-death SIGTERM follows the lifeline's end of file: a first signal."""
    caplog.set_level(logging.INFO)
    read_end, write_end = pipe
    node = FakeNode()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, node, Lifeline(read_end, parent_death_signal=False), [])
            await node.ready.wait()
            os.close(write_end)
            await node.stop_asked.wait()
            # serve_until_signalled receives it: the node is still stopping
            os.kill(os.getpid(), signal.SIGTERM)
            await trio.testing.wait_all_tasks_blocked()
            node.finish_stop.set()
    assert node.stopped_in_order
    assert "SIGTERM: shutting down" in caplog.text
    assert "second signal" not in caplog.text


async def test_a_second_signal_stops_the_node_at_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    node = FakeNode()  # its stop never finishes
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, node, None, [])
            await node.ready.wait()
            os.kill(os.getpid(), signal.SIGTERM)
            await node.stop_asked.wait()
            os.kill(os.getpid(), signal.SIGTERM)
    assert not node.stopped_in_order
    assert "second signal: stopping at once" in caplog.text
