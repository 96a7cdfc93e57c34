"""The sample deployment in deploy/ runs as written: its six .properties files
(3 controllers, 3 brokers) formatted with one cluster id and started with
``kraft server-start`` form a cluster that Kafka's tools reach through a broker,
and SIGTERM (what deploy/systemd/pykraft@.service sends) stops every node
cleanly.

The only change made to the files is their host: ``localhost`` becomes a
loopback address of this test's own, so the fixed ports cannot meet a
``kraft dev`` or another test on this machine. Relative directories land in
the test's working directory, as they would in the unit's WorkingDirectory.
"""

from __future__ import annotations

import configparser
import os
import random
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from deploy.waiting import wait_until
from tests.integration.test_topics_cli import kraft

_ROOT: Final = Path(__file__).resolve().parents[2]
_SAMPLES: Final = _ROOT / "deploy" / "config"
_UNIT: Final = _ROOT / "deploy" / "systemd" / "pykraft@.service"
_CONTROLLERS: Final = ("controller-1", "controller-2", "controller-3")
_BROKERS: Final = ("broker-4", "broker-5", "broker-6")
_DEADLINE_S: Final = 30.0


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """The six sample nodes, formatted and started in ``tmp_path``; killed at teardown."""
    host = f"127.{random.randrange(64, 250)}.{random.randrange(1, 250)}.1"
    for name in _CONTROLLERS + _BROKERS:
        text = (_SAMPLES / f"{name}.properties").read_text()
        (tmp_path / f"{name}.properties").write_text(text.replace("localhost", host))
    env = dict(os.environ, PYTHONPATH=str(_ROOT))
    cluster_id = kraft("storage", "random-uuid").stdout.strip()
    for name in _CONTROLLERS + _BROKERS:
        done = subprocess.run(
            [sys.executable, "-m", "cli", "storage", "format", "-c", f"{name}.properties",
             "-t", cluster_id],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 0, done.stderr
    processes: dict[str, subprocess.Popen[str]] = {}
    try:
        for name in _CONTROLLERS + _BROKERS:
            with (tmp_path / f"{name}.log").open("w") as log:  # the child keeps its copy
                processes[name] = subprocess.Popen(
                    [sys.executable, "-m", "cli", "server-start", f"{name}.properties",
                     "--test-profile"],
                    cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                )
        yield processes
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        for name in processes:
            # shown by pytest only when the test failed
            print(f"--- {name}.log ---\n{(tmp_path / f'{name}.log').read_text()[-3000:]}")


def _address(name: str, tmp_path: Path) -> str:
    text = (tmp_path / f"{name}.properties").read_text()
    match = re.search(r"^listeners=\w+://(.+)$", text, re.MULTILINE)
    assert match is not None
    return match[1]


def test_the_sample_cluster_runs_and_stops_cleanly_on_sigterm(
    deployment: dict[str, subprocess.Popen[str]], tmp_path: Path,
) -> None:
    broker = _address("broker-4", tmp_path)

    def observed() -> dict[str, str] | None:
        done = kraft("metadata-quorum", "--bootstrap-server", broker, "describe", "--status")
        if done.returncode != 0:
            return None
        rows = dict(line.split(":", 1) for line in done.stdout.splitlines())
        observers = sorted(int(i) for i in re.findall(r'"id": (\d+)', rows["CurrentObservers"]))
        return rows if observers == [4, 5, 6] else None

    status = wait_until(observed, "three brokers observing the quorum, told through broker 4",
                        _DEADLINE_S)
    assert sorted(int(i) for i in re.findall(r'"id": (\d+)', status["CurrentVoters"])) == [1, 2, 3]

    # replication factor 3 needs all three brokers registered and unfenced
    def created() -> str | None:
        done = kraft("topics", "--bootstrap-server", broker, "--create", "--topic", "orders",
                     "--partitions", "3", "--replication-factor", "3")
        return done.stdout if done.returncode == 0 else None

    assert wait_until(created, "orders created through a broker",
                      _DEADLINE_S) == "Created topic orders.\n"

    # the unit's stop: SIGTERM, brokers first (controlled shutdown), then controllers
    for name in _BROKERS + _CONTROLLERS:
        process = deployment[name]
        assert process.poll() is None, f"{name} exited early with {process.returncode}"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=_DEADLINE_S) == 0, f"{name} did not exit cleanly"


def test_the_systemd_unit_starts_kraft_server_start_on_the_instances_config() -> None:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(_UNIT.read_text())
    service = unit["Service"]
    program, *args = shlex.split(service["ExecStart"])
    assert Path(program).name == "kraft"
    assert args == ["server-start", "/etc/pykraft/%i.properties"]
    assert service["KillSignal"] == "SIGTERM"
    assert service["Restart"] == "on-failure"
    # the console script the unit runs is the one pyproject installs
    assert re.search(r'^kraft = "cli\.main:', (_ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    # every sample config has the name of an instance: pykraft@<name>
    assert {p.stem for p in _SAMPLES.glob("*.properties")} >= set(_CONTROLLERS + _BROKERS)
