"""One SparkSession for the pipeline, with Spark's own Kafka connector at pyspark's version.

Spark's connector (``org.apache.spark:spark-sql-kafka-0-10_2.13``) is not in the pyspark
wheel: Spark resolves it from Maven Central through ``spark.jars.packages`` (Ivy) when the
session's JVM starts. The connector must be the installed pyspark's own release (its Scala
classes are compiled against that Spark), so the coordinate is built from
``pyspark.__version__``, never pinned a second time. ``spark.jars.ivy`` points Ivy at a cache
outside the repo, so the jars are fetched once per machine and reused.

Only the driver imports this module: executors run Spark's JVM code and pyspark, never
pykraft, so a job built here can be handed to ``spark-submit`` with ``submit_arguments()``
(under spark-submit the JVM is already running when Python builds the session, and
``spark.jars.packages`` must be given on the command line instead).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

__all__ = [
    "CONNECTOR_ARTIFACT",
    "SparkSetupError",
    "build_spark_session",
    "connector_coordinate",
    "ivy_cache_dir",
    "session_conf",
    "submit_arguments",
]

CONNECTOR_ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
# ``$PYKRAFT_SPARK_CACHE`` overrides the cache root, as PYKRAFT_KAFKA_CACHE does for Kafka
CACHE_ENV = "PYKRAFT_SPARK_CACHE"


class SparkSetupError(RuntimeError):
    """What is missing to start Spark, with what to run to get it."""


def connector_coordinate(spark_version: str | None = None) -> str:
    """The connector's Maven coordinate at ``spark_version`` (default: the installed pyspark's)."""
    return f"{CONNECTOR_ARTIFACT}:{spark_version or pyspark.__version__}"


def ivy_cache_dir() -> Path:
    """Ivy's directory for the resolved connector: outside the repo, one per user.

    ``$PYKRAFT_SPARK_CACHE/spark-ivy``, else ``${XDG_CACHE_HOME:-~/.cache}/pykraft/spark-ivy``:
    the rule of ``deploy.cache_dirs.user_cache_root``, written again here because pipeline
    must not import deploy (tests/unit/test_layering.py); tests/pipeline checks both agree.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit) / "spark-ivy"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pykraft" / "spark-ivy"


def session_conf(
    *, shuffle_partitions: int = 2, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The session's settings: small and local, loopback only, the connector from the cache."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # a pipeline of a few partitions: Spark's 200 shuffle tasks would be mostly empty
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(shuffle_partitions),
        # bind to loopback: the machine's host name need not resolve
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        # Kafka's timestamps are epoch milliseconds; show them in UTC whatever the machine says
        "spark.sql.session.timeZone": "UTC",
        "spark.jars.packages": connector_coordinate(),
        "spark.jars.ivy": str(ivy_cache_dir()),
    }
    conf.update(extra or {})
    return conf


def submit_arguments() -> list[str]:
    """``spark-submit`` arguments that bring the same connector from the same cache."""
    return ["--packages", connector_coordinate(), "--conf", f"spark.jars.ivy={ivy_cache_dir()}"]


def _check_java() -> None:
    # pyspark's own message for a missing JVM is a bare "Java gateway process exited"
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    raise SparkSetupError("Spark needs a JDK 17 or newer: run scripts/ensure-jdk")


def build_spark_session(
    app_name: str = "pykraft-pipeline",
    *,
    master: str = "local[2]",
    shuffle_partitions: int = 2,
    extra_conf: Mapping[str, str] | None = None,
    log_level: str = "WARN",
) -> SparkSession:
    """A SparkSession (``local[2]``, UI off) that can read and write Kafka topics.

    The first call on a machine resolves the connector and its dependencies (about 60 MB)
    into ``ivy_cache_dir()``; later ones find them there. Returns the active session if
    one exists (``getOrCreate``), as every pyspark program does.
    """
    _check_java()
    if master.startswith("local"):
        # the JVM inherits it: without it Spark picks the first non-loopback interface
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_conf(shuffle_partitions=shuffle_partitions,
                                   extra=extra_conf).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session
