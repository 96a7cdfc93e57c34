"""The pipeline's job submitted with spark-submit to a Spark standalone cluster on loopback.

The job (``pipeline/topic_to_parquet.py``) ships as a zip with ``--py-files``; the connector
comes from ``--packages`` (``pipeline.submit_arguments``: the same coordinate and Ivy cache
as the layer's session); the worker's environment has no PYTHONPATH. Four JVM starts:
outside the layer's time budget, run with ``pytest tests/pipeline --standalone``.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline import submit_arguments

from .standalone import SPARK_HOME, spark_env, standalone_cluster
from .support import SHORT_FETCH_WAIT, Sent, create_topic, produce

ROOT = Path(__file__).resolve().parents[2]
SUBMIT_TIMEOUT_S = 180


def pipeline_zip(target: Path) -> Path:
    with zipfile.ZipFile(target, "w") as archive:
        for module in sorted((ROOT / "pipeline").glob("*.py")):
            archive.write(module, f"pipeline/{module.name}")
    return target


@pytest.mark.standalone
def test_spark_submit_on_a_standalone_cluster_streams_a_topic_into_parquet(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "standalone-submit"
    create_topic(bootstrap, topic, partitions=2)
    placed = produce(bootstrap, topic, [Sent(partition=i % 2, value=b"%d" % i) for i in range(20)])
    table = tmp_path / "table"
    with standalone_cluster(tmp_path) as cluster:
        master = ["--master", cluster.master_url]
        finished = subprocess.run(
            [str(SPARK_HOME / "bin" / "spark-submit"), *master, *submit_arguments(),
             "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
             "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
             "--py-files", str(pipeline_zip(tmp_path / "pipeline.zip")),
             str(ROOT / "pipeline" / "topic_to_parquet.py"), *master,
             "--bootstrap", bootstrap, "--topic", topic, "--path", str(table),
             "--checkpoint", str(tmp_path / "checkpoint"), "--available-now",
             "--conf", f"spark.local.dir={tmp_path}",
             *(f"--source-option={k}={v}" for k, v in SHORT_FETCH_WAIT.items())],
            cwd=tmp_path, env=spark_env(tmp_path), capture_output=True, text=True,
            timeout=SUBMIT_TIMEOUT_S, check=False,
        )
        assert finished.returncode == 0, finished.stderr[-3000:]
        # the executor ran on the worker, not in the driver
        (application,) = list(cluster.work_dir.iterdir())
        assert [e.name for e in application.iterdir()] == ["0"]
    rows = spark.read.parquet(str(table)).select("partition", "offset", "value").collect()
    assert sorted((r.partition, r.offset, bytes(r.value)) for r in rows) == sorted(
        (p, o, b"%d" % i) for i, (p, o) in enumerate(placed))
