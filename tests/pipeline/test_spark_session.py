"""The SparkSession helper: the connector at pyspark's own version, from the cache outside the repo."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from deploy.cache_dirs import user_cache_root
from pipeline import CONNECTOR_ARTIFACT, connector_coordinate, ivy_cache_dir
from pipeline.spark_session import CACHE_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_pyspark_is_the_pinned_one() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [r for r in project["optional-dependencies"]["pipeline"] if r.startswith("pyspark")]
    assert pin == f"pyspark=={metadata.version('pyspark')}"
    assert pyspark.__version__ == metadata.version("pyspark")


@pytest.mark.parametrize("override", [None, "/somewhere/else"])
def test_the_ivy_cache_follows_the_rule_of_deploy_cache_dirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, override: str | None
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if override is None:
        monkeypatch.delenv(CACHE_ENV, raising=False)
    else:
        monkeypatch.setenv(CACHE_ENV, override)
    assert ivy_cache_dir() == user_cache_root(CACHE_ENV) / "spark-ivy"
    assert not ivy_cache_dir().is_relative_to(ROOT)


def test_the_session_loads_the_connector_of_its_own_spark_release_from_the_cache(
    spark: SparkSession,
) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.version == pyspark.__version__
    assert conf.get("spark.jars.packages") == connector_coordinate() == (
        f"{CONNECTOR_ARTIFACT}:{spark.version}")
    jars = [Path(jar.removeprefix("file://")) for jar in (conf.get("spark.jars") or "").split(",")]
    connector = f"org.apache.spark_spark-sql-kafka-0-10_2.13-{spark.version}.jar"
    assert ivy_cache_dir() / "jars" / connector in jars
    # the Java client the connector runs (3.9.x for Spark 4.0-4.2)
    assert any(jar.name.startswith("org.apache.kafka_kafka-clients-") for jar in jars), jars
    assert conf.get("spark.ui.enabled") == "false"
