"""Real controller processes on loopback, started by ``deploy.LocalCluster``.

Every cluster here runs the shared short-timeout test profile. A failing
test gets the tail of every node's log of every cluster still running
attached to its report; every process is killed and reaped at teardown.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from deploy import ClusterSpec, LocalCluster
from tests.integration.checks import StartCluster

_LIVE: list[LocalCluster] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for cluster in _LIVE:
            report.sections.append((f"node logs of {cluster.base_dir}", cluster.log_tails(40)))
    return report


def _started(base_dir: Path, spec: ClusterSpec) -> LocalCluster:
    cluster = LocalCluster(base_dir, spec)
    _LIVE.append(cluster)
    try:
        cluster.start()
    except BaseException:
        _close(cluster)
        raise
    return cluster


def _close(cluster: LocalCluster) -> None:
    cluster.close()
    if cluster in _LIVE:
        _LIVE.remove(cluster)


@pytest.fixture
def start_cluster(tmp_path: Path) -> Iterator[StartCluster]:
    """``start_cluster(controllers=3, link_proxies=False, ...)``: a running cluster
    (``ClusterSpec`` fields as keywords), closed when the test ends."""
    started: list[LocalCluster] = []

    def start(**spec_fields: object) -> LocalCluster:
        base = tmp_path / f"cluster-{len(started) + 1}"
        cluster = _started(base, ClusterSpec(**spec_fields))  # type: ignore[arg-type]
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        _close(cluster)


@pytest.fixture(scope="module")
def quiet_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three controllers shared by a module whose tests must not disturb them."""
    cluster = _started(tmp_path_factory.mktemp("quiet"), ClusterSpec(controllers=3))
    yield cluster
    _close(cluster)
