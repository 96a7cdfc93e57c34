"""What the Spark benches share: the ``--sides`` option and one SparkSession in a scratch dir.

``bench_pipeline`` and ``bench_pipeline_stream`` measure pykraft and Apache Kafka one after
the other (``bench.vs_kafka_sides``) from one SparkSession (``local[2]``), whose scratch files
and every cluster's data live in one temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from bench.vs_kafka_sides import kafka_side, pykraft_side
from pipeline import build_spark_session

__all__ = ["SIDES", "add_sides_option", "chosen_sides", "spark_in_scratch"]

SIDES = {"pykraft": pykraft_side, "kafka": kafka_side}


def add_sides_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sides", default="pykraft,kafka",
                        help=f"comma-separated, of {sorted(SIDES)}")


def chosen_sides(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The sides ``--sides`` names, in its order (an unknown one is a usage error)."""
    names = [n for n in args.sides.split(",") if n]
    unknown = sorted(set(names) - set(SIDES))
    if unknown:
        parser.error(f"unknown sides {unknown}")
    return names


@contextmanager
def spark_in_scratch(app_name: str) -> Iterator[tuple[SparkSession, Path]]:
    """A SparkSession whose local dir is in a fresh scratch directory, and that directory."""
    with tempfile.TemporaryDirectory(prefix=f"{app_name}-") as scratch:
        base = Path(scratch)
        spark = build_spark_session(app_name,
                                    extra_conf={"spark.local.dir": str(base / "spark-local")})
        try:
            yield spark, base
        finally:
            spark.stop()
