"""Stream a Kafka topic into a parquet table, each record exactly once.

Exactly once comes from Spark, not from us: the Kafka source's offsets are written to the
checkpoint before a micro-batch runs, and the file sink lists a batch's files in its
``_spark_metadata`` log only when the batch commits. A driver killed at any point and
restarted with the same checkpoint replays the unfinished batch over the same offsets;
readers of the table (``spark.read.parquet(path)``) see only committed files.

    python -m pipeline.topic_to_parquet --bootstrap HOST:PORT --topic T --path DIR \\
        --checkpoint DIR [--max-offsets-per-trigger N] [--available-now] [--conf K=V ...] \\
        [--source-option K=V ...]

Executors need pyspark only: the job is Spark's own connector and file sink.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.spark_session import build_spark_session

__all__ = ["COLUMNS", "main", "start_query"]

# what the table keeps of each record: where it came from, so duplicates would show
COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


def start_query(
    spark: SparkSession,
    *,
    bootstrap: str,
    topic: str,
    path: str,
    checkpoint: str,
    max_offsets_per_trigger: int | None = None,
    available_now: bool = False,
    source_options: Mapping[str, str] | None = None,
) -> StreamingQuery:
    """Start the query: from the topic's earliest offsets on a first run, else the checkpoint's."""
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    for key, value in (source_options or {}).items():
        reader = reader.option(key, value)
    writer = (reader.load().select(*COLUMNS).writeStream.format("parquet")
              .option("path", path).option("checkpointLocation", checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline.topic_to_parquet",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True, help="kafka.bootstrap.servers")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--path", required=True, help="the parquet table's directory")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint directory")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument("--available-now", action="store_true",
                        help="read what is there, then stop (default: run until killed)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--conf", type=_conf_pair, action="append", default=[],
                        help="a Spark setting KEY=VALUE (repeatable)")
    parser.add_argument("--source-option", type=_conf_pair, action="append", default=[],
                        help="a Kafka source option KEY=VALUE, e.g. kafka.security.protocol=SSL "
                             "(repeatable)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    spark = build_spark_session("pykraft-topic-to-parquet", master=args.master,
                                extra_conf=dict(args.conf))
    query = start_query(spark, bootstrap=args.bootstrap, topic=args.topic, path=args.path,
                        checkpoint=args.checkpoint,
                        max_offsets_per_trigger=args.max_offsets_per_trigger,
                        available_now=args.available_now,
                        source_options=dict(args.source_option))
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
