"""The Java client (the pinned kafka-clients) at its defaults against pykraft.

``ClientRoundTrip.java`` runs each case in one JVM: Admin creates the case's topic, a
default producer (idempotent, acks=all) plus the case's settings writes the records, and a
group-less consumer (assign + seek) reads them back, checking count, order, keys and
values. Without idempotence the round trip must pass; at the defaults it may fail only for
the named reason below, until issue 19 lands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from deploy.kafka import KafkaDistribution

from .support import JavaRun, run_java

COUNT: Final = 500
_RUN_S: Final = 240.0
# topic -> the producer settings of its case
CASES: Final = {"java-plain": ("enable.idempotence=false",), "java-defaults": ()}


@pytest.fixture(scope="module")
def round_trips(kafka_distribution: KafkaDistribution, tools_log_config: Path,
                pykraft_bootstrap: str) -> JavaRun:
    cases = [",".join((topic, *settings)) for topic, settings in CASES.items()]
    return run_java(kafka_distribution, tools_log_config, "ClientRoundTrip.java",
                    [pykraft_bootstrap, str(COUNT), *cases], timeout=_RUN_S)


def outcome(run: JavaRun, topic: str) -> tuple[list[str], str]:
    """The case's progress lines and its outcome line (without the topic prefix)."""
    assert run.exit_code == 0, run.explain()
    mine = [line.removeprefix(f"{topic}: ") for line in run.stdout.splitlines()
            if line.startswith(f"{topic}: ")]
    assert mine, run.explain()
    return mine[:-1], mine[-1]


def test_the_java_client_round_trip_without_idempotence(round_trips: JavaRun) -> None:
    progress, result = outcome(round_trips, "java-plain")
    assert result == "OK", round_trips.explain()
    assert progress == [f"produced {COUNT}", f"consumed {COUNT}"]


def test_the_java_client_round_trip_at_its_defaults(round_trips: JavaRun) -> None:
    progress, result = outcome(round_trips, "java-defaults")
    assert result == "OK", round_trips.explain()
    assert progress == [f"produced {COUNT}", f"consumed {COUNT}"]
