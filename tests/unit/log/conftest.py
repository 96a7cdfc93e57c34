"""Fixtures: each protocol test runs against the file log and the memory log.

``os.fsync`` is replaced by a recorder for every log test: no test here cuts
power, crashes are simulated by cutting files, so real syncs would only make
the layer slow on a loaded CI disk.  Tests that care which descriptors were
synced read the ``fsyncs`` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from quorum.log import FileLog, LogConfig, MemoryLog
from quorum.log.protocol import ReplicatedLog

SMALL_SEGMENTS = LogConfig(segment_bytes=600, index_interval_bytes=128)

LogFactory = Callable[[LogConfig], ReplicatedLog]


@pytest.fixture(autouse=True)
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths (via /proc/self/fd) of every descriptor passed to os.fsync, in order."""
    synced: list[str] = []

    def record(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "fsync", record)
    return synced


@pytest.fixture(params=["file", "memory"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogFactory]:
    opened: list[ReplicatedLog] = []

    def factory(config: LogConfig = SMALL_SEGMENTS) -> ReplicatedLog:
        log: ReplicatedLog
        if request.param == "file":
            log = FileLog(tmp_path / f"topic-{len(opened)}", config)
        else:
            log = MemoryLog(config)
        opened.append(log)
        return log

    yield factory
    for log in opened:
        log.close()


@pytest.fixture
def log(make_log: LogFactory) -> ReplicatedLog:
    return make_log(SMALL_SEGMENTS)
