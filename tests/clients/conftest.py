"""Unmodified third-party Kafka clients against a real cluster (real processes, loopback).

kafka-python, aiokafka and confluent-kafka run in this process; kafkajs runs in Node
(``kafkajs/bridge.js``, the pinned version installed on first use outside the repo by
``kafkajs_install``; node and npm must be on PATH).

One cluster per module: three controllers and three brokers with the shared
short-timeout test profile. Tests create topics of their own names, so they
do not disturb one another. A failing test gets every node's log tail.

The group and kill -9 scenarios (``group_scenarios``) do not all fit the layer's time
budget for every client: each runs by default with the client named for it, and a test
marked ``all_clients`` runs only in the by-hand matrix, ``pytest tests/clients --all-clients``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy import ClusterSpec, LocalCluster
from tests.integration.conftest import _close, _started
from tests.integration.conftest import pytest_runtest_makereport as pytest_runtest_makereport

__all__ = ["bootstrap", "cluster", "pytest_runtest_makereport"]

_ALL_CLIENTS = "--all-clients"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("clients", "third-party clients (tests/clients)").addoption(
        _ALL_CLIENTS, action="store_true", default=False,
        help="every client runs every group and kill -9 scenario (the by-hand matrix)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "all_clients: a scenario this client runs only with --all-clients"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the option exists only when this conftest was loaded before the command line was read
    if config.getoption(_ALL_CLIENTS, default=False):
        return
    skip = pytest.mark.skip(reason=f"the by-hand matrix only: run with {_ALL_CLIENTS}")
    for item in items:
        if item.get_closest_marker("all_clients") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    started = _started(
        tmp_path_factory.mktemp("clients"), ClusterSpec(controllers=3, brokers=3)
    )
    yield started
    _close(started)


@pytest.fixture(scope="module")
def bootstrap(cluster: LocalCluster) -> str:
    """``bootstrap.servers`` for the cluster's brokers."""
    return ",".join(f"{host}:{port}" for host, port in map(cluster.address, cluster.broker_ids))
