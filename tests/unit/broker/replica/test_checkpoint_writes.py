"""High-watermark checkpoints are written one at a time (they share a temporary file)."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Any

import trio
import trio.testing

from broker.replica import ReplicaConfig, ReplicaCore
from broker.replica.driver import ReplicaDriver
from tests.sim.replication.disk import BrokerDisk


async def test_the_last_checkpoint_at_shutdown_waits_for_one_still_in_its_thread() -> None:
    entered = 0
    most_at_once = 0
    inside = 0
    lock = threading.Lock()
    release = threading.Event()
    began = trio.Event()

    def checkpoint(marks: Mapping[Any, int]) -> None:  # in a worker thread
        nonlocal entered, inside, most_at_once
        with lock:
            entered += 1
            inside += 1
            most_at_once = max(most_at_once, inside)
        trio.from_thread.run_sync(began.set)
        release.wait(10)  # the first write is slow (a large file, a slow disk)
        with lock:
            inside -= 1

    core = ReplicaCore(ReplicaConfig(broker_id=1), BrokerDisk(), random.Random(1))
    driver = ReplicaDriver(core, clock_ms=lambda: 0, checkpoint=checkpoint)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(driver._write_checkpoint)  # the periodic one
        with trio.fail_after(10):
            await began.wait()  # its thread has begun the write
        nursery.start_soon(driver._write_checkpoint)  # the last one, at shutdown
        await trio.testing.wait_all_tasks_blocked()
        # the second waits for the first's thread, not in a thread of its own
        assert driver._checkpoint_lock.statistics().tasks_waiting == 1
        assert entered == 1
        release.set()
    assert entered == 2
    assert most_at_once == 1
