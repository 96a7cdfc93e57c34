"""Bad input to Spark's Kafka connector: Spark's own errors, and the cluster unharmed."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from .support import Sent, admin, create_topic, positions, produce

# the driver's Admin asks numRetries times, retryIntervalMs apart (1 s by default)
FAST_RETRIES = {"fetchOffset.numRetries": "1", "fetchOffset.retryIntervalMs": "10"}


def still_serves(spark: SparkSession, bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [Sent(partition=0, value=b"after")])
    assert positions(spark, bootstrap, subscribe=topic) == [(topic, 0, 0)]


def test_an_unknown_topic_gives_sparks_error_and_is_not_created(
    spark: SparkSession, bootstrap: str
) -> None:
    topic = "no-such-topic-here"
    # the driver's Admin.describeTopics fails; Spark passes the Java client's error on as is
    unknown = "UnknownTopicOrPartitionException: This server does not host this topic-partition"
    with pytest.raises(Py4JJavaError, match=unknown):
        positions(spark, bootstrap, subscribe=topic, **FAST_RETRIES)
    with pytest.raises(Py4JJavaError, match=unknown):
        positions(spark, bootstrap, assign=f'{{"{topic}": [0]}}', **FAST_RETRIES)
    with admin(bootstrap) as client:
        assert topic not in client.list_topics()
    still_serves(spark, bootstrap, "after-unknown-topic")


def test_an_unreachable_bootstrap_gives_sparks_error(spark: SparkSession, bootstrap: str) -> None:
    no_node = "TimeoutException: Timed out waiting for a node assignment"
    with pytest.raises(Py4JJavaError, match=no_node):
        # port 1 on loopback: nothing listens there
        positions(spark, "127.0.0.1:1", subscribe="anything", **FAST_RETRIES,
                  **{"kafka.default.api.timeout.ms": "1500", "kafka.request.timeout.ms": "1000"})
    still_serves(spark, bootstrap, "after-unreachable")
