"""The Spark pipeline: PySpark jobs that read and write pykraft topics with Spark's own
Kafka connector (``spark_session`` builds the session that brings it).

Jobs are modules run with ``python -m`` (or ``spark-submit``), so they are not imported
here: ``python -m pipeline`` runs the clickstream pipeline (``clickstream_*``: the generator,
the streaming job, the backfill; docs/pipeline.md), and ``pipeline.topic_to_parquet`` streams a
topic into a parquet table exactly once."""

from pipeline.spark_session import (
    CONNECTOR_ARTIFACT,
    SparkSetupError,
    build_spark_session,
    connector_coordinate,
    ivy_cache_dir,
    session_conf,
    submit_arguments,
)

__all__ = [
    "CONNECTOR_ARTIFACT",
    "SparkSetupError",
    "build_spark_session",
    "connector_coordinate",
    "ivy_cache_dir",
    "session_conf",
    "submit_arguments",
]
