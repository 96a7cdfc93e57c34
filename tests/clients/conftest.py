"""Unmodified third-party Kafka clients against a real cluster (real processes, loopback).

One cluster per module: three controllers and three brokers with the shared
short-timeout test profile. Tests create topics of their own names, so they
do not disturb one another. A failing test gets every node's log tail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy import ClusterSpec, LocalCluster
from tests.integration.conftest import _close, _started
from tests.integration.conftest import pytest_runtest_makereport as pytest_runtest_makereport

__all__ = ["bootstrap", "cluster", "pytest_runtest_makereport"]


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
