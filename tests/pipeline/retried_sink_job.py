"""A batch job whose Kafka-sink task fails once after it sent part of its rows, then is retried.

Run by ``test_kafka_sink.py`` in a process of its own: its SparkSession is ``local[2,4]``
(a failed task is tried again, up to four times; the layer's session, ``local[2]``, never
retries), and a JVM holds one SparkContext. The first attempt of partition 0 raises after its
fifth row, once that row was handed to the sink, and leaves a marker file; the retry writes the
partition again. Arguments: bootstrap, source topic, target topic, marker directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from pipeline import build_spark_session

FAIL_AFTER_ROWS = 5


def main(bootstrap: str, source: str, target: str, markers: Path) -> None:
    seen: dict[tuple[int, int, int], int] = {}

    def fail_once(value: bytes) -> bytes:
        context = TaskContext.get()
        assert context is not None
        key = (context.stageId(), context.partitionId(), context.attemptNumber())
        seen[key] = seen.get(key, 0) + 1
        if key[1] == 0 and key[2] == 0 and seen[key] > FAIL_AFTER_ROWS:
            (markers / f"failed-stage-{key[0]}").touch()
            raise RuntimeError("injected: the first attempt of partition 0 fails")
        return value

    spark = build_spark_session("pykraft-retried-kafka-sink", master="local[2,4]",
                                extra_conf={"spark.local.dir": str(markers / "spark-local")})
    try:
        rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", source).load().coalesce(2))
        through = F.udf(fail_once, BinaryType())
        (rows.select(F.col("key"), through(F.col("value")).alias("value")).write.format("kafka")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", target).save())
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
