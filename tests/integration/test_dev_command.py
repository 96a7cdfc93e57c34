"""``kraft dev`` (what ``scripts/dev`` runs): controllers and brokers in the foreground until Ctrl-C."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deploy.probes import describe_quorum_at, metrics_at
from quorum.describe import quorum_info_from_response

pytestmark = pytest.mark.timeout(120)

BANNER_END = "Press Ctrl-C to stop."


def wait_for_text(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        output = path.read_text() if path.exists() else ""
        if text in output:
            return output
        assert process.poll() is None, f"kraft dev exited early:\n{output}"
        assert time.monotonic() < deadline, f"no {text!r} after {timeout}s:\n{output}"
        time.sleep(0.05)


def test_kraft_dev_runs_a_quorum_until_ctrl_c_and_then_stops_every_node(tmp_path: Path) -> None:
    out = tmp_path / "dev.out"
    dev = [sys.executable, "-m", "cli", "dev", "--base-port", "0", "--test-profile",
           "--host", "127.0.0.1", "--data-dir", str(tmp_path / "data")]
    # started as a shell without job control starts a background job: SIGINT ignored,
    # so Python installs no KeyboardInterrupt handler and kraft dev must install its own
    command = [sys.executable, "-c", "import os, signal, sys; "
               "signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])",
               *dev]
    with out.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    try:
        banner = wait_for_text(out, BANNER_END, process, 30)
        nodes = re.findall(r"controller (\d) \((leader|voter)\): CONTROLLER://([\d.]+):(\d+)"
                           r"  pid (\d+)", banner)
        assert [int(n[0]) for n in nodes] == [1, 2, 3]
        assert [n[1] for n in nodes].count("leader") == 1
        leader = next(int(n[0]) for n in nodes if n[1] == "leader")
        info = quorum_info_from_response(describe_quorum_at((nodes[leader - 1][2],
                                                             int(nodes[leader - 1][3]))))
        assert info.leader_id == leader
        assert "kraft metadata-quorum --bootstrap-controller 127.0.0.1:" in banner
        brokers = re.findall(r"broker (\d): PLAINTEXT://([\d.]+):(\d+)  pid (\d+)", banner)
        assert [int(b[0]) for b in brokers] == [4, 5, 6]
        assert "kraft topics --bootstrap-controller 127.0.0.1:" in banner
        assert f"kraft topics --bootstrap-server {brokers[0][1]}:{brokers[0][2]} " in banner
        endpoints = re.findall(r"metrics http://([\d.]+):(\d+)/metrics", banner)
        assert len(endpoints) == 6
        scraped = metrics_at((endpoints[0][0], int(endpoints[0][1])))
        assert scraped is not None and scraped["kafka_raft_current_epoch"] >= 1

        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert out.read_text().rstrip().endswith("stopped")
    for _, _, _, _, pid in nodes:
        assert not Path(f"/proc/{pid}").exists(), f"controller pid {pid} outlived kraft dev"
    for _, _, _, pid in brokers:
        assert not Path(f"/proc/{pid}").exists(), f"broker pid {pid} outlived kraft dev"
    # the data stays, formatted with the cluster id the banner named
    first_id = re.search(r"pykraft dev cluster (\S+):", banner)
    assert first_id is not None
    meta = (tmp_path / "data" / "controller-1" / "metadata" / "meta.properties").read_text()
    assert f"cluster.id={first_id[1]}" in meta
