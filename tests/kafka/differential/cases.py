"""The corpus: request sequences sent to Apache Kafka and to pykraft alike.

Each ``Case`` is a few requests of one api key, happy path or error path, run at every
version the pykraft listener advertises unless it names its versions. Cases run in this
order on each cluster, so state a case leaves (records produced, a topic created) is the
same on both sides when a later case reads it. Topics and groups are named ``dpt-...``
(unique to this module in the shared clusters of the kafka layer); a case that creates
something names it with its version.

What the codec cannot build (trailing bytes, an unknown tag, a bad CRC, an oversized
frame, a version nobody knows) goes out as raw bytes (``wire``); the outcome, a decoded
answer or a closed connection, is compared the same way.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Sequence
from typing import Any, Final

from quorum.wire.api_keys import ApiKey
from quorum.wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    ApiVersionsRequest,
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestPartition,
    BeginQuorumEpochRequestTopic,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreateTopicsRequest,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeLogDirsRequestTopic,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    EndQuorumEpochRequest,
    EndQuorumEpochRequestPartition,
    EndQuorumEpochRequestTopic,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchSnapshotRequest,
    FetchSnapshotRequestPartition,
    FetchSnapshotRequestTopic,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    InitProducerIdRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopics,
    MetadataRequest,
    MetadataRequestTopic,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    VoteRequest,
    VoteRequestPartition,
    VoteRequestTopic,
)
from quorum.wire.records import build_batch_from_values

from .corpus import Case, CaseError, Session, until
from .wire import Outcome, frame, request_frame, with_unknown_tag

__all__ = ["CASES", "DATA_TOPIC", "prepare"]

DATA_TOPIC: Final = "dpt-data"  # 3 partitions, replication factor 2
EPOCH_TOPIC: Final = "dpt-epoch"  # 1 partition whose leader moved once: leader epoch 1
GROUP: Final = "dpt-group"
METADATA_TOPIC: Final = "__cluster_metadata"
K = ApiKey


def prepare(session: Session) -> None:
    """The state every case starts from, the same on both clusters."""
    session.create_topic(DATA_TOPIC, 3, 2)
    session.create_topic(EPOCH_TOPIC, 1, 2)
    _move_leader_once(session, EPOCH_TOPIC)
    session.coordinator(GROUP)  # creates __consumer_offsets on first use


def _move_leader_once(session: Session, topic: str) -> None:
    """Swap the replica order and elect the preferred leader: the leader epoch becomes 1."""
    leader, replicas = session.partitions(topic, fresh=True)[0]
    if replicas[0] != leader:
        return  # already moved (a rerun against the same cluster)
    swapped = (replicas[1], replicas[0], *replicas[2:])
    session.answer(session.any_broker, AlterPartitionReassignmentsRequest(topics=(
        AlterPartitionReassignmentsRequestReassignableTopic(name=topic, partitions=(
            AlterPartitionReassignmentsRequestReassignablePartition(
                partition_index=0, replicas=swapped),)),)), 0)
    _wait_for(session, topic, lambda placed: placed[1] == swapped, "the swapped replicas")
    session.answer(session.any_broker, _elect_preferred(topic), 2)
    _wait_for(session, topic, lambda placed: placed[0] == swapped[0], "the new leader")


def _elect_preferred(topic: str) -> ElectLeadersRequest:
    return ElectLeadersRequest(election_type=0, topic_partitions=(
        ElectLeadersRequestTopicPartitions(topic=topic, partitions=(0,)),))


def _wait_for(session: Session, topic: str, done: Any, what: str) -> None:
    until(lambda: done(session.partitions(topic, fresh=True)[0]),
          f"{session.name}: {topic} showing {what}")


# The records' timestamp: one value for both clusters, and recent, or a broker's time
# retention (7 days) would delete them (pykraft checks retention sooner than Kafka's 5 min).
NOW_MS: Final = int(time.time()) // 3600 * 3600 * 1000
HOUR_MS: Final = 3_600_000
# how long a client retries while a coordinator loads (about 50 retries of 0.1 s before)
_RETRY_S: Final = 5.0


def _batch(values: Sequence[bytes], *, partition_leader_epoch: int = -1) -> bytes:
    return build_batch_from_values(list(values), timestamp=NOW_MS,
                                   partition_leader_epoch=partition_leader_epoch)


def _produce(topic: str, partition: int, records: bytes | None, *, acks: int = -1) -> Any:
    return ProduceRequest(acks=acks, timeout_ms=10000, topic_data=(
        ProduceRequestTopic(name=topic, partition_data=(
            ProduceRequestPartition(index=partition, records=records),)),))


def _fetch(topic: str, partition: int, offset: int, *, epoch: int = -1) -> Any:
    return FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=(
        FetchRequestTopic(topic=topic, partitions=(FetchRequestPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20,
            current_leader_epoch=epoch),)),))


def _list_offsets(topic: str, partition: int, timestamp: int, *, epoch: int = -1) -> Any:
    return ListOffsetsRequest(replica_id=-1, topics=(ListOffsetsRequestTopic(
        name=topic, partitions=(ListOffsetsRequestPartition(
            partition_index=partition, timestamp=timestamp, current_leader_epoch=epoch),)),))


def _ofle(topic: str, partition: int, leader_epoch: int, *, current: int = -1) -> Any:
    return OffsetForLeaderEpochRequest(replica_id=-1, topics=(OffsetForLeaderEpochRequestTopic(
        topic=topic, partitions=(OffsetForLeaderEpochRequestPartition(
            partition=partition, leader_epoch=leader_epoch, current_leader_epoch=current),)),))


# a topic id no cluster holds (a fixed value: both clusters get the same request)
_SOME_TOPIC_ID: Final = uuid.UUID("5c1e2d3f-0000-4000-8000-00000000d1ff")


def _metadata(*names: str, version: int = 12) -> Any:
    """Named topics only (an empty list is every topic in v0); from v4 never auto-created
    (before v4 Kafka creates a topic a Metadata request names, when auto-creation is on)."""
    return MetadataRequest(topics=tuple(MetadataRequestTopic(name=n) for n in names),
                           allow_auto_topic_creation=version < 4)


def _create(name: str, partitions: int = 1, replication: int = 1,
            configs: Sequence[tuple[str, str | None]] = (), *, validate_only: bool = False
            ) -> Any:
    return CreateTopicsRequest(timeout_ms=30000, validate_only=validate_only, topics=(
        CreateTopicsRequestTopic(name=name, num_partitions=partitions,
                                 replication_factor=replication, configs=tuple(
                                     CreateTopicsRequestConfig(name=k, value=v)
                                     for k, v in configs)),))


def _to_leader(topic: str, partition: int, build: Any, versions: tuple[int, ...] | None = None
               ) -> Any:
    def run(s: Session, v: int) -> Outcome:
        return s.send(s.leader(topic, partition), build(v), v)
    return run


def _at(node: str, build: Any) -> Any:
    """Send ``build(v)`` to any broker (``node`` is documentation: 'any')."""
    def run(s: Session, v: int) -> Outcome:
        return s.send(s.any_broker, build(v), v)
    return run


# -- Produce ---------------------------------------------------------------------------------

def _corrupt_crc(batch: bytes) -> bytes:
    crc_at = 8 + 4 + 4 + 1  # base offset, length, partition leader epoch, magic
    (crc,) = struct.unpack_from(">I", batch, crc_at)
    return batch[:crc_at] + struct.pack(">I", crc ^ 0xFFFF) + batch[crc_at + 4:]


def _produce_raw(s: Session, v: int, records: bytes, topic: str = DATA_TOPIC) -> Outcome:
    return s.send(s.leader(topic, 1), _produce(topic, 1, records), v)


def _produce_to_offsets_topic(s: Session, v: int) -> Outcome:
    leader = s.leader("__consumer_offsets", 0)
    return s.send(leader, _produce("__consumer_offsets", 0, _batch([b"x"])), v)


def _produce_trailing(s: Session, v: int) -> Outcome:
    return s.send(s.leader(DATA_TOPIC, 2), _produce(DATA_TOPIC, 2, _batch([b"t"])), v,
                  trailing=b"\x00\x01\x02")


def _produce_unknown_tag(s: Session, v: int) -> Outcome:
    leader = s.leader(DATA_TOPIC, 2)
    msg = _produce(DATA_TOPIC, 2, _batch([b"tag"]))
    return s.send_raw(leader, lambda cid: with_unknown_tag(
        request_frame(msg, K.PRODUCE, v, cid)), K.PRODUCE, v)


PRODUCE_CASES: Final = (
    Case("produce", K.PRODUCE, _to_leader(DATA_TOPIC, 0, lambda v: _produce(
        DATA_TOPIC, 0, _batch([b"a", b"b"]))), about="two records, acks=all, to the leader"),
    Case("produce-acks-1", K.PRODUCE, _to_leader(DATA_TOPIC, 0, lambda v: _produce(
        DATA_TOPIC, 0, _batch([b"c"]), acks=1)), versions=(3, 9)),
    Case("produce-unknown-topic", K.PRODUCE, _at("any", lambda v: _produce(
        "dpt-no-such-topic", 0, _batch([b"x"]))), versions=(3, 9)),
    Case("produce-unknown-partition", K.PRODUCE, _to_leader(DATA_TOPIC, 0, lambda v: _produce(
        DATA_TOPIC, 99, _batch([b"x"]))), versions=(3, 9)),
    Case("produce-to-follower", K.PRODUCE, lambda s, v: s.send(
        s.follower(DATA_TOPIC, 0), _produce(DATA_TOPIC, 0, _batch([b"x"])), v),
        versions=(3, 9), about="NOT_LEADER_OR_FOLLOWER"),
    Case("produce-bad-acks", K.PRODUCE, _to_leader(DATA_TOPIC, 0, lambda v: _produce(
        DATA_TOPIC, 0, _batch([b"x"]), acks=2)), versions=(3, 9)),
    Case("produce-bad-crc", K.PRODUCE, lambda s, v: _produce_raw(
        s, v, _corrupt_crc(_batch([b"crc"]))), versions=(3, 9)),
    Case("produce-truncated-batch", K.PRODUCE, lambda s, v: _produce_raw(
        s, v, _batch([b"cut", b"short"])[:-3]), versions=(3, 9)),
    Case("produce-not-a-batch", K.PRODUCE, lambda s, v: _produce_raw(
        s, v, b"\x00" * 80), versions=(3, 9)),
    Case("produce-oversized-batch", K.PRODUCE, lambda s, v: _produce_raw(
        s, v, _batch([b"x" * (1024 * 1024 + 100)])), versions=(9,),
        about="one batch above max.message.bytes (1 MiB + 12)"),
    Case("produce-empty-records", K.PRODUCE, lambda s, v: _produce_raw(s, v, b""),
         versions=(3, 9)),
    Case("produce-consumer-offsets", K.PRODUCE, _produce_to_offsets_topic, versions=(3, 9)),
    Case("produce-trailing-bytes", K.PRODUCE, _produce_trailing, versions=(3, 8, 9)),
    Case("produce-unknown-tag", K.PRODUCE, _produce_unknown_tag, versions=(9,)),
)

# -- Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords ----------------------------------


def _fetch_follower(s: Session, v: int) -> Outcome:
    return s.send(s.follower(DATA_TOPIC, 0), _fetch(DATA_TOPIC, 0, 0), v)


def _list_offsets_follower(s: Session, v: int) -> Outcome:
    return s.send(s.follower(DATA_TOPIC, 0), _list_offsets(DATA_TOPIC, 0, -1), v)


READ_CASES: Final = (
    Case("fetch", K.FETCH, _to_leader(DATA_TOPIC, 0, lambda v: _fetch(DATA_TOPIC, 0, 0))),
    Case("fetch-at-end", K.FETCH, _to_leader(DATA_TOPIC, 1, lambda v: _fetch(
        DATA_TOPIC, 1, 0)), versions=(12,), about="an empty partition: nothing yet"),
    Case("fetch-out-of-range", K.FETCH, _to_leader(DATA_TOPIC, 0, lambda v: _fetch(
        DATA_TOPIC, 0, 1_000_000)), versions=(4, 12)),
    Case("fetch-unknown-topic", K.FETCH, _at("any", lambda v: _fetch(
        "dpt-no-such-topic", 0, 0)), versions=(4, 12)),
    Case("fetch-unknown-partition", K.FETCH, _to_leader(DATA_TOPIC, 0, lambda v: _fetch(
        DATA_TOPIC, 42, 0)), versions=(12,)),
    Case("fetch-follower", K.FETCH, _fetch_follower, versions=(10, 12),
         about="a consumer's fetch at a follower (no rack: not a preferred read replica)"),
    Case("fetch-fenced-epoch", K.FETCH, _to_leader(EPOCH_TOPIC, 0, lambda v: _fetch(
        EPOCH_TOPIC, 0, 0, epoch=0)), versions=(9, 12)),
    Case("fetch-unknown-epoch", K.FETCH, _to_leader(EPOCH_TOPIC, 0, lambda v: _fetch(
        EPOCH_TOPIC, 0, 0, epoch=7)), versions=(9, 12)),
    Case("list-offsets-latest", K.LIST_OFFSETS, _to_leader(DATA_TOPIC, 0, lambda v: (
        _list_offsets(DATA_TOPIC, 0, -1)))),
    Case("list-offsets-earliest", K.LIST_OFFSETS, _to_leader(DATA_TOPIC, 0, lambda v: (
        _list_offsets(DATA_TOPIC, 0, -2)))),
    Case("list-offsets-by-time", K.LIST_OFFSETS, _to_leader(DATA_TOPIC, 0, lambda v: (
        _list_offsets(DATA_TOPIC, 0, NOW_MS - HOUR_MS))), versions=(1, 7)),
    Case("list-offsets-future-time", K.LIST_OFFSETS, _to_leader(DATA_TOPIC, 0, lambda v: (
        _list_offsets(DATA_TOPIC, 0, NOW_MS + 24 * HOUR_MS))), versions=(1, 7),
        about="a timestamp after every record: no offset yet"),
    Case("list-offsets-max-timestamp", K.LIST_OFFSETS, _to_leader(DATA_TOPIC, 0, lambda v: (
        _list_offsets(DATA_TOPIC, 0, -3))), versions=(7,)),
    Case("list-offsets-unknown-topic", K.LIST_OFFSETS, _at("any", lambda v: _list_offsets(
        "dpt-no-such-topic", 0, -1)), versions=(1, 7)),
    Case("list-offsets-follower", K.LIST_OFFSETS, _list_offsets_follower, versions=(1, 7)),
    Case("list-offsets-fenced-epoch", K.LIST_OFFSETS, _to_leader(EPOCH_TOPIC, 0, lambda v: (
        _list_offsets(EPOCH_TOPIC, 0, -1, epoch=0))), versions=(4, 7)),
    Case("list-offsets-unknown-epoch", K.LIST_OFFSETS, _to_leader(EPOCH_TOPIC, 0, lambda v: (
        _list_offsets(EPOCH_TOPIC, 0, -1, epoch=9))), versions=(4, 7)),
    Case("offset-for-leader-epoch", K.OFFSET_FOR_LEADER_EPOCH, _to_leader(
        DATA_TOPIC, 0, lambda v: _ofle(DATA_TOPIC, 0, 0))),
    Case("offset-for-leader-epoch-unknown-topic", K.OFFSET_FOR_LEADER_EPOCH, _at(
        "any", lambda v: _ofle("dpt-no-such-topic", 0, 0)), versions=(2, 4)),
    Case("offset-for-leader-epoch-fenced", K.OFFSET_FOR_LEADER_EPOCH, _to_leader(
        EPOCH_TOPIC, 0, lambda v: _ofle(EPOCH_TOPIC, 0, 0, current=0)), versions=(2, 4)),
    Case("offset-for-leader-epoch-unknown-epoch", K.OFFSET_FOR_LEADER_EPOCH, _to_leader(
        EPOCH_TOPIC, 0, lambda v: _ofle(EPOCH_TOPIC, 0, 0, current=5)), versions=(2, 4)),
    Case("offset-for-leader-epoch-future-epoch", K.OFFSET_FOR_LEADER_EPOCH, _to_leader(
        DATA_TOPIC, 0, lambda v: _ofle(DATA_TOPIC, 0, 3)), versions=(4,),
        about="an epoch after the leader's: UNDEFINED_EPOCH_OFFSET"),
    Case("delete-records", K.DELETE_RECORDS, _to_leader(DATA_TOPIC, 0, lambda v: (
        DeleteRecordsRequest(timeout_ms=10000, topics=(DeleteRecordsRequestTopic(
            name=DATA_TOPIC, partitions=(DeleteRecordsRequestPartition(
                partition_index=0, offset=v + 1),)),))))),
    Case("delete-records-beyond-end", K.DELETE_RECORDS, _to_leader(DATA_TOPIC, 0, lambda v: (
        DeleteRecordsRequest(timeout_ms=10000, topics=(DeleteRecordsRequestTopic(
            name=DATA_TOPIC, partitions=(DeleteRecordsRequestPartition(
                partition_index=0, offset=1_000_000),)),)))), versions=(0, 2)),
    Case("delete-records-unknown-topic", K.DELETE_RECORDS, _at("any", lambda v: (
        DeleteRecordsRequest(timeout_ms=10000, topics=(DeleteRecordsRequestTopic(
            name="dpt-no-such-topic", partitions=(DeleteRecordsRequestPartition(
                partition_index=0, offset=1),)),)))), versions=(0, 2)),
    Case("list-offsets-earliest-after-delete", K.LIST_OFFSETS, _to_leader(
        DATA_TOPIC, 0, lambda v: _list_offsets(DATA_TOPIC, 0, -2)), versions=(7,)),
)

# -- Metadata, ApiVersions, DescribeCluster, DescribeConfigs, DescribeLogDirs, quorum -------


def _api_versions_unknown(s: Session, _v: int) -> Outcome:
    def build(cid: int) -> bytes:
        header = struct.pack(">hhih", K.API_VERSIONS, 99, cid, 4) + b"diff"
        return frame(header + b"\x00" * 8)
    return s.send_raw(s.any_broker, build, K.API_VERSIONS, 0)


def _api_versions_unknown_controller(s: Session, _v: int) -> Outcome:
    def build(cid: int) -> bytes:
        # Kafka reads an unknown version's header as its newest one: a tag block follows
        header = struct.pack(">hhih", K.API_VERSIONS, 99, cid, 4) + b"diff"
        return frame(header + b"\x00" * 8)
    return s.send_raw(s.any_controller, build, K.API_VERSIONS, 0, listener="controller")


def _describe_log_dirs(s: Session, v: int) -> Outcome:
    return s.send(s.leader(DATA_TOPIC, 0), DescribeLogDirsRequest(topics=(
        DescribeLogDirsRequestTopic(topic=DATA_TOPIC, partitions=(0,)),)), v)


def _describe_configs(resource_type: int, name: str, keys: tuple[str, ...] | None) -> Any:
    return lambda v: DescribeConfigsRequest(resources=(DescribeConfigsRequestResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys),))


def _broker_configs(s: Session, v: int) -> Outcome:
    node = s.any_broker
    return s.send(node, _describe_configs(4, str(node), ("num.partitions", "log.retention.ms",
                                                           "message.max.bytes"))(v), v)


_TOPIC_KEYS: Final = ("cleanup.policy", "retention.ms", "max.message.bytes", "segment.bytes")

CLUSTER_CASES: Final = (
    Case("metadata", K.METADATA, _at("any", lambda v: _metadata(DATA_TOPIC, version=v))),
    Case("metadata-unknown-topic", K.METADATA, _at("any", lambda v: _metadata(
        "dpt-no-such-topic", version=v)), versions=(4, 12)),
    Case("metadata-bad-name", K.METADATA, _at("any", lambda v: _metadata(
        "dpt bad name!", version=v)), versions=(4, 12)),
    Case("metadata-internal-topic", K.METADATA, _at("any", lambda v: _metadata(
        "__consumer_offsets", version=v)), versions=(1, 12)),
    # v10-11 carry topic ids and nullable names but refuse both (ids are served from v12)
    Case("metadata-topic-id-before-v12", K.METADATA, _at("any", lambda v: MetadataRequest(
        topics=(MetadataRequestTopic(name=DATA_TOPIC, topic_id=_SOME_TOPIC_ID),),
        allow_auto_topic_creation=False)), versions=(10, 11)),
    Case("metadata-null-name-before-v12", K.METADATA, _at("any", lambda v: MetadataRequest(
        topics=(MetadataRequestTopic(name=None),), allow_auto_topic_creation=False)),
        versions=(10, 11)),
    Case("api-versions", K.API_VERSIONS, _at("any", lambda v: ApiVersionsRequest(
        client_software_name="pykraft-differential", client_software_version="1.0"))),
    Case("api-versions-bad-software-name", K.API_VERSIONS, _at("any", lambda v: (
        ApiVersionsRequest(client_software_name="", client_software_version="1.0"))),
        versions=(3, 4), about="KIP-511: an empty or ill-formed name is INVALID_REQUEST"),
    Case("api-versions-unknown-version", K.API_VERSIONS, _api_versions_unknown, versions=(0,),
         about="v99: answered in v0 with UNSUPPORTED_VERSION and the table (KIP-511)"),
    Case("describe-cluster", K.DESCRIBE_CLUSTER, _at("any", lambda v: DescribeClusterRequest())),
    Case("describe-configs-topic", K.DESCRIBE_CONFIGS, _at("any", _describe_configs(
        2, DATA_TOPIC, _TOPIC_KEYS))),
    Case("describe-configs-unknown-topic", K.DESCRIBE_CONFIGS, _at("any", _describe_configs(
        2, "dpt-no-such-topic", None)), versions=(1, 4)),
    Case("describe-configs-broker", K.DESCRIBE_CONFIGS, _broker_configs, versions=(1, 4)),
    Case("describe-configs-bad-type", K.DESCRIBE_CONFIGS, _at("any", _describe_configs(
        99, "x", None)), versions=(4,)),
    Case("describe-log-dirs", K.DESCRIBE_LOG_DIRS, _describe_log_dirs),
    Case("describe-quorum", K.DESCRIBE_QUORUM, _at("any", lambda v: DescribeQuorumRequest(
        topics=(DescribeQuorumRequestTopic(topic_name=METADATA_TOPIC, partitions=(
            DescribeQuorumRequestPartition(partition_index=0),)),))), versions=(0, 2),
        about="forwarded to the active controller"),
    Case("describe-quorum-unknown-topic", K.DESCRIBE_QUORUM, _at("any", lambda v: (
        DescribeQuorumRequest(topics=(DescribeQuorumRequestTopic(topic_name="dpt-x", partitions=(
            DescribeQuorumRequestPartition(partition_index=0),)),)))), versions=(2,)),
)

# -- topic administration --------------------------------------------------------------------


def _create_then(other: Any) -> Any:
    """Create a topic of the version's own name, then send ``other(name, v)``."""
    def run(s: Session, v: int) -> Sequence[Outcome]:
        name = f"dpt-adm-{other.__name__}-v{v}"
        s.create_topic(name, 1, 1)
        return (s.send(s.any_broker, other(name, v), v),)
    return run


def _delete(name: str, v: int) -> Any:
    return DeleteTopicsRequest(topic_names=(name,), timeout_ms=30000)


def _grow(name: str, v: int) -> Any:
    return CreatePartitionsRequest(timeout_ms=30000, topics=(
        CreatePartitionsRequestTopic(name=name, count=2),))


def _partitions(name: str, count: int, *, validate_only: bool = False) -> Any:
    return lambda v: CreatePartitionsRequest(timeout_ms=30000, validate_only=validate_only,
                                             topics=(CreatePartitionsRequestTopic(
                                                 name=name, count=count),))


def _alter_config(topic: str, key: str, value: str | None, op: int = 0,
                  resource_type: int = 2) -> Any:
    return lambda v: IncrementalAlterConfigsRequest(resources=(
        IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=resource_type, resource_name=topic, configs=(
                IncrementalAlterConfigsRequestAlterableConfig(
                    name=key, config_operation=op, value=value),)),))


def _reassign(topic: str, partition: int, replicas: tuple[int, ...] | None) -> Any:
    return lambda v: AlterPartitionReassignmentsRequest(timeout_ms=30000, topics=(
        AlterPartitionReassignmentsRequestReassignableTopic(name=topic, partitions=(
            AlterPartitionReassignmentsRequestReassignablePartition(
                partition_index=partition, replicas=replicas),)),))


TOPIC_CASES: Final = (
    Case("create-topics", K.CREATE_TOPICS, _at("any", lambda v: _create(
        f"dpt-create-v{v}", 2, 2, [("retention.ms", "3600000")])),
        about="a new topic, one config set"),
    Case("create-topics-validate-only", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-validate-only", 3, 1, validate_only=True)), versions=(2, 5)),
    Case("create-topics-duplicate", K.CREATE_TOPICS, _at("any", lambda v: _create(
        DATA_TOPIC, 3, 2)), versions=(2, 5)),
    Case("create-topics-replication-above-brokers", K.CREATE_TOPICS, _at("any", lambda v: (
        _create("dpt-too-many-replicas", 1, 9))), versions=(2, 5)),
    Case("create-topics-bad-characters", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt bad/name!", 1, 1)), versions=(2, 5)),
    Case("create-topics-name-too-long", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-" + "x" * 250, 1, 1)), versions=(2, 5)),
    Case("create-topics-dot-name", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "..", 1, 1)), versions=(5,)),
    Case("create-topics-zero-partitions", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-zero-partitions", 0, 1)), versions=(2, 5)),
    Case("create-topics-unknown-config", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-unknown-config", 1, 1, [("no.such.config", "1")])), versions=(2, 5)),
    Case("create-topics-bad-config-value", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-bad-config-value", 1, 1, [("retention.ms", "soon")])), versions=(2, 5)),
    Case("create-topics-config-out-of-range", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-config-range", 1, 1, [("min.insync.replicas", "0")])), versions=(5,)),
    Case("create-topics-null-config-value", K.CREATE_TOPICS, _at("any", lambda v: _create(
        "dpt-null-config", 1, 1, [("retention.ms", None)])), versions=(5,)),
    Case("delete-topics", K.DELETE_TOPICS, _create_then(_delete)),
    Case("delete-topics-unknown", K.DELETE_TOPICS, _at("any", lambda v: DeleteTopicsRequest(
        topic_names=("dpt-no-such-topic",), timeout_ms=30000)), versions=(1, 4)),
    Case("create-partitions", K.CREATE_PARTITIONS, _create_then(_grow)),
    Case("create-partitions-decrease", K.CREATE_PARTITIONS, _at("any", _partitions(
        DATA_TOPIC, 2)), versions=(0, 3)),
    Case("create-partitions-same-count", K.CREATE_PARTITIONS, _at("any", _partitions(
        DATA_TOPIC, 3)), versions=(3,)),
    Case("create-partitions-unknown-topic", K.CREATE_PARTITIONS, _at("any", _partitions(
        "dpt-no-such-topic", 4)), versions=(0, 3)),
    Case("create-partitions-validate-only", K.CREATE_PARTITIONS, _at("any", _partitions(
        DATA_TOPIC, 5, validate_only=True)), versions=(3,)),
    Case("elect-leaders-not-needed", K.ELECT_LEADERS, _at("any", lambda v: ElectLeadersRequest(
        election_type=0, topic_partitions=(
            ElectLeadersRequestTopicPartitions(topic=DATA_TOPIC, partitions=(0,)),)))),
    Case("elect-leaders-unknown-partition", K.ELECT_LEADERS, _at("any", lambda v: (
        ElectLeadersRequest(election_type=0, topic_partitions=(
            ElectLeadersRequestTopicPartitions(topic="dpt-no-such-topic", partitions=(0,)),)))),
        versions=(0, 2)),
    Case("elect-leaders-unclean", K.ELECT_LEADERS, _at("any", lambda v: ElectLeadersRequest(
        election_type=1, topic_partitions=(
            ElectLeadersRequestTopicPartitions(topic=DATA_TOPIC, partitions=(1,)),))),
        versions=(2,), about="the leader is alive: ELECTION_NOT_NEEDED"),
    Case("incremental-alter-configs", K.INCREMENTAL_ALTER_CONFIGS, _at("any", _alter_config(
        DATA_TOPIC, "retention.ms", "7200000"))),
    Case("incremental-alter-configs-delete", K.INCREMENTAL_ALTER_CONFIGS, _at(
        "any", _alter_config(DATA_TOPIC, "retention.ms", None, op=1)), versions=(1,)),
    Case("incremental-alter-configs-bad-value", K.INCREMENTAL_ALTER_CONFIGS, _at(
        "any", _alter_config(DATA_TOPIC, "retention.ms", "later")), versions=(0, 1)),
    Case("incremental-alter-configs-unknown-config", K.INCREMENTAL_ALTER_CONFIGS, _at(
        "any", _alter_config(DATA_TOPIC, "no.such.config", "1")), versions=(0, 1)),
    Case("incremental-alter-configs-unknown-topic", K.INCREMENTAL_ALTER_CONFIGS, _at(
        "any", _alter_config("dpt-no-such-topic", "retention.ms", "1000")), versions=(1,)),
    Case("incremental-alter-configs-bad-op", K.INCREMENTAL_ALTER_CONFIGS, _at(
        "any", _alter_config(DATA_TOPIC, "retention.ms", "1000", op=9)), versions=(1,)),
    Case("alter-partition-reassignments-unknown-topic", K.ALTER_PARTITION_REASSIGNMENTS, _at(
        "any", _reassign("dpt-no-such-topic", 0, (1, 2))), versions=(0,)),
    Case("alter-partition-reassignments-cancel-none", K.ALTER_PARTITION_REASSIGNMENTS, _at(
        "any", _reassign(DATA_TOPIC, 0, None)), versions=(0,),
        about="NO_REASSIGNMENT_IN_PROGRESS"),
    Case("alter-partition-reassignments-unknown-broker", K.ALTER_PARTITION_REASSIGNMENTS,
         _at("any", _reassign(DATA_TOPIC, 0, (97, 98))), versions=(0,)),
    Case("alter-partition-reassignments-empty", K.ALTER_PARTITION_REASSIGNMENTS,
         _at("any", _reassign(DATA_TOPIC, 0, ())), versions=(0,)),
    Case("list-partition-reassignments", K.LIST_PARTITION_REASSIGNMENTS, _at(
        "any", lambda v: ListPartitionReassignmentsRequest(timeout_ms=30000, topics=(
            ListPartitionReassignmentsRequestTopics(name=DATA_TOPIC,
                                                    partition_indexes=(0, 1, 2)),)))),
)

# -- producer ids ------------------------------------------------------------------------------

def _retrying(s: Session, node: int, msg: Any, v: int) -> Outcome:
    """As a client does: again while the answer is COORDINATOR_LOAD_IN_PROGRESS (14) or
    COORDINATOR_NOT_AVAILABLE (15) (Kafka's broker fetches its first producer id block
    from the controller, and loads a coordinator's partition, on first use)."""
    last: list[Outcome] = []

    def settled() -> Outcome | None:
        last.append(s.send(node, msg, v))
        code = getattr(getattr(last[-1], "message", None), "error_code", 0)
        return last[-1] if code not in (14, 15) else None

    try:
        return until(settled, "an answer other than a coordinator loading", _RETRY_S)
    except CaseError:
        return last[-1]  # still retriable after the client's patience: compared as it is


def _transaction_coordinator(s: Session) -> int:
    """The transaction coordinator of dpt-txn; any broker where there is none (pykraft)."""
    try:
        return s.coordinator("dpt-txn", 1)
    except CaseError:
        return s.any_broker


PRODUCER_CASES: Final = (
    Case("init-producer-id", K.INIT_PRODUCER_ID, lambda s, v: _retrying(
        s, s.any_broker, InitProducerIdRequest(transactional_id=None,
                                               transaction_timeout_ms=60000), v)),
    Case("init-producer-id-transactional", K.INIT_PRODUCER_ID, lambda s, v: _retrying(
        s, _transaction_coordinator(s), InitProducerIdRequest(
            transactional_id="dpt-txn", transaction_timeout_ms=60000), v), versions=(4,),
        about="a transactional id at its coordinator"),
    Case("init-producer-id-bad-timeout", K.INIT_PRODUCER_ID, lambda s, v: _retrying(
        s, _transaction_coordinator(s), InitProducerIdRequest(
            transactional_id="dpt-txn", transaction_timeout_ms=0), v), versions=(4,)),
)

# -- groups ------------------------------------------------------------------------------------


def _join(group: str, member: str = "", *, session_ms: int = 10000) -> Any:
    return JoinGroupRequest(group_id=group, session_timeout_ms=session_ms,
                            rebalance_timeout_ms=10000, member_id=member,
                            protocol_type="consumer", protocols=(
                                JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01"),))


def _group_round(s: Session, v: int) -> Sequence[Outcome]:
    """A one-member generation: join (twice from v4: MEMBER_ID_REQUIRED first), sync,
    heartbeat, commit, fetch, leave."""
    group = f"dpt-round-v{v}"
    node = s.coordinator(group)
    outcomes: list[Outcome] = []
    first = s.send(node, _join(group), v)
    outcomes.append(first)
    member = getattr(getattr(first, "message", None), "member_id", "")
    join = first
    if v >= 4:
        join = s.send(node, _join(group, member), v)
        outcomes.append(join)
    generation = getattr(getattr(join, "message", None), "generation_id", -1)
    sync_v = min(v, 5)
    outcomes.append(s.send(node, SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member, protocol_type="consumer",
        protocol_name="range", assignments=(SyncGroupRequestAssignment(
            member_id=member, assignment=b"\x00\x07"),)), sync_v))
    outcomes.append(s.send(node, HeartbeatRequest(group_id=group, generation_id=generation,
                                                  member_id=member), min(v, 4)))
    outcomes.append(s.send(node, _leave(group, member, min(v, 5)), min(v, 5)))
    return outcomes


def _leave(group: str, member: str, v: int) -> Any:
    if v >= 3:
        return LeaveGroupRequest(group_id=group, members=(
            LeaveGroupRequestMemberIdentity(member_id=member),))
    return LeaveGroupRequest(group_id=group, member_id=member)


def _commit(group: str, generation: int = -1, member: str = "") -> Any:
    return lambda v: OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member, topics=(
            OffsetCommitRequestTopic(name=DATA_TOPIC, partitions=(OffsetCommitRequestPartition(
                partition_index=0, committed_offset=3, committed_metadata="m"),)),))


def _offset_fetch(group: str) -> Any:
    def build(v: int) -> Any:
        if v >= 8:
            return OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id=group, topics=(
                OffsetFetchRequestTopics(name=DATA_TOPIC, partition_indexes=(0, 1)),)),))
        return OffsetFetchRequest(group_id=group, topics=(OffsetFetchRequestTopic(
            name=DATA_TOPIC, partition_indexes=(0, 1)),))
    return build


def _at_coordinator(group: str, build: Any) -> Any:
    def run(s: Session, v: int) -> Outcome:
        return s.send(s.coordinator(group), build(v), v)
    return run


def _find(key: str, key_type: int = 0) -> Any:
    def build(v: int) -> Any:
        if v >= 4:
            return FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,))
        return FindCoordinatorRequest(key=key, key_type=key_type)
    return build


GROUP_CASES: Final = (
    Case("find-coordinator", K.FIND_COORDINATOR, _at("any", _find(GROUP))),
    Case("find-coordinator-transaction", K.FIND_COORDINATOR, _at("any", _find("dpt-txn", 1)),
         versions=(1, 6)),
    Case("find-coordinator-bad-type", K.FIND_COORDINATOR, _at("any", _find(GROUP, 7)),
         versions=(1, 6)),
    Case("group-round", K.JOIN_GROUP, _group_round,
         about="join, sync, heartbeat, leave: a one-member generation"),
    Case("join-group-bad-session-timeout", K.JOIN_GROUP, _at_coordinator(GROUP, lambda v: (
        _join(GROUP, session_ms=1))), versions=(0, 9)),
    Case("join-group-unknown-member", K.JOIN_GROUP, _at_coordinator(GROUP, lambda v: (
        _join(GROUP, "dpt-nobody"))), versions=(0, 5, 9)),
    Case("join-group-empty-group-id", K.JOIN_GROUP, _at("any", lambda v: _join("")),
         versions=(9,)),
    Case("sync-group-unknown-member", K.SYNC_GROUP, _at_coordinator(GROUP, lambda v: (
        SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="dpt-nobody",
                         protocol_type="consumer", protocol_name="range")))),
    Case("heartbeat-unknown-member", K.HEARTBEAT, _at_coordinator(GROUP, lambda v: (
        HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="dpt-nobody")))),
    Case("heartbeat-unknown-group", K.HEARTBEAT, _at_coordinator("dpt-no-group", lambda v: (
        HeartbeatRequest(group_id="dpt-no-group", generation_id=1, member_id="m"))),
        versions=(4,)),
    Case("leave-group-unknown-member", K.LEAVE_GROUP, _at_coordinator(GROUP, lambda v: (
        _leave(GROUP, "dpt-nobody", v)))),
    Case("offset-commit", K.OFFSET_COMMIT, _at_coordinator(GROUP, _commit(GROUP)),
         about="a standalone commit (generation -1), as Admin and assign() consumers do"),
    Case("offset-commit-unknown-member", K.OFFSET_COMMIT, _at_coordinator(GROUP, _commit(
        GROUP, 3, "dpt-nobody")), versions=(2, 9)),
    Case("offset-commit-unknown-topic", K.OFFSET_COMMIT, _at_coordinator(GROUP, lambda v: (
        OffsetCommitRequest(group_id=GROUP, topics=(OffsetCommitRequestTopic(
            name="dpt-no-such-topic", partitions=(OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1),)),)))), versions=(9,)),
    Case("offset-fetch", K.OFFSET_FETCH, _at_coordinator(GROUP, _offset_fetch(GROUP))),
    Case("offset-fetch-unknown-group", K.OFFSET_FETCH, _at_coordinator(
        "dpt-no-group", _offset_fetch("dpt-no-group")), versions=(1, 7, 9)),
    Case("list-groups", K.LIST_GROUPS, lambda s, v: s.send(
        s.coordinator(GROUP), ListGroupsRequest(states_filter=("Dead",)), v), versions=(4, 5),
        about="a filter nothing matches (other groups of the layer would show otherwise)"),
    Case("describe-groups", K.DESCRIBE_GROUPS, _at_coordinator(GROUP, lambda v: (
        DescribeGroupsRequest(groups=(GROUP,))))),
    Case("describe-groups-unknown", K.DESCRIBE_GROUPS, _at_coordinator(
        "dpt-no-group", lambda v: DescribeGroupsRequest(groups=("dpt-no-group",))),
        versions=(0, 6)),
    Case("offset-delete", K.OFFSET_DELETE, _at_coordinator(GROUP, lambda v: (
        OffsetDeleteRequest(group_id=GROUP, topics=(OffsetDeleteRequestTopic(
            name=DATA_TOPIC, partitions=(OffsetDeleteRequestPartition(partition_index=0),)),))))),
    Case("offset-delete-unknown-group", K.OFFSET_DELETE, _at_coordinator(
        "dpt-no-group", lambda v: OffsetDeleteRequest(group_id="dpt-no-group", topics=(
            OffsetDeleteRequestTopic(name=DATA_TOPIC, partitions=(
                OffsetDeleteRequestPartition(partition_index=0),)),)))),
    Case("delete-groups", K.DELETE_GROUPS, lambda s, v: (
        s.send(s.coordinator(f"dpt-del-v{v}"), _commit(f"dpt-del-v{v}")(9), 9),
        s.send(s.coordinator(f"dpt-del-v{v}"), DeleteGroupsRequest(
            groups_names=(f"dpt-del-v{v}",)), v)),
        about="a group with committed offsets and no members"),
    Case("delete-groups-unknown", K.DELETE_GROUPS, _at_coordinator(
        "dpt-no-group", lambda v: DeleteGroupsRequest(groups_names=("dpt-no-group",))),
        versions=(2,)),
    Case("delete-groups-not-empty", K.DELETE_GROUPS, lambda s, v: s.send(
        s.coordinator(GROUP), DeleteGroupsRequest(groups_names=(GROUP,)), v), versions=(2,),
        about="the group still has offsets but no members: deleted"),
)

# -- the Raft RPCs of the controller listener: state-independent cases only -----------------
# A well-formed Vote, BeginQuorumEpoch or EndQuorumEpoch of a newer epoch moves the quorum's
# epoch: every request here is refused before any state is read (a wrong cluster id, an
# epoch older than any the quorum has had, a version nobody speaks, a body cut short).

_WRONG_CLUSTER: Final = "AAAAAAAAAAAAAAAAAAAAAA"


def _controller(build: Any) -> Any:
    def run(s: Session, v: int) -> Outcome:
        return s.send(s.any_controller, build(s, v), v, listener="controller")
    return run


def _vote(cluster_id: str) -> Any:
    return lambda s, v: VoteRequest(cluster_id=cluster_id, voter_id=s.any_controller, topics=(
        VoteRequestTopic(topic_name=METADATA_TOPIC, partitions=(VoteRequestPartition(
            partition_index=0, replica_epoch=1_000_000, replica_id=99, last_offset_epoch=0,
            last_offset=0),)),))


def _begin(cluster_id: str, epoch: int) -> Any:
    return lambda s, v: BeginQuorumEpochRequest(cluster_id=cluster_id, topics=(
        BeginQuorumEpochRequestTopic(topic_name=METADATA_TOPIC, partitions=(
            BeginQuorumEpochRequestPartition(partition_index=0, leader_id=99,
                                             leader_epoch=epoch),)),))


def _end(cluster_id: str, epoch: int) -> Any:
    return lambda s, v: EndQuorumEpochRequest(cluster_id=cluster_id, topics=(
        EndQuorumEpochRequestTopic(topic_name=METADATA_TOPIC, partitions=(
            EndQuorumEpochRequestPartition(partition_index=0, leader_id=99,
                                           leader_epoch=epoch),)),))


def _raft_fetch(cluster_id: str) -> Any:
    return lambda s, v: FetchRequest(cluster_id=cluster_id, max_wait_ms=0,
                                     replica_id=99 if v < 15 else -1,
                                     replica_state=FetchRequestReplicaState(
                                         replica_id=99 if v >= 15 else -1),
                                     topics=(FetchRequestTopic(topic=METADATA_TOPIC, partitions=(
                                         FetchRequestPartition(partition=0, fetch_offset=0,
                                                               partition_max_bytes=1024),)),))


def _fetch_snapshot(cluster_id: str) -> Any:
    return lambda s, v: FetchSnapshotRequest(cluster_id=cluster_id, replica_id=99, topics=(
        FetchSnapshotRequestTopic(name=METADATA_TOPIC, partitions=(
            FetchSnapshotRequestPartition(partition=0),)),))


def _unsupported_version(api_key: int, version: int) -> Any:
    def run(s: Session, _v: int) -> Outcome:
        def build(cid: int) -> bytes:
            return frame(struct.pack(">hhih", api_key, version, cid, 4) + b"diff" + b"\x00" * 16)
        return s.send_raw(s.any_controller, build, K.API_VERSIONS, 0, listener="controller",
                          wait=5.0)
    return run


def _truncated(build_msg: Any, api_key: int) -> Any:
    def run(s: Session, v: int) -> Outcome:
        msg = build_msg(s, v)
        return s.send_raw(s.any_controller, lambda cid: frame(
            request_frame(msg, api_key, v, cid)[4:-6]), api_key, v, listener="controller",
            wait=5.0)
    return run


RAFT_CASES: Final = (
    Case("vote-unknown-cluster", K.VOTE, _controller(_vote(_WRONG_CLUSTER)),
         listener="controller", about="INCONSISTENT_CLUSTER_ID, checked before anything"),
    Case("vote-unsupported-version", K.VOTE, _unsupported_version(K.VOTE, 9), versions=(2,),
         listener="controller"),
    Case("vote-truncated", K.VOTE, _truncated(_vote(_WRONG_CLUSTER), K.VOTE), versions=(2,),
         listener="controller"),
    Case("begin-quorum-epoch-unknown-cluster", K.BEGIN_QUORUM_EPOCH, _controller(
        _begin(_WRONG_CLUSTER, 1_000_000)), listener="controller"),
    Case("begin-quorum-epoch-non-voter-old-epoch", K.BEGIN_QUORUM_EPOCH, lambda s, v: s.send(
        s.any_controller, _begin(s.cluster_id, 0)(s, v), v, listener="controller"),
        listener="controller", versions=(1,),
        about="leader 99 (no voter) at epoch 0, older than any quorum's: FENCED_LEADER_EPOCH"),
    Case("begin-quorum-epoch-truncated", K.BEGIN_QUORUM_EPOCH, _truncated(
        _begin(_WRONG_CLUSTER, 1), K.BEGIN_QUORUM_EPOCH), versions=(1,), listener="controller"),
    Case("end-quorum-epoch-unknown-cluster", K.END_QUORUM_EPOCH, _controller(
        _end(_WRONG_CLUSTER, 1_000_000)), listener="controller"),
    Case("end-quorum-epoch-non-voter-old-epoch", K.END_QUORUM_EPOCH, lambda s, v: s.send(
        s.any_controller, _end(s.cluster_id, 0)(s, v), v, listener="controller"),
        listener="controller", versions=(1,)),
    Case("end-quorum-epoch-unsupported-version", K.END_QUORUM_EPOCH, _unsupported_version(
        K.END_QUORUM_EPOCH, 7), versions=(1,), listener="controller"),
    Case("raft-fetch-unknown-cluster", K.FETCH, _controller(_raft_fetch(_WRONG_CLUSTER)),
         versions=(13, 17), listener="controller"),
    Case("raft-fetch-unsupported-version", K.FETCH, _unsupported_version(K.FETCH, 99),
         versions=(17,), listener="controller"),
    Case("fetch-snapshot-unknown-cluster", K.FETCH_SNAPSHOT, _controller(
        _fetch_snapshot(_WRONG_CLUSTER)), listener="controller"),
    Case("fetch-snapshot-truncated", K.FETCH_SNAPSHOT, _truncated(
        _fetch_snapshot(_WRONG_CLUSTER), K.FETCH_SNAPSHOT), versions=(1,), listener="controller"),
    Case("describe-quorum-controller-unknown-topic", K.DESCRIBE_QUORUM, _controller(
        lambda s, v: DescribeQuorumRequest(topics=(DescribeQuorumRequestTopic(
            topic_name="dpt-x", partitions=(DescribeQuorumRequestPartition(
                partition_index=0),)),))), versions=(0, 2), listener="controller"),
    Case("api-versions-controller-unknown-version", K.API_VERSIONS,
         _api_versions_unknown_controller, versions=(0,), listener="controller"),
)

# -- malformed frames on the broker listener ----------------------------------------------------


def _oversized_frame(s: Session, _v: int) -> Outcome:
    """A size prefix above socket.request.max.bytes (100 MiB): the connection is closed."""
    return s.send_raw(s.any_broker, lambda cid: struct.pack(">i", 104857600 + 1) +
                      struct.pack(">hhih", K.METADATA, 12, cid, 4) + b"diff", K.METADATA, 12,
                      wait=5.0)


def _unknown_api_key(s: Session, _v: int) -> Outcome:
    return s.send_raw(s.any_broker, lambda cid: frame(
        struct.pack(">hhih", 9999, 0, cid, 4) + b"diff"), K.API_VERSIONS, 0, wait=5.0)


def _metadata_truncated(s: Session, v: int) -> Outcome:
    msg = _metadata(DATA_TOPIC, version=v)
    return s.send_raw(s.any_broker, lambda cid: frame(
        request_frame(msg, K.METADATA, v, cid)[4:-4]), K.METADATA, v, wait=5.0)


def _metadata_unknown_tag(s: Session, v: int) -> Outcome:
    msg = _metadata(DATA_TOPIC, version=v)
    return s.send_raw(s.any_broker, lambda cid: with_unknown_tag(
        request_frame(msg, K.METADATA, v, cid)), K.METADATA, v)


def _metadata_trailing(s: Session, v: int) -> Outcome:
    return s.send(s.any_broker, _metadata(DATA_TOPIC, version=v), v, trailing=b"\xff\xff\xff")


MALFORMED_CASES: Final = (
    Case("oversized-frame", K.METADATA, _oversized_frame, versions=(12,)),
    Case("unknown-api-key", K.API_VERSIONS, _unknown_api_key, versions=(0,)),
    Case("metadata-truncated", K.METADATA, _metadata_truncated, versions=(1, 12)),
    Case("metadata-unknown-tag", K.METADATA, _metadata_unknown_tag, versions=(9, 12)),
    Case("metadata-trailing-bytes", K.METADATA, _metadata_trailing, versions=(1, 12)),
)

CASES: Final = (*PRODUCE_CASES, *READ_CASES, *CLUSTER_CASES, *TOPIC_CASES, *PRODUCER_CASES,
                *GROUP_CASES, *RAFT_CASES, *MALFORMED_CASES)
