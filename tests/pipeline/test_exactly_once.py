"""A streaming query whose driver is killed with SIGKILL, at seeded points, writes every record
once to its file sink after restarts.

The driver runs in a process of its own (``python -m pipeline.topic_to_parquet``: Python
and the JVM it starts, one process group). A seed picks a plan: the three kill points below
in some order, each at some micro-batch. Each kill ends one driver; the next driver starts
from the same checkpoint; after the last kill the query finishes in the layer's session.
Spark's file sink lists only committed batches, so the table must hold each produced
(partition, offset) once, whatever the plan.

The points, for batch N (Spark writes ``offsets/N`` before the batch runs, the sink's
``_spark_metadata/N`` when its files are written, ``commits/N`` after that):

* between micro-batches: ``commits/N`` written, ``offsets/N+1`` not;
* while a batch reads: ``offsets/N`` written, ``commits/N`` not;
* after the sink wrote its files, before the commit: ``_spark_metadata/N`` written,
  ``commits/N`` not.

The windows last milliseconds, too short to hit by watching files. So the test first puts an
empty directory where Spark's next write would go (``offsets/N+1`` or ``commits/N``): Spark's
log refuses to write a batch whose path exists, the driver stops there, and the kill lands in
the window every time. The blocker is made only after the driver planned a batch of its own
(Spark reads its logs at start, and would trip over a directory then), and removed before the
next driver starts. One seed by default; ``--exactly-once-seeds N`` runs seeds 1..N.
"""

from __future__ import annotations

import contextlib
import enum
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from pyspark.sql import SparkSession

from deploy.waiting import wait_until
from pipeline.topic_to_parquet import start_query

from .conftest import SEEDS_OPTION
from .support import Sent, create_topic, produce

START_TIMEOUT_S = 120
GONE_TIMEOUT_S = 30
RECORDS, PER_BATCH = 48, 6  # 8 micro-batches of 6 when the driver is not stopped


class KillPoint(enum.Enum):
    BETWEEN_BATCHES = "between-batches"
    WHILE_READING = "while-reading"
    AFTER_SINK_WROTE = "after-sink-wrote"


@attrs.frozen
class Kill:
    point: KillPoint
    batch: int


def kill_plan(seed: int) -> list[Kill]:
    """Every kill point once, in a seeded order, at seeded, increasing batches.

    Each kill's batch is one the driver plans itself (after a kill at N, the next driver
    replays N or starts at N+1): the blocker must not exist when a driver reads its logs.
    Batches stay below 6, so a batch N+1 always exists to block."""
    rng = random.Random(seed)
    batch = rng.randint(0, 1)
    plan = []
    for point in rng.sample(list(KillPoint), len(KillPoint)):
        plan.append(Kill(point, batch))
        batch += rng.randint(1, 2)
    return plan


def test_kill_plans_cover_every_point_once_at_increasing_batches() -> None:
    for seed in range(50):
        plan = kill_plan(seed)
        assert sorted(k.point.value for k in plan) == sorted(p.value for p in KillPoint)
        batches = [k.batch for k in plan]
        assert batches == sorted(set(batches)) and batches[-1] + 1 < RECORDS // PER_BATCH


def wait_for(path: Path, driver: subprocess.Popen[bytes], log: Path) -> None:
    def written() -> bool:
        if path.exists():
            return True
        # a driver stopped by a blocker exits after writing what it could: look once more
        exited = driver.poll() is not None and not path.exists()
        assert not exited, f"the driver exited early:\n{log.read_text()[-3000:]}"
        return False

    # polled often: the kill lands while the batch is still at the point it names
    wait_until(written, str(path), START_TIMEOUT_S, poll_s=0.005)


def kill_group(driver: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver's process group (Python and its JVM) and wait until it is empty."""
    with contextlib.suppress(ProcessLookupError):  # the group may have exited by itself
        os.killpg(driver.pid, signal.SIGKILL)
    driver.wait(GONE_TIMEOUT_S)

    def group_gone() -> bool:
        try:
            os.killpg(driver.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(group_gone, "the killed driver's JVM to end", GONE_TIMEOUT_S)


@attrs.frozen
class Run:
    bootstrap: str
    topic: str
    table: Path
    checkpoint: Path
    scratch: Path

    def start_driver(self, log: Path) -> subprocess.Popen[bytes]:
        # the killed JVM cannot clean its temporary files: keep them in the test's directory
        java_tmp = self.scratch / "driver-tmp"
        java_tmp.mkdir(exist_ok=True)
        with log.open("wb") as output:
            return subprocess.Popen(
                [sys.executable, "-m", "pipeline.topic_to_parquet", "--bootstrap", self.bootstrap,
                 "--topic", self.topic, "--path", str(self.table),
                 "--checkpoint", str(self.checkpoint),
                 "--max-offsets-per-trigger", str(PER_BATCH),
                 "--conf", f"spark.local.dir={java_tmp}",
                 "--conf", f"spark.driver.extraJavaOptions=-Djava.io.tmpdir={java_tmp}"],
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def log_file(self, log: str, batch: int) -> Path:
        return self.checkpoint / log / str(batch)

    def sink_file(self, batch: int) -> Path:
        return self.table / "_spark_metadata" / str(batch)

    def kill_at(self, kill: Kill, log: Path) -> None:
        """One driver, killed at ``kill``; the checkpoint left as the kill left it."""
        n = kill.batch
        blocker = (self.log_file("offsets", n + 1) if kill.point is KillPoint.BETWEEN_BATCHES
                   else self.log_file("commits", n))
        driver = self.start_driver(log)
        try:
            # offsets/N: batch N is planned by this driver, whose logs are read by now
            wait_for(self.log_file("offsets", n), driver, log)
            blocker.mkdir()
            if kill.point is KillPoint.BETWEEN_BATCHES:
                wait_for(self.log_file("commits", n), driver, log)
            elif kill.point is KillPoint.AFTER_SINK_WROTE:
                wait_for(self.sink_file(n), driver, log)
        finally:
            kill_group(driver)
        # the blocker is still empty: Spark never wrote past the kill point
        blocker.rmdir()
        if kill.point is KillPoint.BETWEEN_BATCHES:
            assert self.log_file("commits", n).is_file()
        else:
            assert not self.log_file("commits", n).exists()
        if kill.point is KillPoint.AFTER_SINK_WROTE:
            assert self.sink_file(n).is_file()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Seeds 1..N from ``--exactly-once-seeds N`` (default 1)."""
    if "seed" in metafunc.fixturenames:
        count = int(metafunc.config.getoption(SEEDS_OPTION, default=1))
        metafunc.parametrize("seed", range(1, count + 1), ids=lambda s: f"seed={s}")


def test_a_driver_killed_at_seeded_points_writes_each_record_once_after_restarts(
    spark: SparkSession, bootstrap: str, tmp_path: Path, seed: int
) -> None:
    topic = f"exactly-once-{seed}"
    create_topic(bootstrap, topic, partitions=3)
    placed = produce(bootstrap, topic,
                     [Sent(partition=i % 3, value=b"%d" % i) for i in range(RECORDS)])
    run = Run(bootstrap=bootstrap, topic=topic, table=tmp_path / "table",
              checkpoint=tmp_path / "checkpoint", scratch=tmp_path)
    plan = kill_plan(seed)
    for number, kill in enumerate(plan):
        run.kill_at(kill, tmp_path / f"driver-{number}.log")
    # no limit now: an unfinished batch is replayed over its logged offsets, then the rest
    query = start_query(spark, bootstrap=bootstrap, topic=topic, path=str(run.table),
                        checkpoint=str(run.checkpoint), available_now=True)
    try:
        assert query.awaitTermination(90), "the restarted query did not finish"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    rows = spark.read.parquet(str(run.table)).select("partition", "offset", "value").collect()
    got = sorted((row.partition, row.offset, bytes(row.value)) for row in rows)
    assert got == sorted((p, o, b"%d" % i) for i, (p, o) in enumerate(placed)), plan
