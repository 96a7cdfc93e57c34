"""The clickstream stream job submitted with spark-submit to a Spark standalone cluster.

The events are produced here (the generator is the driver-side part that needs pykraft);
the job ships as a zip with ``--py-files`` and runs ``pipeline/__main__.py stream`` with
``availableNow``: executors on the worker, which has no PYTHONPATH. Four JVM starts (about
20 s here), in the layer: the issue's check that users who outgrow one machine can run the
same job on a Spark cluster. (``test_standalone_cluster.py``, the topic-to-parquet job on the
same kind of cluster, runs with ``--standalone``.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pyspark.sql import SparkSession

from pipeline import submit_arguments
from pipeline.clickstream_events import Topics, plan_events
from pipeline.clickstream_generate import ensure_topics, produce_records

from .standalone import SPARK_HOME, python_without_pykraft, spark_env, standalone_cluster
from .support import SHORT_FETCH_WAIT, read_all
from .test_clickstream import (
    BASE_MS,
    MINUTE_MS,
    expected_aggregates,
    last_watermark,
    table_rows,
    valid,
)
from .test_standalone_cluster import ROOT, SUBMIT_TIMEOUT_S, pipeline_zip


def test_spark_submit_runs_the_clickstream_stream_job_on_a_standalone_cluster(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topics = Topics(events="submit-clicks", dead_letters="submit-clicks-dlq",
                    aggregates="submit-clicks-out")
    ensure_topics(bootstrap, topics)
    records = plan_events(90, seed=5, start_ms=BASE_MS, span_ms=5 * MINUTE_MS, malformed=3)
    produce_records(bootstrap, topics.events, records)
    table = tmp_path / "table"
    # the driver's and the executors' Python: pyspark and nothing of pykraft (checked below),
    # no PYTHONPATH: the job runs from what --py-files ships
    python = python_without_pykraft(tmp_path)
    probe = subprocess.run([str(python), "-c", "import broker"], capture_output=True,
                           text=True, env=spark_env(tmp_path), cwd=tmp_path, check=False)
    assert probe.returncode != 0 and "No module named 'broker'" in probe.stderr, probe
    env = {**spark_env(tmp_path), "PYSPARK_PYTHON": str(python)}
    with standalone_cluster(tmp_path) as cluster:
        master = ["--master", cluster.master_url]
        finished = subprocess.run(
            [str(SPARK_HOME / "bin" / "spark-submit"), *master, *submit_arguments(),
             "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
             "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
             "--py-files", str(pipeline_zip(tmp_path / "pipeline.zip")),
             str(ROOT / "pipeline" / "__main__.py"), "stream", *master,
             "--bootstrap", bootstrap, "--events-topic", topics.events,
             "--dead-letter-topic", topics.dead_letters,
             "--aggregates-topic", topics.aggregates,
             "--table", str(table), "--checkpoint", str(tmp_path / "checkpoint"),
             "--available-now", "--conf", f"spark.local.dir={tmp_path}",
             *(f"--source-option={k}={v}" for k, v in SHORT_FETCH_WAIT.items())],
            cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=SUBMIT_TIMEOUT_S, check=False,
        )
        assert finished.returncode == 0, finished.stderr[-3000:]
        # the executor ran on the worker, not in the driver
        (application,) = list(cluster.work_dir.iterdir())
        assert [e.name for e in application.iterdir()] == ["0"]
    want = expected_aggregates(valid(records), last_watermark(records))
    assert table_rows(spark.read.parquet(str(table))) == want
    assert len(read_all(bootstrap, topics.dead_letters, partitions=3)) == 3
    assert len(read_all(bootstrap, topics.aggregates, partitions=3)) == len(want)
