"""The pipeline layer: Spark's own Kafka connector against a real pykraft cluster (issue 21).

One pykraft cluster (one controller and three brokers, the shared short-timeout test
profile) and one SparkSession (``local[2]``, UI off, the connector resolved by Ivy into the
cache outside the repo) for the whole layer: a JVM start and a cluster start each cost
seconds on a 2-core machine. Tests create topics of their own names. A failing test gets
every node's log tail.

The spark-submit test on a Spark standalone cluster (a master, a worker, the driver and an
executor: four JVM starts, about 20 s here) is outside the layer's budget and runs with
``pytest tests/pipeline --standalone``.

pyspark is not in pykraft's default install: ``scripts/ensure-pyspark`` installs the pinned
release (pyproject's ``pipeline`` extra) and ``scripts/test pipeline`` runs it first. A
machine without it fails here, never skips: a layer that tests nothing must not look green.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from deploy import ClusterSpec, LocalCluster
from pipeline import build_spark_session
from tests.integration.conftest import _close, _started
from tests.integration.conftest import pytest_runtest_makereport as pytest_runtest_makereport

__all__ = [
    "SEEDS_OPTION",
    "bootstrap",
    "cluster",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_makereport",
    "spark",
]


_STANDALONE = "--standalone"
SEEDS_OPTION = "--exactly-once-seeds"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("pipeline", "the Spark pipeline (tests/pipeline)").addoption(
        _STANDALONE, action="store_true", default=False,
        help="also submit the job to a Spark standalone cluster (three more JVMs, ~20 s)",
    )
    parser.getgroup("pipeline").addoption(
        SEEDS_OPTION, type=int, default=1, metavar="N",
        help="kill the exactly-once test's driver by the plans of seeds 1..N (default 1; "
             "three driver JVMs each)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "standalone: runs only with --standalone (a Spark master and worker)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the option exists only when this conftest was loaded before the command line was read
    if config.getoption(_STANDALONE, default=False):
        return
    skip = pytest.mark.skip(reason=f"outside the layer's time budget: run with {_STANDALONE}")
    for item in items:
        if item.get_closest_marker("standalone") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One controller and three brokers: RF-3 topics, leaders spread over three brokers."""
    started = _started(tmp_path_factory.mktemp("pipeline"), ClusterSpec(controllers=1, brokers=3))
    yield started
    _close(started)


@pytest.fixture(scope="session")
def bootstrap(cluster: LocalCluster) -> str:
    """``kafka.bootstrap.servers`` for the cluster's brokers."""
    return ",".join(f"{host}:{port}" for host, port in map(cluster.address, cluster.broker_ids))


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[SparkSession]:
    """The layer's one SparkSession; Spark's scratch files in the test's temporary dir.

    It asks for ``cluster`` only to be stopped before it: the connector's cached producers
    would otherwise try to reach brokers that are gone."""
    local_dir = tmp_path_factory.mktemp("spark-local")
    session = build_spark_session(
        "pykraft-pipeline-tests", extra_conf={"spark.local.dir": str(local_dir)}
    )
    yield session
    session.stop()
