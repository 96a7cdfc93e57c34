"""``kraft dev``'s watch: a node that exits is started again; one that keeps exiting ends the run."""

from __future__ import annotations

import types

import pytest

from cli import dev
from deploy import LaunchError


class _Cluster:
    """A stand-in for LocalCluster: broker 4 exits every time it is started."""

    def __init__(self) -> None:
        self.node_ids = [1]
        self.broker_ids = [4]
        self.layout = {
            1: types.SimpleNamespace(role="controller"), 4: types.SimpleNamespace(role="broker")
        }
        self.started: list[int] = []

    def is_running(self, node_id: int) -> bool:
        return node_id != 4

    def wait_exit(self, node_id: int) -> int:
        return -9

    def log_tail(self, node_id: int) -> str:
        return f"(log of {node_id})"

    def start_node(self, node_id: int, *, wait: bool = True) -> None:
        self.started.append(node_id)


def test_a_node_that_exits_is_started_again_until_it_keeps_exiting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dev.time, "sleep", lambda _s: None)
    cluster = _Cluster()
    with pytest.raises(LaunchError, match="broker 4 keeps exiting"):
        dev._watch(cluster)  # type: ignore[arg-type]
    assert cluster.started == [4] * (dev._MAX_EXITS - 1)
    err = capsys.readouterr().err
    assert "broker 4 exited with status -9" in err and "starting broker 4 again" in err
