"""The NATS peer's pieces that need no server: finding the program, the cluster's config,
the report, the load processes' result line and the CPU readings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import nats_server
from bench.nats_cluster import NatsNode, render_config
from bench.nats_figures import LatencyFigures, NatsFigures, ThroughputFigures, median_headline
from bench.nats_report import report


def nodes(base: Path) -> list[NatsNode]:
    return [NatsNode(name=f"n{i}", client_port=4000 + i, route_port=5000 + i,
                     monitor_port=6000 + i, directory=base / f"n{i}") for i in (1, 2, 3)]


def test_each_node_routes_to_the_other_two_and_keeps_the_default_durability(
    tmp_path: Path,
) -> None:
    cluster = nodes(tmp_path)

    config = render_config(cluster[0], cluster)

    assert 'listen: "127.0.0.1:4001"' in config
    assert '"nats-route://127.0.0.1:5002", "nats-route://127.0.0.1:5003"' in config
    assert "nats-route://127.0.0.1:5001" not in config
    assert f'store_dir: "{tmp_path / "n1" / "store"}"' in config
    assert "sync" not in config


def test_a_missing_server_fails_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nats_server.shutil, "which", lambda _name: None)

    with pytest.raises(nats_server.NatsServerMissing, match="apt-get install -y nats-server"):
        nats_server.find_nats_server(install=False)


def test_a_missing_server_is_not_installed_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nats_server.shutil, "which", lambda _name: None)
    monkeypatch.setattr(nats_server.os, "geteuid", lambda: 1000)

    with pytest.raises(nats_server.NatsServerMissing, match="not root"):
        nats_server.find_nats_server(install=True)


def figures(scale: float) -> NatsFigures:
    cpu = {"load-1": 30.0 * scale, "leader": 60.0, "follower-1": 30.0, "follower-2": 30.0}
    publish = tuple(
        ThroughputFigures(processes=1, window=w, messages=1000, seconds=1.0,
                          mb_per_s=10.0 * scale * (i + 1), cpu_percent=cpu,
                          machine_busy_percent=90.0)
        for i, w in enumerate((64, 512)))
    return NatsFigures(
        server_version="2.9.10", client="nats-py 2.16.0", nodes=3, replicas=3,
        durability="no fsync", connect_to="leader", message_bytes=1024, publish=publish,
        latency=LatencyFigures(messages=100, ack_p50_ms=0.3 * scale, ack_p99_ms=0.7,
                               delivery_p50_ms=0.4, delivery_p99_ms=0.9, cpu_percent=cpu,
                               machine_busy_percent=50.0),
        consume=ThroughputFigures(processes=2, window=0, messages=3000, seconds=1.0,
                                  mb_per_s=100.0 * scale, cpu_percent=cpu,
                                  machine_busy_percent=95.0),
        server_pids=(1, 2, 3))


def test_the_report_shows_the_median_and_range_of_the_runs_and_one_json_line() -> None:
    lines: list[str] = []

    report([figures(1.0), figures(3.0), figures(2.0)], out=lines.append)

    text = "\n".join(lines)
    assert "| publish MB/s, 64 acks outstanding per process, 1 processes | 20.0 [10.0-30.0] |" \
        in text
    assert "| consume MB/s, whole stream, 2 processes | 200.0 [100.0-300.0] |" in text
    assert "| publish -> ack latency p50 (ms), one at a time | 0.60 [0.30-0.90] |" in text
    cores = os.cpu_count() or 1
    assert f"| consume | 60 | 60 | 30 | 30 | 180 | {round(95 * cores)} |" in text
    summary = json.loads(lines[-1])
    assert summary["median"]["publish_mb_per_s_w512"] == pytest.approx(40.0)
    assert len(summary["runs"]) == 3


def test_each_headline_figure_is_the_median_of_its_own_over_the_runs() -> None:
    medians = median_headline([figures(1.0), figures(3.0), figures(2.0)])

    assert set(medians) == {"publish_mb_per_s_w64", "publish_mb_per_s_w512", "ack_p50_ms",
                            "ack_p99_ms", "delivery_p50_ms", "delivery_p99_ms",
                            "consume_mb_per_s"}
    assert medians["publish_mb_per_s_w64"] == pytest.approx(20.0)
    assert medians["ack_p50_ms"] == pytest.approx(0.6)
    assert medians["consume_mb_per_s"] == pytest.approx(200.0)
    with pytest.raises(ValueError):
        median_headline([])


def test_cpu_readings_come_from_proc() -> None:
    phases = pytest.importorskip("bench.nats_phases", reason="nats-py is not installed")
    sum(i * i for i in range(200_000))  # some CPU of our own

    assert phases.cpu_seconds(os.getpid()) > 0
    busy, total = phases.machine_busy_s()
    assert 0 < busy < total


@pytest.mark.parametrize("argv", [["--runs", "0"], ["--windows", "64,x"], ["--windows", "0"],
                                  ["--size", "-1"]])
def test_the_command_refuses_counts_below_one_before_starting_anything(
    argv: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    peer = pytest.importorskip("bench.nats_peer", reason="nats-py is not installed")

    with pytest.raises(SystemExit) as exit_:
        peer.main(argv)

    assert exit_.value.code == 2
    assert argv[0] in capsys.readouterr().err
