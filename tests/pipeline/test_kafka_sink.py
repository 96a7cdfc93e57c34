"""The connector's Kafka sink is at least once: a retried task writes its rows again (issue 21).

Spark's Kafka sink has no transactions: a task that fails after it handed rows to its producer
is run again and sends them again. The test asserts only what the sink promises, that no row
is lost, and that the retry it relies on happened (the failing attempt's marker)."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

from .standalone import spark_env
from .support import Sent, create_topic, produce, read_all

ROOT = Path(__file__).resolve().parents[2]
JOB_TIMEOUT_S = 180


def test_a_kafka_sink_task_retried_after_a_failure_loses_no_row(
    bootstrap: str, tmp_path: Path
) -> None:
    source, target = "sink-retried-source", "sink-retried-target"
    create_topic(bootstrap, source, partitions=2)
    create_topic(bootstrap, target, partitions=2)
    sent = [Sent(partition=i % 2, value=b"row-%03d" % i, key=b"k%d" % (i % 7)) for i in range(40)]
    produce(bootstrap, source, sent)
    env = {**spark_env(tmp_path), "PYTHONPATH": str(ROOT)}
    finished = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("retried_sink_job.py")), bootstrap,
         source, target, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert list(tmp_path.glob("failed-stage-*")), "no task attempt failed: nothing was retried"
    landed = collections.Counter(r.value for r in read_all(bootstrap, target, partitions=2))
    missing = [r.value for r in sent if landed[r.value] == 0]
    assert missing == [], missing
