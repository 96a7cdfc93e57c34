"""Apache Kafka itself beside pykraft: the pinned release resolved from Maven on demand
(``resolve``), the JVM command lines of its scripts (``jvm``), its tools run unmodified
(``mains``) and the files of a local Kafka cluster (``layout``). The launcher is
``deploy.kafka_cluster.KafkaCluster``; docs/kafka-reference.md says how it is used."""

from deploy.kafka.jvm import PERFORMANCE_OPTS, SERVER_HEAP, TOOL_HEAP, java_program
from deploy.kafka.layout import KafkaClusterSpec, KafkaNode
from deploy.kafka.mains import ToolRun, run_mains, run_tool
from deploy.kafka.resolve import KafkaDistribution, cache_root, pinned_version, resolve_kafka

__all__ = [
    "PERFORMANCE_OPTS",
    "SERVER_HEAP",
    "TOOL_HEAP",
    "KafkaClusterSpec",
    "KafkaDistribution",
    "KafkaNode",
    "ToolRun",
    "cache_root",
    "java_program",
    "pinned_version",
    "resolve_kafka",
    "run_mains",
    "run_tool",
]
