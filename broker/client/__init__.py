"""The pykraft client library: produce, consume and administer a pykraft (or Kafka) cluster.

Kafka's concepts, setting names and defaults (``bootstrap.servers``, ``acks``,
``linger.ms``, ``auto.offset.reset``...), in three layers:

* **sans-I/O cores**, which take ``now_ms`` and messages and return what to
  do: ``settings`` (Kafka-style properties to typed settings), ``cluster``
  (the metadata view and when to refresh it), ``accumulator`` and
  ``produce_core`` (batching, per-broker requests, retry decisions),
  ``idempotence`` (producer id, epoch and sequences of the idempotent producer),
  ``positions``, ``fetch_core``, ``fetch_records`` and ``columns`` (fetch
  positions, resets, KIP-320 validation, reading fetched batches),
  ``leader_epochs`` (OffsetForLeaderEpoch as a consumer asks it), the
  admin's ``admin_requests``, ``partitioner`` (murmur2, sticky), and for
  consumer groups ``group_core`` (membership), ``consumer_protocol``
  (subscription and assignment bytes), ``assignors`` and
  ``sticky_assignor`` (range, roundrobin, cooperative-sticky) and
  ``group_requests``;
* **trio shells**: ``Producer`` (with ``init_producer_id``), ``Consumer`` (with
  ``group_member`` for a group) and ``Admin`` (with ``admin_groups``) over
  ``network`` (one connection per broker, metadata refreshes) and
  ``group_calls`` (requests to a group's coordinator);
* **blocking front-ends**: ``BlockingProducer``, ``BlockingConsumer`` and
  ``BlockingAdmin``, each running its trio client in a thread of its own.

Unit tests (``tests/unit/broker/client/``) cover every core, the trio
producer and consumer and the blocking front-ends against a fake data plane
on loopback sockets (``fake_broker.py``: a test double, no replication, no
OffsetForLeaderEpoch), and the admin calls that need no data plane against
a real controller and broker. The group cores (membership, assignors,
consumer protocol) are tested directly; the group shells against a real
cluster in ``tests/integration/test_client_groups.py``.

End-to-end tests with the real data plane (brokers serving Produce, Fetch,
ListOffsets, OffsetForLeaderEpoch, DeleteRecords and DescribeLogDirs) come
when it lands; they should cover, against a 3-controller + 3-broker cluster
with the short-timeout profile:

* produce with acks 0, 1 and all (every future resolved; offsets contiguous
  per partition for acks 1/all, -1 for acks 0), keys landing where
  murmur2 says, headers and timestamps read back intact, compression
  (gzip, and snappy/lz4/zstd where installed);
* consume with assign + seek, ``seek_to_beginning``/``seek_to_end``,
  ``auto.offset.reset`` earliest/latest/none after an out-of-range seek,
  ``end_offsets``/``beginning_offsets``/``offsets_for_times`` against what
  was produced, ``poll_batches`` and columns equal to ``poll``'s records;
* a partition leader killed while producing with acks=all and min ISR 2 and
  ``max.in.flight.requests.per.connection`` 1: every acknowledged record
  read back in order (duplicates allowed, no gaps), the producer's retries
  and the consumer's metadata refresh and OffsetForLeaderEpoch validation
  seen; a diverged follower's old position truncated;
* NOT_ENOUGH_REPLICAS with the ISR below min ISR failing acks=all sends
  after ``delivery.timeout.ms``; MESSAGE_TOO_LARGE past the topic's
  ``max.message.bytes`` (a batch split, then a lone record failing);
* admin: ``delete_records`` moving the log start (``beginning_offsets``
  follows), ``describe_log_dirs`` sizes growing as records arrive,
  ``describe_configs`` of a broker answered by that broker,
  ``elect_leaders`` and reassignments moving data;
* the blocking front-ends doing the same from plain threads, the console
  tools and the Spark source built on them.
"""

from broker.client.accumulator import (
    ProducerBatch,
    ProducerIdAndEpoch,
    ReadyCheck,
    RecordAccumulator,
    record_size,
)
from broker.client.admin import Admin
from broker.client.admin_groups import ConsumerGroupDescription, GroupListing, MemberDescription
from broker.client.admin_types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ElectionType,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    OpType,
    PartitionDescription,
    PartitionReassignment,
    ReplicaLogInfo,
    ResourceType,
    TopicDescription,
)
from broker.client.assignors import RangeAssignor, RebalanceProtocol, RoundRobinAssignor
from broker.client.backoff import ExponentialBackoff
from broker.client.blocking import (
    BlockingConsumer,
    BlockingProducer,
    BlockingRebalanceListener,
)
from broker.client.blocking_admin import BlockingAdmin
from broker.client.cluster import (
    STALE_METADATA_ERRORS,
    BrokerInfo,
    ClusterView,
    MetadataTracker,
    PartitionInfo,
    TopicInfo,
    cluster_view_from_metadata,
)
from broker.client.columns import RecordColumns, decode_columns
from broker.client.consumer import Consumer
from broker.client.errors import (
    ClientClosedError,
    CommitFailedError,
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from broker.client.fetch_core import FetchCore, FetchPlan, ResetPlan, ValidationPlan
from broker.client.fetch_records import CompletedFetch, FetchedBatch
from broker.client.futures import RecordFuture
from broker.client.group_core import GroupCore, MemberState
from broker.client.group_member import ConsumerRebalanceListener
from broker.client.idempotence import IdempotenceManager, InitOutcome
from broker.client.partitioner import (
    StickyPartitioner,
    murmur2,
    partition_for_key,
    to_positive,
)
from broker.client.positions import FetchPosition, FetchState, Positions
from broker.client.produce_core import Decision, build_produce_request, choose_partition, decide
from broker.client.producer import Producer
from broker.client.settings import (
    AdminClientSettings,
    ConsumerSettings,
    IsolationLevel,
    OffsetResetStrategy,
    ProducerSettings,
    admin_settings,
    consumer_settings,
    producer_settings,
)
from broker.client.sticky_assignor import CooperativeStickyAssignor
from broker.client.types import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    TimestampType,
    TopicPartition,
)

__all__ = [
    "STALE_METADATA_ERRORS",
    "Admin",
    "AdminClientSettings",
    "AlterConfigOp",
    "BlockingAdmin",
    "BlockingConsumer",
    "BlockingProducer",
    "BlockingRebalanceListener",
    "BrokerInfo",
    "ClientClosedError",
    "ClusterDescription",
    "ClusterView",
    "CommitFailedError",
    "CompletedFetch",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "Consumer",
    "ConsumerGroupDescription",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerSettings",
    "CooperativeStickyAssignor",
    "Decision",
    "ElectionType",
    "ExponentialBackoff",
    "FetchCore",
    "FetchPlan",
    "FetchPosition",
    "FetchState",
    "FetchedBatch",
    "GroupCore",
    "GroupListing",
    "IdempotenceManager",
    "InitOutcome",
    "IsolationLevel",
    "KafkaError",
    "KafkaTimeoutError",
    "LogDirDescription",
    "LogTruncationError",
    "MemberDescription",
    "MemberState",
    "MetadataTracker",
    "NewPartitions",
    "NewTopic",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "OffsetResetStrategy",
    "OffsetSpec",
    "OpType",
    "PartitionDescription",
    "PartitionInfo",
    "PartitionReassignment",
    "Positions",
    "Producer",
    "ProducerBatch",
    "ProducerIdAndEpoch",
    "ProducerSettings",
    "RangeAssignor",
    "ReadyCheck",
    "RebalanceProtocol",
    "RecordAccumulator",
    "RecordColumns",
    "RecordFuture",
    "RecordMetadata",
    "ReplicaLogInfo",
    "ResetPlan",
    "ResourceType",
    "RoundRobinAssignor",
    "StickyPartitioner",
    "TimestampType",
    "TopicDescription",
    "TopicInfo",
    "TopicPartition",
    "ValidationPlan",
    "admin_settings",
    "build_produce_request",
    "choose_partition",
    "cluster_view_from_metadata",
    "consumer_settings",
    "decide",
    "decode_columns",
    "murmur2",
    "partition_for_key",
    "producer_settings",
    "record_size",
    "to_positive",
]
