"""A streaming query whose driver is killed with SIGKILL writes every record once on restart.

The driver runs in a process of its own (``python -m pipeline.topic_to_parquet``: Python
and the JVM it starts, one process group); the test kills the group while a micro-batch is
in flight (its offsets are in the checkpoint, its commit may or may not be), then finishes
the query from the same checkpoint in the layer's session. Spark's file sink lists only
committed batches, so the table must hold each produced (partition, offset) once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

from pipeline.topic_to_parquet import start_query

from .support import Sent, create_topic, produce

START_TIMEOUT_S = 120
GONE_TIMEOUT_S = 30


def wait_for(path: Path, driver: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not path.exists():
        assert driver.poll() is None, f"the driver exited early:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {path} after {START_TIMEOUT_S}s"
        time.sleep(0.02)


def kill_group(driver: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver's process group (Python and its JVM) and wait until it is empty."""
    with contextlib.suppress(ProcessLookupError):  # the group may have exited by itself
        os.killpg(driver.pid, signal.SIGKILL)
    driver.wait(GONE_TIMEOUT_S)
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while True:
        try:
            os.killpg(driver.pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, "the killed driver's JVM is still running"
        time.sleep(0.05)


def test_a_driver_killed_during_a_micro_batch_writes_each_record_once_after_restart(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = "exactly-once"
    create_topic(bootstrap, topic, partitions=3)
    placed = produce(bootstrap, topic, [Sent(partition=i % 3, value=b"%d" % i) for i in range(36)])
    table, checkpoint, log = tmp_path / "table", tmp_path / "checkpoint", tmp_path / "driver.log"
    kill_batch = 1
    # the killed JVM cannot clean its temporary files: keep them in the test's directory
    java_tmp = tmp_path / "driver-tmp"
    java_tmp.mkdir()
    with log.open("wb") as output:
        driver = subprocess.Popen(
            [sys.executable, "-m", "pipeline.topic_to_parquet", "--bootstrap", bootstrap,
             "--topic", topic, "--path", str(table), "--checkpoint", str(checkpoint),
             "--max-offsets-per-trigger", "6",
             "--conf", f"spark.local.dir={java_tmp}",
             "--conf", f"spark.driver.extraJavaOptions=-Djava.io.tmpdir={java_tmp}"],
            stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        # offsets/N is written before batch N runs, commits/N after its sink committed
        wait_for(checkpoint / "offsets" / str(kill_batch), driver, log)
    finally:
        kill_group(driver)
    # batch 0 committed before batch 1 was planned; the last batch never ran
    assert (checkpoint / "commits" / "0").exists()
    assert not (checkpoint / "commits" / str(len(placed) // 6 - 1)).exists(), (
        "the driver finished before it was killed")
    # no limit now: the unfinished batch is replayed over its logged offsets, then one more
    query = start_query(spark, bootstrap=bootstrap, topic=topic, path=str(table),
                        checkpoint=str(checkpoint), available_now=True)
    try:
        assert query.awaitTermination(90), "the restarted query did not finish"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    rows = spark.read.parquet(str(table)).select("partition", "offset", "value").collect()
    got = sorted((row.partition, row.offset, bytes(row.value)) for row in rows)
    assert got == sorted((p, o, b"%d" % i) for i, (p, o) in enumerate(placed))
