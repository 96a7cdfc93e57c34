"""The loop monitor on a real trio loop: a step that holds the thread shows as a stall
(and the warning names its task), an idle loop's stalls are far shorter, and every node process
runs one."""

from __future__ import annotations

import gc
import logging
import re
import time

import attrs
import pytest
import trio

from quorum.metrics import NodeActivity, monitor_loop
from quorum.metrics.step_work import labelled
from quorum.node import NodeAddress
from quorum.node.process import serve_until_signalled

MONITOR_LOGGER = "quorum.metrics.loop_monitor"


def hold_thread(seconds: float) -> None:
    """Keep the thread busy without yielding to trio (what an unbounded step does)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def busy_step(seconds: float) -> None:
    hold_thread(seconds)


def max_stall_ms(activity: NodeActivity) -> float:
    return activity.snapshot(trio.current_time()).max_stall_ms


async def test_a_step_that_holds_the_thread_60_ms_is_a_stall_of_at_least_60_ms() -> None:
    activity = NodeActivity()
    with monitor_loop(activity):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(busy_step, 0.06)
        # the turn that ran the busy step ended before this task was woken
        stall_ms = max_stall_ms(activity)
    assert stall_ms >= 60.0
    assert activity.snapshot(trio.current_time()).max_stall_ms_1m == stall_ms


async def test_an_idle_loop_stalls_far_less_than_a_step_that_holds_the_thread() -> None:
    # compared with a held step rather than a fixed bound: an idle loop's turns are short,
    # but a loaded machine (a collector pass, another process) can stretch one past 50 ms
    idle = NodeActivity()
    with monitor_loop(idle):
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(_sleep_in_small_steps, 20, 0.01)
    held = NodeActivity()
    with monitor_loop(held):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_sleep_in_small_steps, 5, 0.01)
            nursery.start_soon(busy_step, 0.5)
    assert 0.0 < max_stall_ms(idle) < max_stall_ms(held) / 2
    assert max_stall_ms(held) >= 500.0


async def _sleep_in_small_steps(count: int, seconds: float) -> None:
    for _ in range(count):
        await trio.sleep(seconds)


async def test_a_stall_over_the_threshold_is_logged_once_per_interval_naming_the_longest_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=MONITOR_LOGGER)
    activity = NodeActivity()
    with monitor_loop(activity, stall_warn_ms=50.0):
        for _ in range(2):  # the second stall comes within the warning interval
            async with trio.open_nursery() as nursery:
                nursery.start_soon(busy_step, 0.001, name="short-step")
                nursery.start_soon(busy_step, 0.06, name="unbounded-replay")
                nursery.start_soon(busy_step, 0.001, name="another-short-step")
    [line] = [r.getMessage() for r in caplog.records]
    assert "served no I/O for" in line
    assert "in task 'unbounded-replay'" in line


async def labelled_step(seconds: float, kind: str, detail: object) -> None:
    hold_thread(0.005)
    with labelled("input", "a quick one"):
        hold_thread(0.001)
    with labelled(kind, detail):
        hold_thread(seconds)


async def test_the_warning_names_the_work_noted_in_the_longest_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=MONITOR_LOGGER)
    activity = NodeActivity()
    with monitor_loop(activity, stall_warn_ms=50.0):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(labelled_step, 0.001, "replay", None, name="small")
            nursery.start_soon(labelled_step, 0.07, "controller-op", "CreateTopics", name="core")
    # the longest step is kept with its work (what /metrics shows)
    snapshot = activity.snapshot(trio.current_time())
    assert snapshot.max_step_ms >= 70 and "controller-op CreateTopics" in snapshot.max_step_work
    [line] = [r.getMessage() for r in caplog.records]
    assert "in task 'core'" in line
    # the longest noted work of that step, with its share of the step
    found = re.search(r"\((\d+) ms of it controller-op CreateTopics\)", line)
    assert found is not None, line
    assert int(found.group(1)) >= 70


async def test_the_warning_names_an_envelopes_message_and_a_garbage_collection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @attrs.frozen
    class Envelope:
        message: object

    class FetchRequest:
        pass

    caplog.set_level(logging.WARNING, logger=MONITOR_LOGGER)
    with monitor_loop(NodeActivity(), stall_warn_ms=50.0):
        await trio.sleep(0.001)  # (a turn is measured from the end of an I/O wait)
        await labelled_step(0.06, "input", Envelope(FetchRequest()))
        await trio.sleep(0.001)
    [line] = [r.getMessage() for r in caplog.records]
    assert "ms of it input Envelope FetchRequest)" in line
    garbage = [[object()] for _ in range(300_000)]
    with monitor_loop(NodeActivity(), stall_warn_ms=1.0):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_collect_fully)
    del garbage
    assert any("garbage collection of generation 2" in r.getMessage() for r in caplog.records)


async def _collect_fully() -> None:
    gc.collect()


async def test_the_monitor_stops_measuring_when_its_block_ends() -> None:
    activity = NodeActivity()
    with monitor_loop(activity):
        await trio.sleep(0.001)
    before = max_stall_ms(activity)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(busy_step, 0.06)
    await trio.sleep(0.001)
    assert max_stall_ms(activity) == before < 60.0


class BusyNode:
    """A node whose run holds the thread once it has started, then ends."""

    def __init__(self) -> None:
        self.activity = NodeActivity()
        self.stopping = False

    def stop(self) -> None:
        self.stopping = True

    async def run(
        self, *, task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started(NodeAddress("CONTROLLER", "127.0.0.1", 9093))
        await trio.lowlevel.checkpoint()
        hold_thread(0.06)


async def test_a_node_process_measures_its_loop_into_the_nodes_activity() -> None:
    node = BusyNode()
    ready: list[NodeAddress] = []
    await serve_until_signalled(node, ready.append, lifeline=None)
    assert ready == [NodeAddress("CONTROLLER", "127.0.0.1", 9093)]
    assert max_stall_ms(node.activity) >= 60.0


async def test_a_collection_inside_noted_work_is_named_beside_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=MONITOR_LOGGER)
    garbage = [[object()] for _ in range(300_000)]

    async def step_that_collects() -> None:
        with labelled("replica", "assignments"):
            gc.collect()
            hold_thread(0.002)

    with monitor_loop(NodeActivity(), stall_warn_ms=1.0):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(step_that_collects)
    del garbage
    lines = [r.getMessage() for r in caplog.records if "replica assignments" in r.getMessage()]
    assert lines and re.search(r"replica assignments, \d+ ms in garbage collection", lines[0])
