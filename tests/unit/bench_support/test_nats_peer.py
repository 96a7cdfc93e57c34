"""The NATS peer of the data-plane bench end to end, with tiny counts: three real nats-server
processes, real nats-py load processes, every phase measured, nothing left running."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest

pytest.importorskip("nats", reason="nats-py is not installed (the bench extra)")

from bench.nats_peer import NatsWorkload, run_nats_peer
from bench.nats_server import NatsServerMissing, find_nats_server

try:
    find_nats_server(install=False)
    MISSING = ""
except NatsServerMissing as exc:
    MISSING = str(exc)

# about 2 s on a 2-core machine, so it stays in the unit layer (not marked slow)
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=MISSING),
    pytest.mark.timeout(120),
]

WORKLOAD = NatsWorkload(
    windows=(8, 32), publish_processes=2, publish_messages=200, publish_seconds=10,
    publish_warmup=10, latency_messages=30, latency_warmup=5, consume_processes=2,
)


def child_pids() -> list[int]:
    """Processes whose parent is this one (zombies included: they were not reaped)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        if int(text[text.rindex(")") + 2:].split()[1]) == os.getpid():
            children.append(int(stat.parent.name))
    return children


def is_nats_server(pid: int) -> bool:
    """Whether ``pid`` is a running nats-server (a reaped server's PID may already name
    another program on a busy machine)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no such process
        return False
    return b"nats-server" in command


def test_a_tiny_run_measures_every_figure_and_leaves_no_process_or_file(
    tmp_path: Path,
) -> None:
    figures = run_nats_peer(attrs.evolve(WORKLOAD, base_dir=tmp_path))

    assert all(value > 0 for value in figures.headline().values()), figures.headline()
    assert [p.window for p in figures.publish] == [8, 32]
    assert all(p.messages == 2 * 200 for p in figures.publish)
    assert figures.latency.messages == 30
    # everything published, warm-ups included, is read back
    published = 2 * (2 * (200 + 10)) + 5 + 30
    assert figures.consume.messages == published
    assert figures.server_version and figures.replicas == 3
    assert not any(is_nats_server(pid) for pid in figures.server_pids)
    assert child_pids() == []
    assert list(tmp_path.iterdir()) == []

