"""The admin client's requests and how their answers read (pure functions).

Each ``*_request`` builds one request from the admin client's arguments;
each ``read_*`` turns an answer into results keyed as the caller asked
(topic name, ``ConfigResource``, ``TopicPartition``), an error becoming a
``KafkaError`` that carries the server's message. ``raise_first`` raises
the first error in request order, which is what a caller that did not ask
for per-item results gets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from broker.client.admin_types import (
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ElectionType,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    PartitionDescription,
    PartitionReassignment,
    ReplicaLogInfo,
    ResourceType,
    TopicDescription,
)
from broker.client.cluster import BrokerInfo, cluster_view_from_metadata
from broker.client.errors import KafkaError, error_from_code
from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    AlterPartitionReassignmentsResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestAssignment,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsRequestAssignment,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeLogDirsResponse,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponse,
    MetadataResponse,
)
from quorum.wire.uuids import uuid_from_str

__all__ = [
    "alter_reassignments_request",
    "create_partitions_request",
    "create_topics_request",
    "delete_records_request",
    "delete_topics_request",
    "describe_configs_request",
    "elect_leaders_request",
    "incremental_alter_configs_request",
    "list_reassignments_request",
    "raise_first",
    "read_alter_reassignments",
    "read_create_partitions",
    "read_create_topics",
    "read_delete_records",
    "read_delete_topics",
    "read_describe_configs",
    "read_elect_leaders",
    "read_image_topics",
    "read_incremental_alter_configs",
    "read_list_reassignments",
    "read_log_dirs",
    "read_topic_descriptions",
]

K = TypeVar("K")


def _error(code: int, message: str | None, context: str) -> KafkaError | None:
    return None if code == Errors.NONE else error_from_code(code, message, context=context)


def raise_first(results: Mapping[K, Any], order: Iterable[K]) -> None:
    """Raise the first KafkaError among ``results``, taken in ``order``."""
    for key in order:
        outcome = results.get(key)
        if isinstance(outcome, KafkaError):
            raise outcome


def _by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in tps:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


# -- topics --------------------------------------------------------------------------------


def create_topics_request(
    topics: Sequence[NewTopic], *, timeout_ms: int, validate_only: bool
) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=tuple(
            CreateTopicsRequestTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignments=tuple(
                    CreateTopicsRequestAssignment(partition_index=p, broker_ids=tuple(brokers))
                    for p, brokers in sorted(t.replica_assignments.items())
                ),
                configs=tuple(
                    CreateTopicsRequestConfig(name=k, value=v) for k, v in t.configs.items()
                ),
            )
            for t in topics
        ),
        timeout_ms=timeout_ms,
        validate_only=validate_only,
    )


def read_create_topics(response: CreateTopicsResponse) -> dict[str, KafkaError | None]:
    return {
        t.name: _error(t.error_code, t.error_message, f"topic {t.name}") for t in response.topics
    }


def delete_topics_request(names: Sequence[str], *, timeout_ms: int) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topic_names=tuple(names), timeout_ms=timeout_ms)


def read_delete_topics(response: DeleteTopicsResponse) -> dict[str, KafkaError | None]:
    return {t.name: _error(t.error_code, None, f"topic {t.name}") for t in response.responses}


def create_partitions_request(
    topics: Mapping[str, NewPartitions], *, timeout_ms: int, validate_only: bool
) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(
        topics=tuple(
            CreatePartitionsRequestTopic(
                name=name,
                count=spec.total_count,
                assignments=None if spec.new_assignments is None else tuple(
                    CreatePartitionsRequestAssignment(broker_ids=tuple(a))
                    for a in spec.new_assignments
                ),
            )
            for name, spec in topics.items()
        ),
        timeout_ms=timeout_ms,
        validate_only=validate_only,
    )


def read_create_partitions(response: CreatePartitionsResponse) -> dict[str, KafkaError | None]:
    return {
        r.name: _error(r.error_code, r.error_message, f"topic {r.name}") for r in response.results
    }


def read_topic_descriptions(
    response: MetadataResponse,
) -> dict[str, TopicDescription | KafkaError]:
    view = cluster_view_from_metadata(response)
    out: dict[str, TopicDescription | KafkaError] = {}
    for name, error in view.topic_errors.items():
        out[name] = error_from_code(error, None, context=f"topic {name}")
    for name, info in view.topics.items():
        out[name] = TopicDescription(
            name=name,
            topic_id=info.topic_id,
            is_internal=info.is_internal,
            partitions=tuple(
                PartitionDescription(
                    partition=p.partition,
                    leader=view.brokers.get(p.leader),
                    leader_epoch=p.leader_epoch,
                    replicas=p.replicas,
                    isr=p.isr,
                    offline_replicas=p.offline_replicas,
                )
                for p in info.partitions
            ),
        )
    return out


def read_image_topics(image: Mapping[str, Any]) -> dict[str, TopicDescription]:
    """Topic descriptions from a metadata image in ``image_to_json`` form (what controllers
    give instead of Metadata): leaders at their first listener, replicas on fenced or
    unregistered brokers offline."""
    brokers = {
        b["brokerId"]: b for b in image.get("brokers", ())
    }
    leaders = {
        broker_id: BrokerInfo(broker_id, b["listeners"][0]["host"], b["listeners"][0]["port"],
                              b.get("rack"))
        for broker_id, b in brokers.items() if b["listeners"]
    }
    online = {broker_id for broker_id, b in brokers.items() if not b["fenced"]}
    return {
        t["name"]: TopicDescription(
            name=t["name"],
            topic_id=uuid_from_str(t["topicId"]),
            is_internal=False,  # the image holds no internal topics
            partitions=tuple(
                PartitionDescription(
                    partition=p["partition"],
                    leader=leaders.get(p["leader"]),
                    leader_epoch=p["leaderEpoch"],
                    replicas=tuple(p["replicas"]),
                    isr=tuple(p["isr"]),
                    offline_replicas=tuple(r for r in p["replicas"] if r not in online),
                )
                for p in t["partitions"]
            ),
        )
        for t in image.get("topics", ())
    }


# -- configs -------------------------------------------------------------------------------


def describe_configs_request(
    resources: Sequence[ConfigResource], keys: Sequence[str] | None = None
) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=tuple(
            DescribeConfigsRequestResource(
                resource_type=int(r.type), resource_name=r.name,
                configuration_keys=None if keys is None else tuple(keys),
            )
            for r in resources
        ),
        include_synonyms=False,
        include_documentation=False,
    )


def read_describe_configs(
    response: DescribeConfigsResponse,
) -> dict[ConfigResource, dict[str, ConfigEntry] | KafkaError]:
    out: dict[ConfigResource, dict[str, ConfigEntry] | KafkaError] = {}
    for result in response.results:
        resource = ConfigResource(ResourceType(result.resource_type), result.resource_name)
        error = _error(result.error_code, result.error_message, f"{resource.type.name} "
                       f"{resource.name}")
        out[resource] = error if error is not None else {
            c.name: ConfigEntry(
                name=c.name, value=c.value, source=ConfigSource.of(c.config_source),
                is_read_only=c.read_only, is_sensitive=c.is_sensitive,
                is_default=c.is_default or c.config_source == ConfigSource.DEFAULT_CONFIG,
            )
            for c in result.configs
        }
    return out


def incremental_alter_configs_request(
    changes: Mapping[ConfigResource, Sequence[AlterConfigOp]], *, validate_only: bool
) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(
        resources=tuple(
            IncrementalAlterConfigsRequestAlterConfigsResource(
                resource_type=int(resource.type),
                resource_name=resource.name,
                configs=tuple(
                    IncrementalAlterConfigsRequestAlterableConfig(
                        name=op.name, config_operation=int(op.op), value=op.value
                    )
                    for op in ops
                ),
            )
            for resource, ops in changes.items()
        ),
        validate_only=validate_only,
    )


def read_incremental_alter_configs(
    response: IncrementalAlterConfigsResponse,
) -> dict[ConfigResource, KafkaError | None]:
    out: dict[ConfigResource, KafkaError | None] = {}
    for r in response.responses:
        resource = ConfigResource(ResourceType(r.resource_type), r.resource_name)
        out[resource] = _error(r.error_code, r.error_message, f"{resource.type.name} {r.resource_name}")
    return out


# -- leaders and reassignments -------------------------------------------------------------


def elect_leaders_request(
    election: ElectionType, partitions: Iterable[TopicPartition] | None, *, timeout_ms: int
) -> ElectLeadersRequest:
    return ElectLeadersRequest(
        election_type=int(election),
        topic_partitions=None if partitions is None else tuple(
            ElectLeadersRequestTopicPartitions(topic=topic, partitions=tuple(parts))
            for topic, parts in _by_topic(partitions).items()
        ),
        timeout_ms=timeout_ms,
    )


def read_elect_leaders(response: ElectLeadersResponse) -> dict[TopicPartition, KafkaError | None]:
    if response.error_code != Errors.NONE:
        raise error_from_code(response.error_code, None, context="ElectLeaders")
    return {
        TopicPartition(t.topic, p.partition_id): _error(
            p.error_code, p.error_message, f"{t.topic}-{p.partition_id}"
        )
        for t in response.replica_election_results
        for p in t.partition_result
    }


def alter_reassignments_request(
    reassignments: Mapping[TopicPartition, Sequence[int] | None], *, timeout_ms: int
) -> AlterPartitionReassignmentsRequest:
    by_topic: dict[str, list[AlterPartitionReassignmentsRequestReassignablePartition]] = {}
    for tp, replicas in reassignments.items():
        by_topic.setdefault(tp.topic, []).append(
            AlterPartitionReassignmentsRequestReassignablePartition(
                partition_index=tp.partition,
                replicas=None if replicas is None else tuple(replicas),
            )
        )
    return AlterPartitionReassignmentsRequest(
        timeout_ms=timeout_ms,
        topics=tuple(
            AlterPartitionReassignmentsRequestReassignableTopic(name=t, partitions=tuple(parts))
            for t, parts in by_topic.items()
        ),
    )


def read_alter_reassignments(
    response: AlterPartitionReassignmentsResponse,
) -> dict[TopicPartition, KafkaError | None]:
    if response.error_code != Errors.NONE:
        raise error_from_code(
            response.error_code, response.error_message, context="AlterPartitionReassignments"
        )
    return {
        TopicPartition(t.name, p.partition_index): _error(
            p.error_code, p.error_message, f"{t.name}-{p.partition_index}"
        )
        for t in response.responses
        for p in t.partitions
    }


def list_reassignments_request(
    partitions: Iterable[TopicPartition] | None, *, timeout_ms: int
) -> ListPartitionReassignmentsRequest:
    return ListPartitionReassignmentsRequest(
        timeout_ms=timeout_ms,
        topics=None if partitions is None else tuple(
            ListPartitionReassignmentsRequestTopics(name=t, partition_indexes=tuple(parts))
            for t, parts in _by_topic(partitions).items()
        ),
    )


def read_list_reassignments(
    response: ListPartitionReassignmentsResponse,
) -> dict[TopicPartition, PartitionReassignment]:
    if response.error_code != Errors.NONE:
        raise error_from_code(
            response.error_code, response.error_message, context="ListPartitionReassignments"
        )
    return {
        TopicPartition(t.name, p.partition_index): PartitionReassignment(
            replicas=tuple(p.replicas),
            adding_replicas=tuple(p.adding_replicas),
            removing_replicas=tuple(p.removing_replicas),
        )
        for t in response.topics
        for p in t.partitions
    }


# -- records and log directories --------------------------------------------------------


def delete_records_request(
    offsets: Mapping[TopicPartition, int], *, timeout_ms: int
) -> DeleteRecordsRequest:
    """Move each partition's log start offset up to ``offsets`` (-1: the high watermark)."""
    by_topic: dict[str, list[DeleteRecordsRequestPartition]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            DeleteRecordsRequestPartition(partition_index=tp.partition, offset=offset)
        )
    return DeleteRecordsRequest(
        topics=tuple(
            DeleteRecordsRequestTopic(name=t, partitions=tuple(parts))
            for t, parts in by_topic.items()
        ),
        timeout_ms=timeout_ms,
    )


def read_delete_records(response: DeleteRecordsResponse) -> dict[TopicPartition, tuple[Errors, int]]:
    """Each partition's error and new low watermark (log start offset)."""
    return {
        TopicPartition(t.name, p.partition_index): (Errors.from_code(p.error_code), p.low_watermark)
        for t in response.topics
        for p in t.partitions
    }


def read_log_dirs(response: DescribeLogDirsResponse) -> dict[str, LogDirDescription]:
    """A DescribeLogDirs answer: each log directory of the broker, by path."""
    top = response.error_code
    if top != Errors.NONE:
        raise error_from_code(top, None, context="DescribeLogDirs")
    out = {}
    for result in response.results:
        error = Errors.from_code(result.error_code)
        out[result.log_dir] = LogDirDescription(
            path=result.log_dir,
            error=None if error is Errors.NONE else error.name,
            replicas={
                (t.name, p.partition_index): ReplicaLogInfo(
                    size=p.partition_size, offset_lag=p.offset_lag, is_future=p.is_future_key
                )
                for t in result.topics
                for p in t.partitions
            },
            total_bytes=result.total_bytes,
            usable_bytes=result.usable_bytes,
        )
    return out
